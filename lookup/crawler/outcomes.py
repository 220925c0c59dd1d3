"""What one fetched answer means: an ordered list of small, named outcome rules.

A page fetch's answer goes down :data:`RULES` in order — the way Scrapy orders its
downloader middlewares — and the first rule that claims it decides the outcome::

    network error → retry or give up       final error (tls, too large, not HTML)
    429 / 503     → back off and retry     redirect → follow (or stop at the limit)
    304           → unchanged, reschedule  other 5xx → retry, then give up
    /sitemap.xml tried, 4xx → absent       other non-200 → http-N
    sitemap → its URLs and lastmod hints   a PDF without readable text → unreadable-pdf
    meta refresh → follow like a redirect
    challenge (a CAPTCHA page) → retry     robots directives (noindex)
    soft 404 (a "not found" in a 200)
    duplicate (exact / SimHash / MinHash)  page (unchanged, or new: an event)

A page that was indexed and now answers gone, ``noindex``, a soft 404, a duplicate or a
permanent redirect gets a ``PageRemoved`` event with its reason (:func:`removal`).

Each rule is a function ``(FetchContext) -> Outcome | None`` that can be called alone;
an :class:`Outcome` is typed: its name, whether to try again, the host counter to bump,
the :class:`~lookup.crawler.state.UrlFacts` the writer stores, the links found, the
sitemap hints and the ``PageFetched`` event. The page rules write WARC records and
update the duplicate detector and trap memory through :class:`RuleKit`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from lookup.crawler.blocking import looks_like_challenge
from lookup.crawler.config import CrawlConfig
from lookup.crawler.dedup import (
    MIN_SHINGLES_FOR_NEAR,
    DuplicateDetector,
    Verdict,
    minhash_from_bytes,
    minhash_to_bytes,
)
from lookup.crawler.fetcher import HTML_TYPES, FetchResult
from lookup.crawler.frontier import FrontierEntry
from lookup.crawler.output import WarcStore, iso
from lookup.crawler.parse import (
    ParsedPage,
    RobotsDirectives,
    parse_html,
    parse_pdf,
    parse_robots_directives,
)
from lookup.crawler.render import RenderedResult
from lookup.crawler.sitemaps import SitemapError, parse_sitemap
from lookup.crawler.soft404 import ProbeSignature, classify
from lookup.crawler.state import (
    ContentFacts,
    HostCounter,
    PageFacts,
    Schedule,
    UrlFacts,
    UrlRecord,
    Validators,
)
from lookup.crawler.traps import TrapGuard
from lookup.kit.pdftext import PDF_TYPE
from lookup.kit.urlnorm import normalize_url, url_hash

__all__ = [
    "FAILED",
    "INDEXED",
    "NETWORK_ERRORS",
    "REDIRECTS",
    "REMOVAL_REASONS",
    "RETRY_STATUSES",
    "RULES",
    "SITEMAP_KINDS",
    "FetchContext",
    "Link",
    "Outcome",
    "OutcomeRule",
    "RuleKit",
    "back_off",
    "challenge",
    "decide",
    "duplicate",
    "final_error",
    "importance",
    "meta_refresh",
    "network_error",
    "not_modified",
    "other_status",
    "page",
    "probe_signature",
    "redirect",
    "removal",
    "reschedule",
    "robots_directives",
    "server_error",
    "sitemap",
    "sitemap_absent",
    "soft_404",
    "unreadable_pdf",
    "was_indexed",
]

REDIRECTS = (301, 302, 303, 307, 308)
RETRY_STATUSES = (429, 503)
#: Fetch errors worth another try (the network); every other error is a final answer.
NETWORK_ERRORS = ("timeout", "connect", "protocol", "dns")
#: Outcomes that leave a URL ``failed`` (no usable answer) rather than ``done``.
FAILED = (*NETWORK_ERRORS, "tls")

#: Kinds of URL read as sitemaps: named by robots.txt, found in a page's feed links or an
#: index (``sitemap``), or ``/sitemap.xml`` tried because robots.txt names none (``sitemap-probe``).
SITEMAP_KINDS = ("sitemap", "sitemap-probe")

#: A link to admit: (url, depth, found on, kind, redirects so far).
Link = tuple[str, int, str | None, str, int]


@dataclass
class Outcome:
    """What a rule decided for one fetched URL."""

    name: str  # ok | duplicate | redirect | retry:http-503 | not-modified | soft-404 | ...
    facts: UrlFacts = field(default_factory=UrlFacts)
    requeue: bool = False  # try again later (the URL goes back to the frontier)
    attempts: int | None = None  # the URL's attempts after this one (None: unchanged)
    host_counter: HostCounter | None = None  # errors | backoffs
    links: list[Link] = field(default_factory=list)
    hints: list[tuple[str, float]] = field(default_factory=list)  # sitemap (url, lastmod)
    event: dict[str, Any] | None = None  # PageFetched (new or changed) or PageRemoved
    #: The original replaced: its hash, its kind and score against the new one, the new URL.
    supersedes: tuple[str, str, str, float | None] | None = None
    promotes: str | None = None  # the url hash of a stored duplicate that replaces it
    also: list[dict[str, Any]] = field(default_factory=list)  # that original's PageRemoved


@dataclass
class RuleKit:
    """What the page rules need from the crawl: settings, dedup, WARC, traps, probes."""

    config: CrawlConfig
    dedup: DuplicateDetector
    warc: WarcStore
    traps: TrapGuard
    probes: dict[str, ProbeSignature]
    stored: Callable[[str], UrlRecord | None]  # the URL store's record of a url hash
    names_canonical: Callable[[str], bool] = lambda _url: False  # a page names it canonical?


@dataclass
class FetchContext:
    """One answer to judge: the frontier entry, the fetch result and the URL's record."""

    entry: FrontierEntry
    result: FetchResult
    row: UrlRecord | None
    delay: float
    retry_after: float | None
    kit: RuleKit

    @property
    def html_answer(self) -> bool:
        """A 200 answer to a page request (what the page rules judge)."""
        r = self.result
        return r.error is None and r.status == 200 and self.entry.kind not in SITEMAP_KINDS

    @property
    def is_pdf(self) -> bool:
        """A PDF answer (the fetcher accepts them for pages): read by :func:`parse_pdf`."""
        return self.result.content_type == PDF_TYPE

    @cached_property
    def parsed(self) -> ParsedPage:
        if self.is_pdf:
            return parse_pdf(self.result.body)
        return parse_html(self.result.text(), self.kit.config.agent)

    @cached_property
    def directives(self) -> RobotsDirectives:
        directives = self.parsed.robots
        header = self.result.header("x-robots-tag")
        if header:
            directives = directives.merge(parse_robots_directives(header, self.kit.config.agent))
        return directives

    @cached_property
    def _base(self) -> str:
        p, url = self.parsed, self.entry.url
        return (normalize_url(p.base_url, url) if p.base_url else url) or url

    @cached_property
    def canonical(self) -> str | None:
        c = self.parsed.canonical
        return normalize_url(c, self._base) if c else None

    @cached_property
    def feeds(self) -> list[str]:
        """The RSS and Atom feeds the page announces (``<link rel=alternate>``): discovery
        sources read as sitemaps, unless sitemaps are off or the page says ``nofollow``."""
        if self.directives.nofollow or not self.kit.config.follow_sitemaps:
            return []
        out: dict[str, None] = {}
        for href in self.parsed.feeds:
            n = normalize_url(href, self._base)
            if n is not None and n != self.entry.url:
                out[n] = None
        return list(out)

    @cached_property
    def page_links(self) -> list[Link]:
        """The page's links (none under ``nofollow``), its canonical URL among them."""
        e = self.entry
        out: dict[str, None] = {}
        if not self.directives.nofollow:
            for href in self.parsed.links:
                n = normalize_url(href, self._base)
                if n is not None and n != e.url:
                    out[n] = None
            if self.canonical and self.canonical != e.url:
                out.setdefault(self.canonical, None)
        return [(u, e.depth + 1, e.url, "page", 0) for u in out]

    @cached_property
    def links(self) -> list[Link]:
        """What to admit: the feeds first (read as sitemaps, even where an ``<a>`` names
        one too), then the page links."""
        e, feeds = self.entry, self.feeds
        found = [(u, e.depth + 1, e.url, "sitemap", 0) for u in feeds]
        return found + [link for link in self.page_links if link[0] not in feeds]

    @property
    def page_facts(self) -> PageFacts:
        return PageFacts(self.parsed.title[:300], self.canonical, len(self.page_links))

    @property
    def validators(self) -> Validators:
        return Validators(self.result.header("etag"), self.result.header("last-modified"))

    @cached_property
    def verdict(self) -> Verdict:
        """The duplicate detector's verdict (registers the page as an original if it is one)."""
        return self.kit.dedup.check(self.entry.url_hash, self.parsed.text)

    def schedule(self, *, changed: bool) -> Schedule:
        return reschedule(self.kit.config, self.row, changed=changed, depth=self.entry.depth)

    def write_response(self) -> str:
        """Store the raw answer as a WARC response record; its storage key (a rendered
        page's: the response as received, then its DOM, whose key it is)."""
        r = self.result
        if isinstance(r, RenderedResult):
            return r.archive(self.kit.warc, self.entry.url)
        return self.kit.warc.write_response(
            self.entry.url, 200, r.raw_headers, r.body,
            fetched_at=r.started, address=r.address, request=r.sent,
        )  # fmt: skip


