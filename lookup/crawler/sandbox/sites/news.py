"""The news host: near-duplicate stories, session ids in URLs, and soft 404s.

Every story is served four ways that differ only in noise — a live timestamp, an
advert, a session id in the path — plus links carrying a random ``sessionid`` query;
stories that are gone answer ``200 OK`` saying so (soft 404s). The front page links the
top story's live and sponsored editions right beside it, as news front pages do, so a
crawl meets a near-duplicate within its first few pages of the host.
"""

from __future__ import annotations

import hashlib
import random
import re
import threading
from datetime import UTC, datetime
from typing import Any

from lookup.crawler.sandbox import content
from lookup.crawler.sandbox.sites.base import (
    NOT_FOUND,
    World,
    esc,
    html_response,
    page,
    text_response,
)
from lookup.crawler.sandbox.web import Request, Response

__all__ = ["ADVERT", "NewsSite"]


def _token(*parts: object, n: int = 12) -> str:
    """A short hex token, the same for the same parts (stable session ids)."""
    return hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()[:n]


ADVERT = (
    "Advertisement: upgrade to the sandbox premium plan today and get two months "
    "free, unlimited downloads and priority support."
)


class NewsSite:
    """Stories from module docstrings, each served four near-identical ways."""

    #: Dead links on the front page: stories that are gone, answered "200 OK, not found".
    ARCHIVE = ("budget-talks-collapse-2019", "tram-line-opening-2021")

    def __init__(self, world: World) -> None:
        self.world = world
        self.stories = content.stories(world.config.stories)
        self.by_slug = {s.slug: s for s in self.stories}
        self._rng = random.Random(world.config.seed)
        self._rng_lock = threading.Lock()

    def _sid(self) -> str:
        with self._rng_lock:
            return f"{self._rng.getrandbits(128):032x}"

    @staticmethod
    def session_token(slug: str) -> str:
        return _token("news-session", slug)

    def _story(self, story: Any, extra: str = "", advert: bool = False) -> str:
        paras = [f"<p>{esc(p)}</p>" for p in story.paragraphs]
        if advert:
            paras.insert(1, f'<p class="ad">{esc(ADVERT)}</p>')
        nav = (
            f'<a href="/live/{story.slug}.html">live coverage</a> '
            f'<a href="/promo/{story.slug}.html">sponsored edition</a> '
            f'<a href="/s/{self.session_token(story.slug)}/{story.slug}.html">continue reading</a> '
            f'<a href="/story/{story.slug}.html?sessionid={self._sid()}">permalink</a>'
        )
        main = f"<h1>{esc(story.title)}</h1>{extra}{''.join(paras)}"
        return page(story.title, main, nav=nav)

    @staticmethod
    def _top(story: Any) -> str:
        """The top story's other editions, linked beside it as front pages do."""
        return (
            f' — <a href="/live/{story.slug}.html">live coverage</a> · '
            f'<a href="/promo/{story.slug}.html">sponsored edition</a>'
        )

    def handle(self, req: Request) -> Response:
        p = req.path
        if p == "/robots.txt":
            return text_response("User-agent: *\nAllow: /\n")
        if p == "/":
            items = "".join(
                f'<li><a href="/story/{s.slug}.html?sessionid={self._sid()}'
                f'&amp;utm_source=frontpage">{esc(s.title)}</a>'
                f"{self._top(s) if i == 0 else ''}</li>"
                for i, s in enumerate(self.stories)
            )
            archive = "".join(
                f'<li><a href="/story/{slug}.html">{esc(slug.replace("-", " "))}</a></li>'
                for slug in self.ARCHIVE
            )
            main = (
                f"<h1>Today's stories</h1><ul>{items}</ul>"
                f"<h2>From the archive</h2><ul>{archive}</ul>"
            )
            return html_response(page("News", main))
        m = re.fullmatch(r"/(story|live|promo)/([\w-]+)\.html", p) or re.fullmatch(
            r"/s/(\w+)/([\w-]+)\.html", p
        )
        if m and m.group(1) in ("story", "live", "promo") and m.group(2) not in self.by_slug:
            return self.missing_story(m.group(2))
        if not m or m.group(2) not in self.by_slug:
            return NOT_FOUND
        story = self.by_slug[m.group(2)]
        kind = m.group(1)
        if kind == "story":
            return html_response(self._story(story))
        if kind == "live":
            stamp = datetime.now(UTC).strftime("%A %d %B %Y, %H:%M:%S UTC")
            return html_response(self._story(story, f"<p>Last updated {stamp}</p>"))
        if kind == "promo":
            return html_response(self._story(story, advert=True))
        if kind != self.session_token(story.slug):
            return NOT_FOUND
        return html_response(self._story(story, f"<p>Welcome back, session {kind}.</p>"))

    @staticmethod
    def missing_story(slug: str) -> Response:
        """A story that is gone: 200 OK saying so, and echoing what was asked for."""
        words = esc(slug.replace("-", " "))
        main = (
            "<h1>Story not found</h1>"
            f"<p>We looked everywhere for “{words}”, but it is not in our archive. It may "
            "have been retracted, renamed or never published.</p>"
            '<p>Try <a href="/">today\'s stories</a> instead.</p>'
        )
        return html_response(page("Story not found — Sandbox News", main), soft_404=True)

    def soft_404s(self) -> list[str]:
        return [self.world.url("news", f"/story/{slug}.html") for slug in self.ARCHIVE]

    def clusters(self) -> list[dict[str, Any]]:
        w = self.world
        out = []
        for s in self.stories:
            members = [
                {"url": w.url("news", f"/story/{s.slug}.html"), "reason": "original"},
                {"url": w.url("news", f"/live/{s.slug}.html"), "reason": "timestamp"},
                {"url": w.url("news", f"/promo/{s.slug}.html"), "reason": "advert"},
                {
                    "url": w.url("news", f"/s/{self.session_token(s.slug)}/{s.slug}.html"),
                    "reason": "session-id",
                },
            ]
            out.append({"kind": "near", "members": members})
        return out
