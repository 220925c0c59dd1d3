"""Hosts under load: one answers slowly and has a page that stalls; one answers 429 and 503."""

from __future__ import annotations

import re
import threading

from lookup.crawler.sandbox.sites.base import (
    ALLOW_ALL,
    NOT_FOUND,
    World,
    esc,
    html_response,
    page,
    text_response,
    zen_lines,
)
from lookup.crawler.sandbox.web import Request, Response

__all__ = ["BusySite", "SlowSite"]


class SlowSite:
    """Every answer waits; ``/stall.html`` waits longer than the crawler's timeout."""

    PAGES = 5

    def __init__(self, world: World) -> None:
        self.world = world
        self.zen = zen_lines()

    def handle(self, req: Request) -> Response:
        c = self.world.config
        p = req.path
        if p == "/robots.txt":
            return text_response(ALLOW_ALL, delay=c.slow_seconds)
        if p == "/stall.html":
            return html_response(page("Stall", "<h1>Finally</h1>"), delay=c.hang_seconds)
        if p == "/":
            items = "".join(
                f'<li><a href="/page/{i}.html">page {i}</a></li>' for i in range(1, self.PAGES + 1)
            )
            main = f'<h1>Slow site</h1><ul>{items}<li><a href="/stall.html">stall</a></li></ul>'
            return html_response(page("Slow", main), delay=c.slow_seconds)
        m = re.fullmatch(r"/page/(\d+)\.html", p)
        if m and 1 <= int(m.group(1)) <= self.PAGES:
            i = int(m.group(1))
            main = f"<h1>Slow page {i}</h1><p>{esc(self.zen[i])}</p><p>{esc(self.zen[i + 5])}</p>"
            return html_response(page(f"Slow {i}", main), delay=c.slow_seconds)
        return NOT_FOUND


class BusySite:
    """Answers 429 twice, then 503, then mostly 200 (every 7th request another 503)."""

    PAGES = 6

    def __init__(self, world: World) -> None:
        self.world = world
        self.count = 0
        self._lock = threading.Lock()
        self.zen = zen_lines()

    def handle(self, req: Request) -> Response:
        if req.path == "/robots.txt":
            return text_response(ALLOW_ALL)
        with self._lock:
            self.count += 1
            n = self.count
        retry = [("Retry-After", str(self.world.config.retry_after))]
        if n <= 2:
            return text_response("Too many requests", 429, headers=retry)
        if n == 3 or n % 7 == 0:
            return text_response("Service unavailable", 503, headers=retry)
        if req.path == "/":
            items = "".join(
                f'<li><a href="/item/{i}.html">item {i}</a></li>' for i in range(1, self.PAGES + 1)
            )
            return html_response(page("Busy", f"<h1>Busy site</h1><ul>{items}</ul>"))
        m = re.fullmatch(r"/item/(\d+)\.html", req.path)
        if m and 1 <= int(m.group(1)) <= self.PAGES:
            i = int(m.group(1))
            main = f"<h1>Item {i}</h1><p>{esc(self.zen[i + 10])}</p>"
            return html_response(page(f"Item {i}", main))
        return NOT_FOUND