OutcomeRule = Callable[[FetchContext], Outcome | None]


def importance(depth: int) -> float:
    """Pages near a seed matter more (they are better linked)."""
    return 2.0 if depth == 0 else 1.0 if depth <= 2 else 0.5


def reschedule(
    config: CrawlConfig, row: UrlRecord | None, *, changed: bool, depth: int
) -> Schedule:
    """Adaptive recrawl: halve the interval on change, ×1.5 when unchanged, by importance."""
    c = config
    previous = row.interval if row is not None else None
    if previous is None:
        interval = c.recrawl_initial
    elif changed:
        interval = max(c.recrawl_min, previous / 2)
    else:
        interval = min(c.recrawl_max, previous * 1.5)
    effective = min(c.recrawl_max, max(c.recrawl_min, interval / importance(depth)))
    return Schedule(interval, time.time() + effective)


# ----------------------------------------------------------------- answers that failed


def network_error(ctx: FetchContext) -> Outcome | None:
    """Timeout, refused connection, broken protocol, DNS: retry, then give up."""
    err = ctx.result.error
    if err is None or err not in NETWORK_ERRORS:
        return None
    attempts = ctx.entry.attempts + 1
    again = attempts < ctx.kit.config.max_error_attempts
    return Outcome(
        f"retry:{err}" if again else err, UrlFacts(reason=ctx.result.detail),
        requeue=again, attempts=attempts, host_counter="errors",
    )  # fmt: skip


