"""Fixtures for the ``streamlit.testing`` tests of the dashboard: API servers, dead or alive."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import uvicorn
from starlette.types import ASGIApp

# The suite imports in importlib mode, which puts no test folder on sys.path.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from dashboard_testing import free_port  # noqa: E402


@pytest.fixture
def serve_asgi() -> Iterator[Callable[[ASGIApp], str]]:
    """Serve ASGI apps on free loopback ports in threads; yields ``serve(app) -> url``."""
    servers: list[tuple[uvicorn.Server, threading.Thread]] = []

    def serve(app: ASGIApp) -> str:
        port = free_port()
        server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
        )
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 30
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the test server on port {port} did not start")
            time.sleep(0.02)
        servers.append((server, thread))
        return f"http://127.0.0.1:{port}"

    yield serve
    for server, thread in servers:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture
def threaded_api(serve_asgi: Callable[[ASGIApp], str], tmp_path: Path) -> str:
    """The real API (``lookup.server.create_app``) on a free port; yields its base URL."""
    from lookup.server import create_app

    return serve_asgi(create_app(tmp_path / "data"))


@pytest.fixture
def api_at(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    """Point the dashboard at an API address (``LOOKUP_API_URL``) for this test."""

    def point(url: str) -> None:
        monkeypatch.setenv("LOOKUP_API_URL", url)

    return point


@pytest.fixture
def nothing_listening() -> str:
    """An address on loopback where nothing listens (a dead API)."""
    return f"http://127.0.0.1:{free_port()}"
