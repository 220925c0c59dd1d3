"""Two-tier rendering: every page gets the cheap fetch; a page built by its scripts gets a
browser render as well, under the same politeness as any request.

Running a browser costs about ten times the processor time and memory of a plain fetch
(``lookup capacity crawler`` carries the figure), so rendering is a second tier with a
budget, not the default:

1. **Detection on the cheap fetch** (:func:`script_signals`, :func:`render_reason`): a
   200 HTML answer with scripts, little visible text, and either an empty app root
   (``<div id="root"></div>``, ``<app-root>``, ``data-reactroot``) or a large share of its
   bytes in inline scripts is a candidate. The visible-text threshold is the knob.
2. **The render queue** (:class:`PageRendering`, a mixin of the crawl loop): candidates
   wait for one of ``render_workers`` browser pages while the per-crawl
   ``render_budget`` lasts; past it, and when the browser is unavailable or a render
   fails, the page is kept as fetched (counted, never a crash).
3. **Politeness for the render's own requests.** The browser reaches no network: every
   request it makes is intercepted. The document is the cheap fetch's answer (not asked
   again); any other request is **routed through the crawler's fetcher** — only to the
   page's own host, only GET, only if robots.txt allows that URL and no operator block
   covers it, each in the host's turn of the frontier (one request at a time, the host's
   delay after each, recorded in the fetch log as kind ``render``). Requests to other
   hosts, other methods and disallowed URLs are refused and counted; Chromium's resolver
   maps every name to nowhere, so nothing can bypass the interception. Scripts and
   styles are kept for the crawl and reused (an app's bundle is asked for once).
4. **What is kept.** The outcome rules judge the rendered DOM (its text, its links);
   the WARC holds the response as received and the DOM as a ``resource`` record after
   it, which the ``PageFetched`` event (``"rendered": true``) points to.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from selectolax.lexbor import LexborHTMLParser

from lookup.crawler.fetcher import HTML_TYPES, FetchResult, parse_retry_after
from lookup.crawler.output import WarcStore
from lookup.crawler.state import FetchRecord
from lookup.kit.urlnorm import host_of

if TYPE_CHECKING:
    from lookup.crawler.browser import BrowserRenderer
    from lookup.crawler.frontier import FrontierEntry

__all__ = [
    "APP_ROOT_IDS",
    "PageRendering",
    "RenderThreshold",
    "RenderedResult",
    "ScriptSignals",
    "render_reason",
    "script_signals",
]

log = logging.getLogger("lookup.crawler")

#: Element ids the common script frameworks mount their app on.
APP_ROOT_IDS = frozenset(
    {"root", "app", "__next", "__nuxt", "___gatsby", "svelte", "main-app", "app-root", "q-app"}
)
#: Attributes that mark a framework's mount point.
APP_ROOT_ATTRS = ("data-reactroot", "ng-app", "ng-version", "data-v-app")
#: Script types that hold data, not code (JSON-LD describes the page; it builds nothing).
_DATA_SCRIPTS = frozenset({"application/ld+json"})
#: Elements whose text a reader never sees.
_INVISIBLE = ("script", "style", "noscript", "template")


@dataclass(frozen=True)
class ScriptSignals:
    """What the cheap fetch says about how much of a page its scripts build."""

    text_chars: int  # visible text of the body, whitespace collapsed
    html_chars: int
    inline_script_chars: int
    external_scripts: int
    app_root: str | None  # the empty mount point found (``div#root``), if any

    @property
    def scripts(self) -> int:
        """Scripts of any kind (external, or inline with code in them)."""
        return self.external_scripts + (1 if self.inline_script_chars else 0)

    @property
    def script_share(self) -> float:
        """The share of the document's characters inside inline scripts."""
        return self.inline_script_chars / self.html_chars if self.html_chars else 0.0


@dataclass(frozen=True)
class RenderThreshold:
    """When a page is worth a render: the knob with the visible trade (seed 003 §6.5)."""

    text_chars: int = 200  # at most this much visible text (more: the fetch has content)
    script_share: float = 0.5  # or this share of the page in inline scripts (data blobs)