def final_error(ctx: FetchContext) -> Outcome | None:
    """tls | too-large | not-html | binary: a final answer."""
    err = ctx.result.error
    return None if err is None else Outcome(err, UrlFacts(reason=ctx.result.detail))


def back_off(ctx: FetchContext) -> Outcome | None:
    """429 / 503: the server asked us to come back later (the frontier already waits)."""
    status = ctx.result.status
    if status not in RETRY_STATUSES:
        return None
    attempts = ctx.entry.attempts + 1
    again = attempts < ctx.kit.config.max_attempts
    reason = f"HTTP {status}, Retry-After {ctx.retry_after}, waiting {ctx.delay:.2f} s"
    return Outcome(
        f"retry:http-{status}" if again else f"http-{status}", UrlFacts(reason=reason),
        requeue=again, attempts=attempts, host_counter="backoffs",
    )  # fmt: skip


def redirect(ctx: FetchContext) -> Outcome | None:
    """3xx: the target is a link to admit, unless the chain is too long."""
    if ctx.result.status not in REDIRECTS:
        return None
    e, c = ctx.entry, ctx.kit.config
    location = ctx.result.header("location")
    target = normalize_url(location or "", e.url)
    if target is None:
        return Outcome("redirect", UrlFacts(reason=f"unusable Location {location!r}"))
    if e.redirects + 1 > c.max_redirects:
        return Outcome(
            "redirect",
            UrlFacts(reason=f"redirect limit {c.max_redirects} reached → {target}"),
            links=[(target, e.depth, e.url, "redirect-limit", e.redirects + 1)],
        )
    return Outcome(
        "redirect",
        UrlFacts(reason=f"→ {target}"),
        links=[(target, e.depth, e.url, e.kind, e.redirects + 1)],
    )


