"""Start the real API and dashboard on free loopback ports and drive Debian's Chromium.

Used by ``tests/browser/conftest.py`` and by ``scripts/screenshot.py``, so the
tests and the README's screenshot see the same thing.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import httpx

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page, Playwright

REPO_ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
#: How long a service may take to answer its health check (two cores, shared).
START_TIMEOUT_S = 60.0


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now (:func:`lookup.kit.ports.free_port`)."""
    from lookup.kit.ports import free_port as pick

    return pick()


@dataclass
class Service:
    """A child process serving HTTP on ``url``, with its output captured in ``log_path``."""

    name: str
    url: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def log_tail(self, lines: int = 40) -> str:
        """The last lines the process printed, for failure messages."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def wait_healthy(self, health_path: str, timeout: float = START_TIMEOUT_S) -> None:
        """Poll ``health_path`` until it answers 200; fail early if the process exits."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"{self.name} exited with {self.process.returncode} before answering:\n"
                    + self.log_tail()
                )
            try:
                if httpx.get(self.url + health_path, timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise TimeoutError(
            f"{self.name} did not answer {health_path} within {timeout:.0f} s:\n" + self.log_tail()
        )

    def stop(self, grace: float = 10.0) -> None:
        """Terminate, then kill if it does not exit within ``grace`` seconds."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=grace)


def _spawn(
    name: str, argv: Sequence[str], url: str, log_dir: Path, env: Mapping[str, str]
) -> Service:
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"{name}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            list(argv), cwd=REPO_ROOT, env=dict(env), stdout=log, stderr=subprocess.STDOUT
        )
    return Service(name, url, process, log_path)


def port_free(port: int) -> bool:
    """Whether ``port`` on 127.0.0.1 can be bound right now."""
    from lookup.kit.ports import port_free as binds

    return binds(port)


def start_api(data_dir: Path, log_dir: Path, port: int | None = None) -> Service:
    """``lookup serve`` over ``data_dir`` on ``port`` (default: any free one), answering."""
    port = port or free_port()
    url = f"http://127.0.0.1:{port}"
    # The shortener flow shortens the dashboard's own loopback pages: the named allowance
    # (loopback destinations are refused unless a setting opens them).
    env = dict(
        os.environ,
        LOOKUP_DATA_DIR=str(data_dir),
        LOOKUP_PUBLIC_URL=url,
        LOOKUP_SHORTENER_ALLOWED_RANGES="127.0.0.0/8",
    )
    argv = [
        sys.executable, "-m", "lookup.cli", "serve",
        "--host", "127.0.0.1", "--port", str(port), "--data-dir", str(data_dir),
    ]  # fmt: skip
    service = _spawn("api", argv, url, log_dir, env)
    try:
        service.wait_healthy("/healthz")
    except BaseException:
        service.stop()
        raise
    return service


def start_dashboard(
    api_url: str, data_dir: Path, log_dir: Path, extra_env: Mapping[str, str] | None = None
) -> Service:
    """``streamlit run app/Home.py`` on a free port, talking to ``api_url``.

    ``extra_env`` adds environment variables (e.g. ``LOOKUP_SANDBOX_URL``).
    """
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = dict(os.environ, LOOKUP_API_URL=api_url, LOOKUP_DATA_DIR=str(data_dir))
    env.update(extra_env or {})
    argv = [
        sys.executable, "-m", "streamlit", "run", str(REPO_ROOT / "app" / "Home.py"),
        "--server.port", str(port),
        "--server.address", "127.0.0.1",
        "--server.headless", "true",
        "--server.fileWatcherType", "none",
        "--browser.gatherUsageStats", "false",
    ]  # fmt: skip
    service = _spawn("dashboard", argv, url, log_dir, env)
    try:
        service.wait_healthy("/_stcore/health")
    except BaseException:
        service.stop()
        raise
    return service


@contextmanager
def running_stack(
    workdir: Path,
    api_port: int | None = None,
    dashboard_env: Mapping[str, str] | None = None,
) -> Iterator[tuple[Service, Service]]:
    """The API and the dashboard, both running, stopped (dashboard first) on exit.

    ``dashboard_env`` adds environment variables for the dashboard only.
    """
    data_dir = workdir / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    logs = workdir / "logs"
    api = start_api(data_dir, logs, api_port)
    try:
        dashboard = start_dashboard(api.url, data_dir, logs, dashboard_env)
        try:
            yield api, dashboard
        finally:
            dashboard.stop()
    finally:
        api.stop()


def launch_chromium(playwright: Playwright) -> Browser:
    """Debian's Chromium, headless, without sandbox or background traffic."""
    return playwright.chromium.launch(
        executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
    )


#: Text that is on screen once each page has rendered.
READY_TEXT = {"": "The four systems", "capacity": "How each figure is worked out"}


def take_screenshot(
    page: Page, base: str, path: str, out: Path, *, full_page: bool = False
) -> None:
    """Open the dashboard page ``path`` ('' is Home), wait until its first script run has
    ended and its pictures are drawn, and save a PNG at ``out``."""
    from playwright.sync_api import expect

    page.goto(f"{base.rstrip('/')}/{path}")
    ready = READY_TEXT.get(path)
    if ready:
        expect(page.get_by_text(ready).first).to_be_visible(timeout=30_000)
    else:  # any other page: its title is drawn and its first script run has ended
        expect(page.locator("h1").first).to_be_visible(timeout=30_000)
    app = page.locator('[data-testid="stApp"]')
    expect(app).to_have_attribute("data-test-script-state", "notRunning", timeout=30_000)
    if path == "":
        pictures = page.locator('[data-testid="stGraphVizChart"] svg')
        expect(pictures).to_have_count(4, timeout=30_000)
    if path == "capacity":
        expect(page.locator(".js-plotly-plot").first).to_be_visible(timeout=30_000)
    # Wait for the script run to finish (the "Running..." widget goes away).
    expect(page.locator('[data-testid="stStatusWidget"]')).to_have_count(0, timeout=30_000)
    out.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(out), full_page=full_page)


def settled(page: Page, rounds: int = 2) -> None:
    """Wait until the page's script run is over, and the runs it set off too: a map that
    loads reports its view and a chart reports back, each running the script once more,
    and a click made while such a run is starting can be lost. On a page with a map, its
    Leaflet pane is drawn first (then it has reported, if it needs to)."""
    from playwright.sync_api import expect

    maps = page.locator('iframe[title*="streamlit_folium"]')
    for i in range(maps.count()):
        pane = maps.nth(i).content_frame.locator(".leaflet-container")
        expect(pane).to_be_visible(timeout=60_000)
    in_page = page.locator('[data-testid="places-map"]')  # app/placesleaflet.py
    for i in range(in_page.count()):  # drawn, and what it shows searched by the page
        expect(in_page.nth(i)).to_have_class(re.compile("leaflet-container"), timeout=60_000)
        expect(in_page.nth(i)).to_have_attribute("data-view", "searched", timeout=60_000)
    for _ in range(rounds):
        time.sleep(0.5)
        app = page.locator('[data-testid="stApp"]')
        expect(app).to_have_attribute("data-test-script-state", "notRunning", timeout=60_000)
        expect(page.locator('[data-testid="stStatusWidget"]')).to_have_count(0, timeout=60_000)
