"""Where the dashboard lives, for the ``streamlit.testing`` tests.

Streamlit puts ``app/`` on ``sys.path`` when it runs ``app/Home.py``; AppTest runs the
scripts in this process, so importing this module does the same for the pages' imports.
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path

APP_DIR = Path(__file__).resolve().parents[2] / "app"
if str(APP_DIR) not in sys.path:
    sys.path.insert(0, str(APP_DIR))

HOME = APP_DIR / "Home.py"
#: Seconds one script run may take; generous, since two cores are shared.
RUN_TIMEOUT = 60


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
