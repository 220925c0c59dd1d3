"""Real-browser fixtures: the real API and dashboard on free ports, and Debian's Chromium.

The services start once per session (Streamlit takes a few seconds to boot on two
cores) and are stopped cleanly — terminate, then kill — when the session ends.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# The suite imports in importlib mode, which puts no test folder on sys.path.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from browser_harness import CHROMIUM, Service, launch_chromium, running_stack  # noqa: E402


@pytest.fixture(scope="session")
def chromium_path() -> Path:
    """Debian's Chromium; the browser tests skip only when it is not installed (never in CI)."""
    if not CHROMIUM.exists():
        if os.environ.get("LOOKUP_REQUIRE_BROWSER"):
            pytest.fail(f"{CHROMIUM} is missing and LOOKUP_REQUIRE_BROWSER is set (.ci/run)")
        pytest.skip(f"{CHROMIUM} is missing; install it with `apt-get install -y chromium`")
    return CHROMIUM


@pytest.fixture(scope="session")
def stack(
    chromium_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Service, Service]]:
    """The API and the dashboard, running for the whole session (only if a browser exists)."""
    with running_stack(tmp_path_factory.mktemp("browser-stack")) as services:
        yield services


@pytest.fixture(scope="session")
def api(stack: tuple[Service, Service]) -> Service:
    """The real ``lookup serve`` process."""
    return stack[0]


@pytest.fixture(scope="session")
def dashboard(stack: tuple[Service, Service]) -> Service:
    """The real ``streamlit run app/Home.py`` process, talking to :func:`api`."""
    return stack[1]


@pytest.fixture(scope="module")
def browser(chromium_path: Path):  # type: ignore[no-untyped-def]
    """One headless Chromium per test module.

    Playwright's sync API keeps an event loop running in the main thread while it is
    open; scoped to a module, it is closed before any other module's test runs, so a
    test that calls ``asyncio.run`` may share a pytest-xdist worker with the browser.
    """
    from playwright.sync_api import expect, sync_playwright

    # Streamlit renders after its websocket connects and the script runs; on two busy
    # cores that can take longer than Playwright's 5 s default for assertions.
    expect.set_options(timeout=20_000)
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(browser):  # type: ignore[no-untyped-def]
    """A fresh page at 1400x900 in its own context; closed after the test."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.set_default_timeout(20_000)
    page = context.new_page()
    try:
        yield page
    finally:
        context.close()