def _visible_text(node: Any) -> str:
    for tag in _INVISIBLE:
        for child in node.css(tag):
            child.decompose()
    return " ".join(node.text(separator=" ").split())


def _empty_root(tree: LexborHTMLParser) -> str | None:
    """The first framework mount point with no visible text in it."""
    candidates = [f"[{attr}]" for attr in APP_ROOT_ATTRS] + ["app-root"]
    for node in tree.css("[id]"):
        ident = (node.attributes.get("id") or "").strip()
        if ident.lower() in APP_ROOT_IDS and not _visible_text(node):
            return f"{node.tag}#{ident}"
    for selector in candidates:
        for node in tree.css(selector):
            if not _visible_text(node):
                return f"{node.tag}{selector if selector.startswith('[') else ''}"
    return None


def script_signals(html: str) -> ScriptSignals:
    """Measure a fetched page: visible text, inline script size, external scripts, app root."""
    tree = LexborHTMLParser(html)
    inline = external = 0
    for node in tree.css("script"):
        kind = (node.attributes.get("type") or "").strip().lower()
        if kind in _DATA_SCRIPTS:
            continue
        if node.attributes.get("src"):
            external += 1
        else:
            inline += len((node.text() or "").strip())
    root = _empty_root(tree)
    body = tree.body
    text = _visible_text(body) if body is not None else ""
    return ScriptSignals(len(text), len(html), inline, external, root)


def render_reason(signals: ScriptSignals, threshold: RenderThreshold) -> str | None:
    """Why the page needs a render (None: the cheap fetch has what it has)."""
    s = signals
    if s.scripts == 0 or s.text_chars > threshold.text_chars:
        return None
    if s.app_root is not None:
        return f"an empty app root ({s.app_root}) and {s.text_chars} characters of text"
    if s.script_share >= threshold.script_share:
        return (
            f"{s.script_share:.0%} of the page is inline script, {s.text_chars} characters of text"
        )
    if s.text_chars == 0:
        return "no visible text, only scripts"
    return None


@dataclass
class RenderedResult(FetchResult):
    """A page answer whose body is the DOM a browser built from it.

    ``original`` is the answer as the server sent it (archived as the response record);
    the rendered DOM is archived after it as a ``resource`` record.
    """

    original: FetchResult | None = None
    render_seconds: float = 0.0
    render_requests: int = 0  # requests the render made to the host (the document aside)
    render_refused: int = 0  # requests it was refused (other hosts, robots, methods)

    @classmethod
    def of(
        cls, original: FetchResult, dom: str, seconds: float, made: int, refused: int
    ) -> RenderedResult:
        """The rendered answer: ``original``'s facts with the DOM as a UTF-8 HTML body."""
        headers = [(k, v) for k, v in original.raw_headers if k.lower() != "content-type"]
        fields = {k: getattr(original, k) for k in FetchResult.__dataclass_fields__}
        fields.update(
            body=dom.encode("utf-8"),
            raw_headers=[*headers, ("Content-Type", "text/html; charset=utf-8")],
            headers={**original.headers, "content-type": "text/html; charset=utf-8"},
            content_type="text/html",
            charset="utf-8",
        )
        return cls(**fields, original=original, render_seconds=seconds,
                   render_requests=made, render_refused=refused)  # fmt: skip

    def archive(self, warc: WarcStore, url: str) -> str:
        """The response as received, then the rendered DOM; the DOM's storage key."""
        o = self.original or self
        warc.write_response(
            url, o.status or 200, o.raw_headers, o.body,
            fetched_at=o.started, address=o.address, request=o.sent,
        )  # fmt: skip
        return warc.write_resource(url, self.body, "text/html; charset=utf-8",
                                   fetched_at=o.started + self.render_seconds)  # fmt: skip


