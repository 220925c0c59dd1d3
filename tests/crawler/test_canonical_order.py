"""A duplicate cluster under every fetch order: the crawl's report, its stored outcomes and
the inspector's clusters agree, and every duplicate sits under the cluster's representative.

The crawler's own judging and commit path (:meth:`Crawler._handle`) is fed the answers of
one exact-duplicate cluster in a chosen order, as the sandbox serves it: a mirror copy
(no ``rel=canonical``), the ``www.`` twin and a print view (both naming the docs page
canonical), and the docs page itself. The order decides whether the declared canonical
arrives after another member was already filed under the first-fetched copy.
"""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
from pathlib import Path

import pytest

from lookup.crawler import CrawlConfig, Crawler
from lookup.crawler.fetcher import FetchResult
from lookup.crawler.frontier import HostTurn
from lookup.crawler.inspector import duplicate_clusters, page_text
from lookup.crawler.store import CrawlWriter, UrlRecord
from lookup.crawler.store_pg import PgCrawlStore
from lookup.crawler.store_sqlite import SqliteCrawlStore
from lookup.kit.urlnorm import host_of, url_hash

ADDRESS = "127.0.0.2"
DOCS = "http://docs.test/lib/json.html"
WWW = "http://www.docs.test/lib/json.html"
PRINT = "http://docs.test/print/lib/json.html"
MIRROR = "http://mirror.test/python/3/lib/json.html"
TEXT = " ".join(f"json{i} encodes value{i % 11} into text{i % 17}" for i in range(80))


def _html(canonical: str | None) -> str:
    head = f'<link rel="canonical" href="{canonical}">' if canonical else ""
    return (
        f"<html><head><title>json</title>{head}</head>"
        f"<body><main><h1>json</h1><p>{TEXT}</p></main></body></html>"
    )


#: What each member answers: only the docs page itself and the mirror name no canonical.
PAGES = {DOCS: _html(None), WWW: _html(DOCS), PRINT: _html(DOCS), MIRROR: _html(None)}


async def _crawl_in_order(out: Path, order: tuple[str, ...]) -> dict[str, int]:
    """Admit the cluster, hand its answers to the crawler in ``order``; the report's counts."""
    hosts = {host_of(u): ADDRESS for u in PAGES}
    crawler = Crawler(CrawlConfig(out, hosts=hosts, strict_hosts=True, soft404_probe=False))
    crawler._open()
    try:
        await crawler._admit_many([(u, 1, None, "page", 0) for u in PAGES])
        for n, url in enumerate(order):
            row = crawler.store.url(url_hash(url))
            assert row is not None and row.state == "queued"
            entry = crawler._entry(row)
            body = PAGES[url].encode()
            heads = {"content-type": "text/html; charset=utf-8"}
            res = FetchResult(
                url, ADDRESS, 1000.0 + n, 0.01, 200, heads, list(heads.items()), body,
                "text/html", "utf-8", None, "",
            )  # fmt: skip
            lease = HostTurn(entry.host, ADDRESS, "page", entry, 1000.0 + n)
            await crawler._handle(entry, lease, res, row, 0.0, None)
        return crawler.report("done").duplicates
    finally:
        crawler._close()


@pytest.mark.parametrize("order", list(itertools.permutations(PAGES)))
def test_a_cluster_agrees_with_the_report_in_every_fetch_order(
    order: tuple[str, ...], tmp_path: Path
) -> None:
    reported = asyncio.run(_crawl_in_order(tmp_path, order))
    db = sqlite3.connect(tmp_path / "crawl.sqlite")
    try:
        rows = {r[0]: r[1:] for r in db.execute("SELECT url, outcome, dup_of, dup_kind FROM urls")}
    finally:
        db.close()
    # The declared canonical represents the cluster whatever the order ...
    assert rows[DOCS][0] == "ok", (order, rows)
    others = [u for u in PAGES if u != DOCS]
    assert {u: rows[u] for u in others} == {u: ("duplicate", DOCS, "exact") for u in others}
    # ... the report counts what the store holds ...
    assert reported == {"exact": len(others)}
    # ... and the inspector shows one cluster under it, each member reading back its text.
    clusters = duplicate_clusters(tmp_path)
    assert [c.original.url for c in clusters] == [DOCS]
    assert sorted(d.url for d in clusters[0].duplicates) == sorted(others)
    for url in PAGES:
        assert " ".join(page_text(tmp_path, url).text.split()).endswith(" ".join(TEXT.split()))


def _row(url: str, outcome: str, text: str, of: str | None = None, kind: str | None = None,
         score: float | None = None) -> UrlRecord:  # fmt: skip
    return UrlRecord(
        url_hash(url), url, host_of(url), "done", outcome=outcome, content_hash=text,
        dup_of=of, dup_kind=kind, dup_score=score,
    )  # fmt: skip


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_superseding_an_original_moves_its_cluster(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store: SqliteCrawlStore | PgCrawlStore = (
        SqliteCrawlStore(tmp_path / "crawl.sqlite")
        if backend == "sqlite"
        else PgCrawlStore(request.getfixturevalue("postgres_db"))
    )
    writer: CrawlWriter = store
    near = "http://news.test/story?ref=feed"
    other = "http://news.test/other"
    try:
        with writer.transaction():
            for r in (
                _row(MIRROR, "ok", "sha256:a"),
                _row(WWW, "duplicate", "sha256:a", MIRROR, "exact", 0.0),
                _row(near, "duplicate", "sha256:b", MIRROR, "simhash", 2.0),
                _row(DOCS, "ok", "sha256:d"),  # a near copy of the mirror's text
                _row(other, "duplicate", "sha256:c", "http://news.test/", "exact", 0.0),
            ):
                writer.insert_url(r, if_absent=False)
            writer.supersede(url_hash(MIRROR), "simhash", DOCS, 1.0)
        got = {
            u: (r.outcome, r.dup_of, r.dup_kind, r.dup_score)
            for u in (MIRROR, WWW, near, DOCS, other)
            if (r := writer.url(url_hash(u))) is not None
        }
    finally:
        store.close()
    assert got == {
        MIRROR: ("duplicate", DOCS, "simhash", 1.0),  # the old original, under its canonical
        WWW: ("duplicate", DOCS, "simhash", 1.0),  # its copy moves with it, as near as it
        near: ("duplicate", DOCS, "simhash", 2.0),  # keeps the measure it was found by
        DOCS: ("ok", None, None, None),
        other: ("duplicate", "http://news.test/", "exact", 0.0),  # another cluster: untouched
    }