def not_modified(ctx: FetchContext) -> Outcome | None:
    """304 to a conditional recrawl: unchanged, due again later."""
    if ctx.result.status != 304:
        return None
    r = ctx.result
    ctx.kit.warc.write_not_modified(
        ctx.entry.url, r.raw_headers,
        refers_to_date=ctx.row.fetched_at if ctx.row is not None else None,
        fetched_at=r.started, address=r.address, request=r.sent,
    )  # fmt: skip
    return Outcome("not-modified", UrlFacts(schedule=ctx.schedule(changed=False)))


def server_error(ctx: FetchContext) -> Outcome | None:
    """Another 5xx: retry, then give up."""
    status = ctx.result.status
    if status is None or status < 500:
        return None
    attempts = ctx.entry.attempts + 1
    again = attempts < ctx.kit.config.max_error_attempts
    return Outcome(
        f"retry:http-{status}" if again else f"http-{status}",
        requeue=again, attempts=attempts, host_counter="errors",
    )  # fmt: skip


def other_status(ctx: FetchContext) -> Outcome | None:
    """Any other answer but 200 (404, 410, ...): final."""
    status = ctx.result.status
    return None if status == 200 else Outcome(f"http-{status}")


# ------------------------------------------------------------------------ 200 answers


def sitemap_absent(ctx: FetchContext) -> Outcome | None:
    """``/sitemap.xml``, tried because robots.txt names no sitemap, is not there (a 4xx):
    the usual answer of a site without one — its own outcome, never an error."""
    status = ctx.result.status
    if ctx.entry.kind != "sitemap-probe" or status is None or not 400 <= status < 500:
        return None
    why = f"HTTP {status}: no sitemap at /sitemap.xml (robots.txt names none either)"
    return Outcome("sitemap-absent", UrlFacts(reason=why))


def sitemap(ctx: FetchContext) -> Outcome | None:
    """A sitemap, sitemap index or feed (XML, gzip, text, RSS, Atom): the URLs it lists and
    their ``lastmod`` times. One that cannot be read is its own outcome, with the reason —
    except an HTML page answering the ``/sitemap.xml`` we only tried (a site's "not
    found" page served as 200): there is no sitemap there."""
    if ctx.entry.kind not in SITEMAP_KINDS or ctx.result.error is not None:
        return None
    if ctx.result.status != 200:
        return None
    e = ctx.entry
    try:
        doc = parse_sitemap(ctx.result.body)
    except SitemapError as exc:
        if e.kind == "sitemap-probe" and ctx.result.content_type in HTML_TYPES:
            why = "/sitemap.xml answers an HTML page, not a sitemap (robots.txt names none)"
            return Outcome("sitemap-absent", UrlFacts(reason=why))
        return Outcome("sitemap-unparseable", UrlFacts(reason=str(exc)))
    links: list[Link] = []
    hints: list[tuple[str, float]] = []
    kind = "sitemap" if doc.lists_sitemaps else "page"
    for loc, lastmod in doc.entries:
        url = normalize_url(loc, e.url)
        if url is None:
            continue
        links.append((url, e.depth + 1, e.url, kind, 0))
        if lastmod is not None and not doc.lists_sitemaps:
            hints.append((url, lastmod))
    return Outcome("sitemap", links=links, hints=hints)