#: Media types a render may reuse from an earlier render of the same crawl.
STATIC_TYPES = frozenset({"text/javascript", "application/javascript", "text/css"})
STATIC_CACHE_ENTRIES = 256


def _static(res: FetchResult) -> bool:
    return res.content_type in STATIC_TYPES and len(res.body) <= 2 * 1024 * 1024


@dataclass
class RenderTier:
    """One crawl's render queue: its budget, its browser pages, what it counted."""

    budget: int
    workers: asyncio.Semaphore
    renderer: BrowserRenderer | None = None
    unavailable: str | None = None  # why no browser can run (then pages stay as fetched)
    counts: Counter[str] = field(default_factory=Counter)
    waiting: int = 0
    #: Scripts and styles already fetched in this crawl, by URL: a page's app bundle is
    #: asked for once, not once per page (as a browser's cache would).
    static: dict[str, FetchResult] = field(default_factory=dict)


class PageRendering:
    """The crawl loop's render tier (a mixin of :class:`~lookup.crawler.engine.Crawler`)."""

    # The crawler's state these methods use (set by Crawler._open / run).
    config: Any
    frontier: Any
    robots: Any
    store: Any
    fetcher: Any
    warc: Any
    steering: Any
    _counts: Counter[str]

    if TYPE_CHECKING:  # the crawler's own method these use (defined by Crawler)

        async def _addresses(self, hosts: set[str]) -> dict[str, str | Exception]: ...

    @property
    def _render_tier(self) -> RenderTier:
        tier: RenderTier | None = getattr(self, "_tier", None)
        if tier is None:
            c = self.config
            tier = RenderTier(int(c.render_budget), asyncio.Semaphore(max(1, c.render_workers)))
            self._tier = tier
        return tier

    def _render_permitted(self, address: str) -> bool:
        """May a render's request go to a host on ``address`` now (embedded: always)?"""
        return True

    async def _render_tier_pass(self, e: FrontierEntry, res: FetchResult) -> FetchResult:
        """The page's answer for the outcome rules: rendered when it is a candidate and the
        budget and the browser allow, else the cheap fetch as it came."""
        c = self.config
        if c.render_budget <= 0 or e.kind != "page" or res.error is not None or res.status != 200:
            return res
        if res.content_type and res.content_type not in HTML_TYPES:  # a PDF builds nothing
            return res
        threshold = RenderThreshold(c.render_text_chars, c.render_script_share)
        reason = render_reason(script_signals(res.text()), threshold)
        if reason is None:
            return res
        tier = self._render_tier
        tier.counts["candidates"] += 1
        if tier.counts["started"] >= tier.budget:
            tier.counts["over-budget"] += 1
            return res
        if tier.unavailable is not None:
            tier.counts["unavailable"] += 1
            return res
        tier.counts["started"] += 1
        tier.waiting += 1
        queued = True
        try:
            async with tier.workers:  # the render queue: one browser page per worker
                tier.waiting, queued = tier.waiting - 1, False
                return await self._render_page(tier, e, res, reason)
        finally:
            if queued:  # cancelled while waiting in the queue
                tier.waiting -= 1

    async def _render_page(
        self, tier: RenderTier, e: FrontierEntry, res: FetchResult, reason: str
    ) -> FetchResult:
        from lookup.crawler.browser import BrowserRenderer, RenderFailed, RenderUnavailable

        c = self.config
        if tier.renderer is None:
            renderer = BrowserRenderer(Path(c.render_browser), c.user_agent, c.render_timeout,
                                       c.render_max_requests)  # fmt: skip
            try:
                await renderer.start()
            except RenderUnavailable as exc:
                tier.unavailable = str(exc)
                tier.counts["unavailable"] += 1
                tier.counts["started"] -= 1
                log.warning("rendering unavailable, pages are kept as fetched: %s", exc)
                return res
            tier.renderer = renderer
        refused: Counter[str] = Counter()

        async def fetch(url: str, method: str) -> FetchResult | None:
            why = await self._render_refusal(e, url, method)
            if why is not None:
                refused[why] += 1
                return None
            cached = tier.static.get(url)
            if cached is not None:
                tier.counts["cached"] += 1
                return cached
            answer = await self._render_request(e, url)
            if answer is not None and answer.status == 200 and _static(answer):
                if len(tier.static) < STATIC_CACHE_ENTRIES:
                    tier.static[url] = answer
            return answer

        try:
            snap = await tier.renderer.render(e.url, res, fetch)
        except RenderFailed as exc:
            tier.counts["failed"] += 1
            tier.counts.update({f"refused-{k}": v for k, v in refused.items()})
            log.warning("render of %s failed, kept as fetched: %s", e.url, exc)
            return res
        tier.counts["rendered"] += 1
        tier.counts.update({f"refused-{k}": v for k, v in refused.items()})
        self._counts["rendered"] += 1
        log.info("rendered %s (%s): %d requests in %.2f s", e.url, reason, snap.requests,
                 snap.seconds)  # fmt: skip
        return RenderedResult.of(res, snap.html, snap.seconds, snap.requests, sum(refused.values()))

    async def _render_refusal(self, e: FrontierEntry, url: str, method: str) -> str | None:
        """Why a render may not make this request (None: it may, in the host's turn)."""
        if method != "GET":
            return "method"
        if not url.startswith(("http://", "https://")) or host_of(url) != e.host:
            return "other-host"
        policy = self.robots.get(e.host)
        if policy is None or not policy.allows(url):
            return "robots"
        if self.steering.check_url(url) is not None:
            return "operator-block"
        return None

    async def _render_request(self, e: FrontierEntry, url: str) -> FetchResult | None:
        """One request of a render, in the host's turn, through the fetcher; logged."""
        address = (await self._addresses({e.host})).get(e.host)
        if not isinstance(address, str) or not self._render_permitted(address):
            return None
        turn = await self.frontier.wait_lease(e.host, address, patience=self.config.render_timeout)
        if turn is None:
            return None
        try:
            res: FetchResult = await self.fetcher.fetch(url, accept=None)
        except BaseException:  # cancelled: the host's turn is given back all the same
            self.frontier.complete(turn, 0.0)
            raise
        retry_after = parse_retry_after(res.header("retry-after"))
        delay = self.frontier.complete(turn, res.took, status=res.status, retry_after=retry_after)
        self._counts["requests"] += 1
        self._render_tier.counts["requests"] += 1
        if res.ok:
            self.warc.write_response(
                url, res.status or 0, res.raw_headers, res.body,
                fetched_at=res.started, address=res.address, request=res.sent,
            )  # fmt: skip
        outcome = "render-resource" if res.ok else f"render-{res.error}"
        with self.store.transaction():
            self.store.add_fetch(FetchRecord(url, e.host, turn.address, "render", res.started,
                                             res.took, res.status, outcome, delay))  # fmt: skip
        return res if res.ok else None

    def _note_rendered(self, events: list[dict[str, Any]], res: FetchResult, url: str) -> None:
        """A rendered page's ``PageFetched`` says so."""
        if isinstance(res, RenderedResult):
            for ev in events:
                if ev.get("type") == "PageFetched" and ev.get("url") == url:
                    ev["rendered"] = True

    async def _close_rendering(self) -> None:
        """Let the browser go (the crawl is over)."""
        tier: RenderTier | None = getattr(self, "_tier", None)
        if tier is not None and tier.renderer is not None:
            await tier.renderer.close()
            tier.renderer = None

    def render_summary(self) -> dict[str, Any]:
        """The render tier's counters for the report and the progress line."""
        tier: RenderTier | None = getattr(self, "_tier", None)
        c = self.config
        out: dict[str, Any] = {"budget": int(c.render_budget)}
        if tier is not None:
            out.update({k: v for k, v in sorted(tier.counts.items()) if k != "started"})
            out["waiting"] = tier.waiting
            if tier.unavailable is not None:
                out["unavailable_reason"] = tier.unavailable
        return out
