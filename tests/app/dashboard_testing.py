"""Where the dashboard lives, for the ``streamlit.testing`` tests.

Streamlit puts ``app/`` on ``sys.path`` when it runs ``app/Home.py``; AppTest runs the
scripts in this process, so importing this module does the same for the pages' imports.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from streamlit.testing.v1 import AppTest

from tests.conftest import free_port

__all__ = [
    "APP_DIR",
    "HOME",
    "RUN_TIMEOUT",
    "free_port",
    "lab",
    "metric_value",
    "ok",
    "open_page",
    "page_text",
]

APP_DIR = Path(__file__).resolve().parents[2] / "app"
if str(APP_DIR) not in sys.path:
    sys.path.insert(0, str(APP_DIR))

HOME = APP_DIR / "Home.py"
#: Seconds one script run may take; generous, since two cores are shared.
RUN_TIMEOUT = 60


def lab(kind: str, key: str | None = None) -> Any:
    """The lab ``(kind, key)`` the dashboard's supervisor runs over ``$LOOKUP_DATA_DIR`` (what
    a page started), or ``None``."""
    from common import labs

    return labs().get(kind, key)


def ok(at: AppTest) -> AppTest:
    """``at`` after checking its last run raised nothing (the exceptions shown if it did)."""
    assert not at.exception, [e.value for e in at.exception]
    return at


def open_page(page: str) -> AppTest:
    """The dashboard's home page run, then ``page`` reached through its navigation."""
    at = AppTest.from_file(HOME, default_timeout=RUN_TIMEOUT).run()
    return ok(at.switch_page(page).run())


def metric_value(at: AppTest, label: str) -> str:
    """The value shown by the one metric labelled ``label``."""
    found = [m.value for m in at.metric if m.label == label]
    assert len(found) == 1, (label, [m.label for m in at.metric])
    return str(found[0])


def page_text(at: AppTest, *, with_code: bool = False) -> str:
    """What the last run wrote as markdown, captions, titles, subheaders and alerts (and
    code blocks ``with_code``), in one string."""
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption]
    parts += [t.value for t in at.title] + [h.value for h in at.subheader]
    for kind in ("error", "warning", "info", "success"):
        parts += [e.value for e in getattr(at, kind)]
    if with_code:
        parts += [c.value for c in at.code]
    return "\n".join(parts)
