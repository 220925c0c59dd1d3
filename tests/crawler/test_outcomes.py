"""The outcome rules, each asked alone, and their order."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from lookup.crawler.config import CrawlConfig
from lookup.crawler.dedup import DuplicateDetector
from lookup.crawler.fetcher import FetchResult
from lookup.crawler.frontier import FrontierEntry
from lookup.crawler.outcomes import (
    RULES,
    FetchContext,
    RuleKit,
    back_off,
    decide,
    duplicate,
    network_error,
    not_modified,
    page,
    probe_signature,
    redirect,
    robots_directives,
    server_error,
    sitemap,
    soft_404,
)
from lookup.crawler.output import WarcStore, read_record
from lookup.crawler.store import UrlRecord
from lookup.crawler.traps import TrapGuard, TrapPolicy
from lookup.kit.urlnorm import url_hash

STORY = " ".join(f"word{i} sentence{i % 7} topic{i % 13}" for i in range(120))
HTML = (
    "<html><head><title>A story</title><link rel=canonical href='/story'></head>"
    "<body><main><h1>A story</h1><p>{text}</p><a href='/next'>next</a>"
    "<a href='http://b.test/other'>other</a></main></body></html>"
)

Make = Callable[..., FetchContext]


@pytest.fixture
def kit(tmp_path: Path) -> RuleKit:
    config = CrawlConfig(tmp_path, max_attempts=3, max_error_attempts=2, max_redirects=2)
    rows: dict[str, UrlRecord] = {}
    kit = RuleKit(
        config, DuplicateDetector(), WarcStore(tmp_path), TrapGuard(TrapPolicy()), {}, rows.get
    )
    kit.rows = rows  # type: ignore[attr-defined]
    return kit


@pytest.fixture
def make(kit: RuleKit) -> Make:
    def make(
        url: str = "http://a.test/story",
        *,
        status: int | None = 200,
        body: str = "",
        headers: dict[str, str] | None = None,
        error: str | None = None,
        kind: str = "page",
        attempts: int = 0,
        redirects: int = 0,
        row: UrlRecord | None = None,
    ) -> FetchContext:
        entry = FrontierEntry(
            url, url_hash(url), "a.test", depth=1, kind=kind, attempts=attempts,
            redirects=redirects,
        )  # fmt: skip
        heads = {k.lower(): v for k, v in (headers or {}).items()}
        res = FetchResult(
            url, "127.0.0.2", 1000.0, 0.01, status, heads, list(heads.items()), body.encode(),
            "text/html", "utf-8", error, f"detail of {error}" if error else "",
        )  # fmt: skip
        return FetchContext(entry, res, row, delay=0.5, retry_after=2.0, kit=kit)

    return make


def test_back_off_retries_a_503_until_the_attempts_run_out(make: Make) -> None:
    first = back_off(make(status=503))
    assert first is not None
    assert (first.name, first.requeue, first.attempts) == ("retry:http-503", True, 1)
    assert first.host_counter == "backoffs"
    assert first.facts.reason == "HTTP 503, Retry-After 2.0, waiting 0.50 s"
    last = back_off(make(status=429, attempts=2))
    assert last is not None and (last.name, last.requeue, last.attempts) == ("http-429", False, 3)
    assert back_off(make(status=200)) is None


def test_network_errors_retry_then_fail_and_other_5xx_likewise(make: Make) -> None:
    again = network_error(make(status=None, error="timeout"))
    assert again is not None and (again.name, again.requeue) == ("retry:timeout", True)
    assert again.facts.reason == "detail of timeout" and again.host_counter == "errors"
    final = network_error(make(status=None, error="timeout", attempts=1))
    assert final is not None and (final.name, final.requeue) == ("timeout", False)
    assert network_error(make(status=None, error="tls")) is None  # not the network: final
    five = server_error(make(status=500))
    assert five is not None and (five.name, five.requeue) == ("retry:http-500", True)
    assert server_error(make(status=404)) is None


def test_a_redirect_is_a_link_to_admit_until_the_chain_is_too_long(make: Make) -> None:
    hop = redirect(make(status=301, headers={"Location": "/moved"}, redirects=1))
    assert hop is not None and hop.name == "redirect"
    assert hop.links == [("http://a.test/moved", 1, "http://a.test/story", "page", 2)]
    assert hop.facts.reason == "→ http://a.test/moved"
    limit = redirect(make(status=302, headers={"Location": "/moved"}, redirects=2))
    assert limit is not None and limit.links[0][3] == "redirect-limit"
    assert limit.facts.reason == "redirect limit 2 reached → http://a.test/moved"
    broken = redirect(make(status=307, headers={"Location": "mailto:x@y"}))
    assert broken is not None and broken.links == []
    assert broken.facts.reason == "unusable Location 'mailto:x@y'"


def test_not_modified_stretches_the_recrawl_interval(make: Make, kit: RuleKit) -> None:
    row = UrlRecord("h", "http://a.test/story", "a.test", "done", interval=7200.0)
    out = not_modified(make(status=304, row=row))
    assert out is not None and out.name == "not-modified"
    assert out.facts.schedule is not None and out.facts.schedule.interval == 7200.0 * 1.5
    assert out.facts.content is None and out.facts.storage_key is None  # the copy stays
    assert not_modified(make(status=200)) is None


def test_a_new_page_is_stored_with_an_event_and_unchanged_the_second_time(
    make: Make, kit: RuleKit, tmp_path: Path
) -> None:
    ctx = make(body=HTML.format(text=STORY))
    assert soft_404(ctx) is None and duplicate(ctx) is None
    out = page(ctx)
    assert out is not None and out.name == "ok"
    assert out.event is not None and out.event["storageKey"] == out.facts.storage_key
    assert out.facts.page is not None and out.facts.page.title == "A story"
    assert {u for u, *_ in out.links} == {"http://a.test/next", "http://b.test/other"}
    assert out.facts.storage_key is not None
    assert read_record(tmp_path, out.facts.storage_key)[0] == "response"
    assert out.facts.content is not None
    row = UrlRecord(
        ctx.entry.url_hash, ctx.entry.url, "a.test", "done", fetches=1,
        content_hash=out.facts.content.content_hash,
    )  # fmt: skip
    again = page(make(body=HTML.format(text=STORY), row=row))
    assert again is not None and again.name == "unchanged"
    assert again.event is None and again.facts.storage_key is None


def test_a_copy_of_a_known_page_is_a_duplicate(make: Make, kit: RuleKit) -> None:
    first = make("http://a.test/story", body=HTML.format(text=STORY))
    assert page(first) is not None
    kit.rows[first.entry.url_hash] = UrlRecord(  # type: ignore[attr-defined]
        first.entry.url_hash, first.entry.url, "a.test", "done", fetched_at="2026-01-01T00:00:00Z"
    )
    copy = duplicate(make("http://a.test/copy", body=HTML.format(text=STORY)))
    assert copy is not None and copy.name == "duplicate" and copy.event is None
    assert copy.facts.content is not None
    assert (copy.facts.content.dup_of, copy.facts.content.dup_kind) == (first.entry.url, "exact")


def test_a_not_found_page_in_a_200_is_a_soft_404(make: Make) -> None:
    body = "<html><head><title>Page not found</title></head><body><h1>Not found</h1></body></html>"
    out = soft_404(make("http://a.test/missing", body=body))
    assert out is not None and out.name == "soft-404"
    assert out.links == [] and out.event is None and out.facts.storage_key is not None
    assert out.facts.page is not None and out.facts.page.out_links == 0
    assert soft_404(make(body=HTML.format(text=STORY))) is None


def test_noindex_keeps_a_page_out_of_the_index_but_follows_its_links(make: Make) -> None:
    ctx = make(body=HTML.format(text=STORY), headers={"X-Robots-Tag": "noindex"})
    out = robots_directives(ctx)
    assert out is not None and out.name == "noindex"
    assert out.facts.reason == "noindex (X-Robots-Tag: noindex)" and out.links
    assert robots_directives(make(body=HTML.format(text=STORY))) is None


def test_a_sitemap_lists_urls_and_their_lastmod(make: Make) -> None:
    xml = (
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        "<url><loc>http://a.test/a</loc><lastmod>2026-01-02</lastmod></url>"
        "<url><loc>http://a.test/b</loc></url></urlset>"
    )
    out = sitemap(make("http://a.test/sitemap.xml", body=xml, kind="sitemap"))
    assert out is not None and out.name == "sitemap"
    assert [u for u, *_ in out.links] == ["http://a.test/a", "http://a.test/b"]
    assert [u for u, _ in out.hints] == ["http://a.test/a"]
    assert sitemap(make(body=xml)) is None  # a page, not a sitemap


def test_rules_are_asked_in_order(make: Make) -> None:
    assert RULES[0] is network_error and RULES[-1] is page
    # A 503 to a sitemap request backs off before the sitemap rule sees it.
    assert decide(make(status=503, kind="sitemap")).name == "retry:http-503"
    assert decide(make(status=404)).name == "http-404"
    assert decide(make(status=None, error="too-large")).name == "too-large"
    assert decide(make(body=HTML.format(text=STORY))).name == "ok"


def test_a_probe_is_asked_again_after_a_back_off_and_then_kept(make: Make, kit: RuleKit) -> None:
    url = "http://a.test/no-such-page-x1"
    busy = make(url, status=503).result
    assert probe_signature(busy, "a.test", url, 1, kit.config) is None  # attempts left
    final = probe_signature(busy, "a.test", url, 3, kit.config)
    assert final is not None and final.status == 503 and final.answer.status == 503
    body = "<html><head><title>Oops</title></head><body><main>Nothing here.</main></body></html>"
    soft = probe_signature(make(url, body=body).result, "a.test", url, 1, kit.config)
    assert soft is not None and (soft.status, soft.title) == (200, "Oops") and soft.soft
    gone = probe_signature(
        make(url, status=None, error="timeout").result, "a.test", url, 2, kit.config
    )
    assert gone is not None and gone.status is None and gone.answer.status == 0
