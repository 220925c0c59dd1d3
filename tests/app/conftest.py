"""Fixtures for the ``streamlit.testing`` tests of the dashboard: API servers, dead or alive."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from starlette.types import ASGIApp

from tests.conftest import serve_in_thread

# The suite imports in importlib mode, which puts no test folder on sys.path.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from dashboard_testing import free_port, open_page  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402


@pytest.fixture(autouse=True)
def no_lab_left_behind() -> Iterator[None]:
    """Stop every lab a page started in this test (``lookup.labs``), as the dashboard does
    at exit: no test leaves a server or a fleet running for the next one."""
    yield
    labs = sys.modules.get("lookup.labs.core")
    if labs is not None:
        labs.stop_every_lab()


@pytest.fixture
def serve_asgi() -> Iterator[Callable[[ASGIApp], str]]:
    """Serve ASGI apps on free loopback ports in threads; yields ``serve(app) -> url``."""
    with ExitStack() as servers:

        def serve(app: ASGIApp) -> str:
            return servers.enter_context(serve_in_thread(app))

        yield serve


@pytest.fixture
def threaded_api(
    serve_asgi: Callable[[ASGIApp], str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> str:
    """The real API (``lookup.server.create_app``) on a free port; yields its base URL.

    The dashboard shares its data directory (``LOOKUP_DATA_DIR``), as under ``make run``:
    that is where it finds the admin token of the management calls."""
    from lookup.server import create_app

    monkeypatch.setenv("LOOKUP_DATA_DIR", str(tmp_path / "data"))
    # The pages shorten the sandbox web's loopback pages: the named allowance.
    monkeypatch.setenv("LOOKUP_SHORTENER_ALLOWED_RANGES", "127.0.0.0/8")
    return serve_asgi(create_app(tmp_path / "data"))


@pytest.fixture
def api_at(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    """Point the dashboard at an API address (``LOOKUP_API_URL``) for this test."""

    def point(url: str) -> None:
        monkeypatch.setenv("LOOKUP_API_URL", url)

    return point


@pytest.fixture
def visit(api_at: Callable[[str], None]) -> Callable[[str, str], AppTest]:
    """``visit(page, api_url)``: the dashboard pointed at ``api_url`` (for this test), its
    ``page`` reached through the navigation and drawn without an exception."""

    def open_at(page: str, api_url: str) -> AppTest:
        api_at(api_url)
        return open_page(page)

    return open_at


@pytest.fixture
def nothing_listening() -> str:
    """An address on loopback where nothing listens (a dead API)."""
    return f"http://127.0.0.1:{free_port()}"