def unreadable_pdf(ctx: FetchContext) -> Outcome | None:
    """A PDF whose text cannot be read (damaged, encrypted, a scan): final, not indexed."""
    if not ctx.html_answer or not ctx.is_pdf or ctx.parsed.document_error is None:
        return None
    return Outcome("unreadable-pdf", UrlFacts(reason=ctx.parsed.document_error))


def meta_refresh(ctx: FetchContext) -> Outcome | None:
    """``<meta http-equiv="refresh">`` sooner than ``meta_refresh_max_delay``: a redirect
    written in the page, followed as Scrapy's ``MetaRefreshMiddleware`` does. Its target is
    admitted like a 3xx's ``Location`` — through scope, robots.txt and the host's turn, one
    hop of the same redirect limit — and the page is archived but not indexed. A longer
    delay, a refresh of the page itself or an unusable URL leave an ordinary page."""
    if not ctx.html_answer or ctx.is_pdf or ctx.parsed.refresh is None:
        return None
    e, c = ctx.entry, ctx.kit.config
    delay, written = ctx.parsed.refresh
    target = normalize_url(written, ctx._base) if written else None
    if delay >= c.meta_refresh_max_delay or target is None or target == e.url:
        return None
    key = ctx.write_response()
    why = f"meta refresh after {delay:g} s → {target}"
    if e.redirects + 1 > c.max_redirects:
        return Outcome(
            "meta-refresh",
            UrlFacts(reason=f"redirect limit {c.max_redirects} reached: {why}", storage_key=key),
            links=[(target, e.depth, e.url, "redirect-limit", e.redirects + 1)],
        )
    return Outcome(
        "meta-refresh",
        UrlFacts(reason=why, storage_key=key),
        links=[(target, e.depth, e.url, e.kind, e.redirects + 1)],
    )


def robots_directives(ctx: FetchContext) -> Outcome | None:
    """``noindex`` (meta robots or X-Robots-Tag): not indexed; its links still followed."""
    if not ctx.html_answer or not ctx.directives.noindex:
        return None
    header = ctx.result.header("x-robots-tag")
    d = ctx.directives
    source = f"X-Robots-Tag: {header}" if header else "meta robots"
    flags = [n for n, on in (("noindex", d.noindex), ("nofollow", d.nofollow)) if on]
    reason = f"{', '.join(flags)} ({source})"
    return Outcome("noindex", UrlFacts(reason=reason, page=ctx.page_facts), links=ctx.links)


def challenge(ctx: FetchContext) -> Outcome | None:
    """A CAPTCHA or bot check served instead of the page: not the page, so never indexed
    (an indexed copy stays); tried again later like a 429, and counted toward the host's
    block detection (:mod:`lookup.crawler.blocking`)."""
    if not ctx.html_answer:
        return None
    p = ctx.parsed
    if not looks_like_challenge(p.title, p.text, ctx.result.body):
        return None
    attempts = ctx.entry.attempts + 1
    again = attempts < ctx.kit.config.max_attempts
    reason = f"a CAPTCHA or bot check instead of the page ({p.title[:80]!r})"
    return Outcome(
        "retry:challenge" if again else "challenge", UrlFacts(reason=reason),
        requeue=again, attempts=attempts, host_counter="backoffs",
    )  # fmt: skip


