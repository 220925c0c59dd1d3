"""The render tier's browser: Debian's Chromium, headless, driven by Playwright, offline.

:class:`BrowserRenderer` knows browsers, not crawling: the crawl loop hands it a page's
cheap-fetch answer and a ``fetch(url, method)`` callback (politeness, robots.txt and the
host rule live there, in :mod:`lookup.crawler.render`). Every request of the page is
intercepted (``context.route``): the document is answered from the cheap fetch, every
other request by the callback or refused. The browser itself reaches nothing —
``--host-resolver-rules`` maps every name to nowhere, so a WebSocket, a prefetch or any
request the interception might miss fails instead of leaving the crawler's control.

The browser is started once per crawl on the first render and reused; each render gets
a fresh context (no cookies, storage or service workers carried between pages). No
browser is ever downloaded: without the executable, rendering is unavailable.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lookup.crawler.fetcher import FetchResult

__all__ = ["CHROMIUM_ARGS", "BrowserRenderer", "RenderFailed", "RenderUnavailable", "Snapshot"]

log = logging.getLogger("lookup.crawler")

#: Headless Chromium without sandbox, background traffic or a resolver of its own.
CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--host-resolver-rules=MAP * ~NOTFOUND",
)
#: Headers that described the transfer, not the body handed back (httpx decoded it).
_TRANSFER_HEADERS = frozenset({"content-encoding", "transfer-encoding", "content-length"})

Fetch = Callable[[str, str], Awaitable[FetchResult | None]]


class RenderUnavailable(Exception):
    """No browser can run here (no executable, no Playwright, a launch that failed)."""


class RenderFailed(Exception):
    """One page's render did not finish (timeout, a crashed page)."""


@dataclass(frozen=True)
class Snapshot:
    """What a render produced: the DOM as HTML, how long it took, what it asked for."""

    html: str
    seconds: float
    requests: int  # requests answered by the fetch callback (the document aside)
    refused: int  # requests refused (the callback said no, or not GET)


def _headers(pairs: list[tuple[str, str]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in pairs:
        if k.lower() not in _TRANSFER_HEADERS:
            out[k] = f"{out[k]}, {v}" if k in out else v
    return out


class BrowserRenderer:
    """One headless Chromium for a crawl; :meth:`render` one page at a time per caller."""

    def __init__(
        self, executable: Path, user_agent: str, timeout: float, max_requests: int = 20
    ) -> None:
        self.executable = executable
        self.user_agent = user_agent
        self.timeout = timeout
        self.max_requests = max_requests
        self._playwright: Any = None
        self._browser: Any = None

    async def start(self) -> None:
        """Launch the browser; :class:`RenderUnavailable` says why it cannot run."""
        if not self.executable.is_file() or not os.access(self.executable, os.X_OK):
            raise RenderUnavailable(f"no browser at {self.executable}")
        try:
            from playwright.async_api import Error, async_playwright
        except ImportError as exc:
            raise RenderUnavailable(f"Playwright is not installed ({exc})") from None
        try:
            self._playwright = await async_playwright().start()
            self._browser = await self._playwright.chromium.launch(
                executable_path=str(self.executable), headless=True, args=list(CHROMIUM_ARGS)
            )
        except (Error, OSError) as exc:
            await self.close()
            raise RenderUnavailable(f"{self.executable} did not start: {exc}") from None

    async def close(self) -> None:
        """Stop the browser and Playwright's driver."""
        browser, pw = self._browser, self._playwright
        self._browser = self._playwright = None
        with contextlib.suppress(Exception):  # already gone: nothing to let go
            if browser is not None:
                await browser.close()
        with contextlib.suppress(Exception):
            if pw is not None:
                await pw.stop()

    async def render(self, url: str, document: FetchResult, fetch: Fetch) -> Snapshot:
        """Load ``url`` from ``document``, let its scripts run, return the DOM."""
        from playwright.async_api import Error, Route

        if self._browser is None:
            raise RenderUnavailable("the browser is not running")
        t0 = time.monotonic()
        made = refused = 0
        served = False

        async def on_route(route: Route) -> None:
            nonlocal made, refused, served
            req = route.request
            log.debug("render of %s asks for %s %s", url, req.method, req.url)
            with contextlib.suppress(Error):  # the page went away mid-request
                if req.is_navigation_request() and not served:  # the page itself: goto(url)
                    served = True
                    await route.fulfill(status=200, headers=_headers(document.raw_headers),
                                        body=document.body)  # fmt: skip
                    return
                if req.is_navigation_request() or made >= self.max_requests:
                    refused += 1  # leaving the page, or past the render's request cap
                    await route.abort("blockedbyclient")
                    return
                answer = await fetch(req.url, req.method)
                if answer is None or answer.status is None:
                    refused += answer is None
                    await route.abort("blockedbyclient" if answer is None else "failed")
                    return
                made += 1
                await route.fulfill(status=answer.status, headers=_headers(answer.raw_headers),
                                    body=answer.body)  # fmt: skip

        context = await self._browser.new_context(
            user_agent=self.user_agent, service_workers="block", java_script_enabled=True
        )
        try:
            await context.route("**/*", on_route)
            page = await context.new_page()
            deadline = t0 + self.timeout
            try:
                await page.goto(url, wait_until="load", timeout=self.timeout * 1000)
            except Error as exc:
                raise RenderFailed(f"{url} did not load: {exc}") from None
            left = max(0.0, deadline - time.monotonic())
            with contextlib.suppress(Error):  # still busy at the deadline: take the DOM as is
                await page.wait_for_load_state("networkidle", timeout=left * 1000)
            try:
                html = await page.content()
            except Error as exc:
                raise RenderFailed(f"{url}: no DOM to read: {exc}") from None
        finally:
            with contextlib.suppress(Error):
                await context.close()
        return Snapshot(html, time.monotonic() - t0, made, refused)
