"""The calendar host: crawler traps — an infinite calendar, a relative-link loop, soft 404s."""

from __future__ import annotations

import re

from lookup.crawler.sandbox.sites.base import (
    ALLOW_ALL,
    World,
    esc,
    html_response,
    page,
    text_response,
    zen_lines,
)
from lookup.crawler.sandbox.web import Request, Response

__all__ = ["MONTHS", "CalendarSite"]


MONTHS = (
    "January February March April May June July August September October November December"
).split()


class CalendarSite:
    """Month pages that link forever, a guide that links to itself one level deeper."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.zen = zen_lines()

    def month(self, year: int, month: int) -> str:
        prev_y, prev_m = (year, month - 1) if month > 1 else (year - 1, 12)
        next_y, next_m = (year, month + 1) if month < 12 else (year + 1, 1)
        event = self.zen[(year * 12 + month) % len(self.zen)]
        nav = (
            f'<a href="/cal/{prev_y}/{prev_m:02d}.html">previous month</a> '
            f'<a href="/cal/{next_y}/{next_m:02d}.html">next month</a> '
            f'<a href="/cal/{year + 1}/{month:02d}.html">next year</a>'
        )
        main = (
            f"<h1>{MONTHS[month - 1]} {year}</h1>"
            f'<p>Meetup: <a href="/events/{year}-{month:02d}-meetup">{esc(event)}</a></p>'
        )
        return page(f"{MONTHS[month - 1]} {year}", main, nav=nav)

    def guide(self, depth: int) -> str:
        main = (
            f"<h1>Guide</h1><p>{esc(self.zen[3])}</p>"
            '<p><a href="guide/">Read the guide</a> '
            '<a href="../guide/intro/">Introduction</a></p>'
        )
        return page("Guide", main)

    def soft_404(self, path: str) -> str:
        slug = path.rstrip("/").rsplit("/", 1)[-1]
        suggestions = "".join(
            f'<a href="/events/{esc(slug)}-{i}">{esc(slug)} {i}</a> ' for i in (1, 2)
        )
        main = (
            "<h1>Sorry, we couldn't find that page</h1>"
            f"<p>Nothing on the calendar matches <code>{esc(path)}</code>. The event you are "
            "looking for does not exist or has moved.</p>"
        )
        return page("Events", main + f"<aside>Did you mean: {suggestions}</aside>")

    def handle(self, req: Request) -> Response:
        p = req.path
        y0 = self.world.config.calendar_year
        if p == "/robots.txt":
            return text_response(ALLOW_ALL)
        if p == "/":
            main = (
                "<h1>Community calendar</h1>"
                f'<p><a href="/cal/{y0}/11.html">This month</a> '
                '<a href="/guide/">The guide</a> '
                '<a href="/events/launch-party">Launch party</a></p>'
            )
            return html_response(page("Calendar", main))
        m = re.fullmatch(r"/cal/(\d{1,4})/(\d{2})\.html", p)
        if m and 1 <= int(m.group(1)) <= 9999 and 1 <= int(m.group(2)) <= 12:
            return html_response(self.month(int(m.group(1)), int(m.group(2))))
        if re.fullmatch(r"/guide/((guide|intro)/)*", p):
            return html_response(self.guide(p.count("/")))
        # Everything else, /events/... included: 200 OK with "not found" content.
        return html_response(self.soft_404(p), soft_404=True)

    def traps(self) -> list[dict[str, str]]:
        h = self.world.names["calendar"]
        return [
            {"host": h, "kind": "infinite-calendar", "prefix": "/cal/"},
            {"host": h, "kind": "relative-link-loop", "prefix": "/guide/"},
            {"host": h, "kind": "soft-404", "prefix": "/events/"},
        ]

    def soft_404s(self) -> list[str]:
        return [self.world.url("calendar", "/events/launch-party")]