def soft_404(ctx: FetchContext) -> Outcome | None:
    """ "Not found" in a 200: never indexed, no event, and its links not followed.

    Its links are often "did you mean ..." suggestions that breed more of the same.
    """
    if not ctx.html_answer:
        return None
    e, p, kit = ctx.entry, ctx.parsed, ctx.kit
    soft = classify(
        e.url, title=p.title, heading=p.heading, text=p.text, probe=kit.probes.get(e.host)
    )
    if not soft.is_soft_404:
        return None
    fp = kit.dedup.fingerprint(p.text)
    kit.dedup.forget(e.url_hash)
    key = ctx.write_response()
    kit.traps.record(e.url, duplicate=True)
    facts = UrlFacts(
        reason=soft.reason,
        page=PageFacts(p.title[:300], ctx.canonical, 0),
        content=ContentFacts(
            fp.content_hash, f"0x{fp.simhash:016x}", 0, None, dup_score=soft.score
        ),
        storage_key=key,
        schedule=ctx.schedule(changed=False),
    )
    return Outcome("soft-404", facts)


def duplicate(ctx: FetchContext) -> Outcome | None:
    """The same text as a page already seen (exact, SimHash or MinHash): no event."""
    if not ctx.html_answer or not ctx.verdict.is_duplicate:
        return None
    e, v, kit, r = ctx.entry, ctx.verdict, ctx.kit, ctx.result
    assert v.of is not None
    original = kit.stored(v.of)
    also: list[dict[str, Any]] = []
    if original is not None and not declared(kit, original):
        if ctx.canonical in (None, e.url) and kit.names_canonical(e.url):
            return representative(ctx, original)
        member = kit.stored(url_hash(ctx.canonical)) if ctx.canonical else None
        if member is not None and member.outcome == "duplicate" and member.url != e.url:
            if member.dup_of == original.url:  # this page names a fetched member canonical
                also, original = promotion(ctx, member, original), member
    original_url = original.url if original is not None else v.of
    copy = original
    if copy is not None and copy.dup_kind == "exact" and copy.dup_of:  # a promoted member
        copy = kit.stored(url_hash(copy.dup_of))  # its copy is a revisit of that page's
    if v.kind == "exact" and copy is not None and copy.fetched_at:
        key = kit.warc.write_revisit(
            e.url, refers_to=copy.url, refers_to_date=copy.fetched_at,
            digest=v.content_hash, fetched_at=r.started,
        )  # fmt: skip
    else:
        key = ctx.write_response()
    kit.traps.record(e.url, duplicate=True)
    facts = UrlFacts(
        page=ctx.page_facts,
        content=ContentFacts(
            v.content_hash,
            f"0x{v.simhash:016x}",
            int(v.near_eligible),
            None,
            dup_of=original_url,
            dup_kind=v.kind,
            dup_score=v.score,
        ),  # fmt: skip
        validators=ctx.validators,
        storage_key=key,
        schedule=ctx.schedule(changed=False),
    )
    outcome = Outcome("duplicate", facts, links=ctx.links, also=also)
    if also:  # ``original`` is now the promoted member; the old original is v.of
        assert original is not None
        outcome.promotes = original.url_hash
        # The old original is to the promoted member what the member was found to be to it.
        outcome.supersedes = (v.of, original.dup_kind or "exact", original.url, original.dup_score)
    return outcome


def declared(kit: RuleKit, row: UrlRecord) -> bool:
    """Is ``row``'s URL a declared canonical (its own, or another page's)?"""
    return row.canonical == row.url or kit.names_canonical(row.url)


