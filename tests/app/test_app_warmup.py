"""The dashboard imports its heavy libraries in the background once per server (issue 24,
item 17: a cold server's first visit paid for them). What it imports must not touch
Streamlit: a component declared outside a script run is never registered, and its frame
answers 404 (the places map did, when the warm-up imported ``streamlit_folium``)."""

from __future__ import annotations

import subprocess
import sys

from dashboard_testing import APP_DIR

CHECK = """
import importlib, sys
sys.path.insert(0, sys.argv[1])
import warmup
before = set(sys.modules)
for name in warmup.HEAVY:
    importlib.import_module(name)
new = set(sys.modules) - before
print(sorted(m for m in new if m.startswith(("streamlit", "searchbox"))))
"""


def test_the_warm_up_imports_nothing_that_declares_a_component() -> None:
    out = subprocess.run([sys.executable, "-c", CHECK, str(APP_DIR)], capture_output=True,
                         text=True, timeout=300, check=True)  # fmt: skip
    assert out.stdout.strip() == "[]", out.stdout