def promotion(ctx: FetchContext, member: UrlRecord, original: UrlRecord) -> list[dict[str, Any]]:
    """Events making ``member`` (fetched, a duplicate of ``original``) the representative.

    Its stored facts say what it is; an exact duplicate was stored as a WARC revisit, so
    its event points at the original's record (the same body).
    """
    kit = ctx.kit
    kit.dedup.forget(original.url_hash)
    kit.dedup.register(member.url_hash, stored_verdict(member))
    exact = member.dup_kind == "exact"
    key = original.storage_key if exact else member.storage_key
    events: list[dict[str, Any]] = [{
        "type": "PageFetched", "url": member.url, "urlHash": member.url_hash,
        "fetchedAt": member.fetched_at or iso(ctx.result.started), "httpStatus": 200,
        "contentHash": member.content_hash, "simhash": member.simhash, "storageKey": key,
        "outLinks": member.out_links or 0, "changed": True, "title": member.title or "",
    }]  # fmt: skip
    if was_indexed(original):
        events.append(removed_for(ctx, original, member.url))
    return events


def stored_verdict(row: UrlRecord) -> Verdict:
    """An original's verdict from its stored fingerprints (to index it in the detector)."""
    return Verdict(
        None, None, row.content_hash or "", int(row.simhash or "0x0", 16),
        minhash_from_bytes(row.minhash) if row.minhash else None,
        shingle_count=MIN_SHINGLES_FOR_NEAR if row.near_eligible else 0,
    )  # fmt: skip


def removed_for(ctx: FetchContext, original: UrlRecord, by_url: str) -> dict[str, Any]:
    """``original``'s ``PageRemoved``: a duplicate of ``by_url``, its cluster's canonical."""
    return {
        "type": "PageRemoved", "url": original.url, "urlHash": original.url_hash,
        "fetchedAt": iso(ctx.result.started), "httpStatus": original.http_status,
        "reason": "duplicate", "duplicateOf": by_url,
    }  # fmt: skip


def representative(ctx: FetchContext, original: UrlRecord) -> Outcome:
    """This page is the URL its cluster's original names ``rel=canonical``: it becomes the
    cluster's representative (indexed in its place) and the original a duplicate of it.

    The first member fetched is the representative until the URL the cluster declares
    canonical is fetched, as Google picks the declared canonical of a duplicate set.
    """
    e, v, kit = ctx.entry, ctx.verdict, ctx.kit
    kit.dedup.forget(original.url_hash)
    kit.dedup.register(e.url_hash, v)
    outcome = page(ctx)
    assert outcome is not None  # an HTML answer (the duplicate rule checked)
    outcome.supersedes = (original.url_hash, v.kind or "exact", e.url, v.score)
    if was_indexed(original):
        outcome.also.append(removed_for(ctx, original, e.url))
    return outcome


def page(ctx: FetchContext) -> Outcome | None:
    """An original page: ``unchanged`` since the last fetch, or new (a WARC record, an event)."""
    if not ctx.html_answer:
        return None
    e, v, row = ctx.entry, ctx.verdict, ctx.row
    ctx.kit.traps.record(e.url, duplicate=False)
    came_back = row is not None and row.outcome in REMOVAL_REASONS  # removed before
    changed = came_back or (row.content_hash if row is not None else None) != v.content_hash
    content = ContentFacts(
        v.content_hash, f"0x{v.simhash:016x}", int(v.near_eligible),
        minhash_to_bytes(v.minhash) if v.minhash is not None else None,
    )  # fmt: skip
    schedule = ctx.schedule(changed=changed)
    if not changed:
        facts = UrlFacts(
            page=ctx.page_facts, content=content, validators=ctx.validators, schedule=schedule
        )
        return Outcome("unchanged", facts, links=ctx.links)
    key = ctx.write_response()
    facts = UrlFacts(
        page=ctx.page_facts, content=content, validators=ctx.validators, storage_key=key,
        schedule=schedule,
        changes=(row.changes or 0) + 1 if row is not None and row.fetches else None,
    )  # fmt: skip
    event = {
        "type": "PageFetched",
        "url": e.url,
        "urlHash": e.url_hash,
        "fetchedAt": iso(ctx.result.started),
        "httpStatus": 200,
        "contentHash": v.content_hash,
        "simhash": f"0x{v.simhash:016x}",
        "storageKey": key,
        "outLinks": len(ctx.page_links),
        "changed": True,
        "title": ctx.parsed.title[:300],
    }
    return Outcome("ok", facts, links=ctx.links, event=event)


def probe_signature(
    res: FetchResult, host: str, url: str, attempts: int, config: CrawlConfig
) -> ProbeSignature | None:
    """What a host's answer to its soft-404 probe says; None: ask again later.

    A back-off (429/503) or a network error is asked again while attempts last; any
    other answer is the host's signature (a 200's title and main text are kept).
    """
    retry = (res.status in RETRY_STATUSES and attempts < config.max_attempts) or (
        res.error in NETWORK_ERRORS and attempts < config.max_error_attempts
    )
    if retry:
        return None
    title = text = ""
    if res.status == 200 and res.error is None:
        parsed = parse_html(res.text(), config.agent)
        title, text = parsed.title, parsed.text
    return ProbeSignature(host, url, res.status, title[:300], text[:20_000], res.header("location"))


#: The rules in the order they are asked; the first that answers decides.
RULES: tuple[OutcomeRule, ...] = (
    network_error,
    final_error,
    back_off,
    redirect,
    not_modified,
    server_error,
    sitemap_absent,
    other_status,
    sitemap,
    unreadable_pdf,
    meta_refresh,
    challenge,
    robots_directives,
    soft_404,
    duplicate,
    page,
)


#: Outcomes of a page that was live before: why it must leave the search index now.
INDEXED = ("ok", "unchanged", "not-modified")
REMOVAL_REASONS = {
    "http-404": "gone", "http-410": "gone", "http-451": "gone", "noindex": "noindex",
    "soft-404": "soft-404", "duplicate": "duplicate", "redirect": "moved",
    "meta-refresh": "moved",
}  # fmt: skip


def was_indexed(row: UrlRecord | None) -> bool:
    """Did the URL's last answer put (or keep) it in the index? A retry tells nothing."""
    if row is None or not row.fetches or row.outcome is None:
        return False
    return row.outcome in INDEXED or row.outcome.startswith("retry:")


def removal(ctx: FetchContext, outcome: Outcome) -> dict[str, Any] | None:
    """The ``PageRemoved`` event when a page that was indexed stops being indexable.

    Gone (404/410/451), ``noindex``, a soft 404, a duplicate of another page, or moved
    for good (301/308; a temporary redirect keeps its URL, as Google and Bing do; a page
    that now leaves by meta refresh is no longer indexed here, so it leaves the index).
    """
    reason = REMOVAL_REASONS.get(outcome.name)
    status = ctx.result.status
    if reason is None or not was_indexed(ctx.row):
        return None
    if outcome.name == "redirect" and status not in (301, 308):
        return None
    event: dict[str, Any] = {
        "type": "PageRemoved",
        "url": ctx.entry.url,
        "urlHash": ctx.entry.url_hash,
        "fetchedAt": iso(ctx.result.started),
        "httpStatus": status,
        "reason": reason,
    }
    content = outcome.facts.content
    if reason == "duplicate" and content is not None and content.dup_of:
        event["duplicateOf"] = content.dup_of
    if reason == "moved" and outcome.links:
        event["location"] = outcome.links[0][0]
    return event


def decide(ctx: FetchContext, rules: tuple[OutcomeRule, ...] = RULES) -> Outcome:
    """The outcome of the first rule that claims the answer (with its removal event, if
    the answer takes an indexed page out of the index)."""
    for rule in rules:
        outcome = rule(ctx)
        if outcome is not None:
            if outcome.event is None:
                outcome.event = removal(ctx, outcome)
            return outcome
    raise AssertionError(f"no outcome rule claimed {ctx.entry.url}")  # ``page`` claims any 200
