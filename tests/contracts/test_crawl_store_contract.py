"""The crawl-state contract: what the crawl loop, ``--resume`` and the readers rely on.

Written once and run against every implementation of the writer/reader pair. Each test
writes through :class:`~lookup.crawler.state.CrawlWriter` and reads back through
:class:`~lookup.crawler.state.CrawlReader`, opened separately as the dashboard does. The
backends come from the seam's registry (:data:`lookup.crawler.state.BACKENDS`): a new
backend registers its scheme there, says below how to get a fresh, empty store of it
(``FRESH``), and must pass unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from lookup.crawler.state import (
    BACKENDS,
    ContentFacts,
    CrawlReader,
    CrawlStateError,
    CrawlWriter,
    CutRecord,
    CycleRecord,
    FetchedUrl,
    FetchRecord,
    FrontierHostState,
    HostPause,
    PageFacts,
    ProbeAnswer,
    RedirectRecord,
    RobotsRecord,
    Schedule,
    UrlFacts,
    UrlRecord,
    Validators,
    backend,
    crawl_state_url,
    open_crawl_reader,
    open_crawl_store,
)
from tests.contracts.seams import (
    Fresh,
    check_port_imports_no_backend,
    check_registered,
    fresh_url,
)

#: scheme -> how to get the URL of a fresh, empty store: a function of a temp dir, or the
#: name of the fixture that gives a new database on a real server.
FRESH: dict[str, Fresh] = {"sqlite": crawl_state_url, "postgresql": "postgres_db"}


@dataclass
class Crawl:
    url: str
    writer: CrawlWriter

    def reader(self) -> CrawlReader:
        return open_crawl_reader(self.url)


@pytest.fixture(params=list(BACKENDS))
def crawl(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Crawl]:
    url = fresh_url(request, tmp_path, FRESH)
    writer = open_crawl_store(url)
    try:
        yield Crawl(url, writer)
    finally:
        writer.close()


def test_every_registered_backend_is_a_writer_with_a_reader() -> None:
    check_registered(BACKENDS, backend, CrawlWriter)
    for scheme in BACKENDS:
        assert callable(getattr(backend(scheme), "open_reader", None)), scheme


def test_the_port_imports_no_backend() -> None:
    """``lookup.crawler.state`` names its backends; it imports one only when a URL asks."""
    check_port_imports_no_backend("lookup.crawler.state")


def test_the_factories_give_a_writer_and_a_reader(crawl: Crawl) -> None:
    assert isinstance(crawl.writer, CrawlWriter)
    with crawl.reader() as r:
        assert isinstance(r, CrawlReader)


def _url(n: int, state: str = "queued", host: str = "a.test", **kw: object) -> UrlRecord:
    return UrlRecord(f"h{n}", f"http://{host}/{n}", host, state, seq=n, **kw)  # type: ignore[arg-type]


def _fetched(n: int, outcome: str = "ok", state: str = "done", **facts: object) -> FetchedUrl:
    return FetchedUrl(
        f"h{n}", state, outcome, 0, 200, "2026-01-01T00:00:00Z", 1000.0 + n,
        fetches=1, facts=UrlFacts(**facts),  # type: ignore[arg-type]
    )  # fmt: skip


def _fetch(url: str, kind: str = "page", status: int | None = 200, outcome: str = "ok",
           started: float = 100.0, host: str = "a.test") -> FetchRecord:  # fmt: skip
    return FetchRecord(url, host, "127.0.0.1", kind, started, 0.01, status, outcome, 0.5)


# ---------------------------------------------------------------------------- the URL store


def test_a_url_written_reads_back_through_the_writer_and_the_reader(crawl: Crawl) -> None:
    w = crawl.writer
    rec = _url(1, depth=2, level=0, found_on="http://a.test/", discovered_at=5.0, cycle=3)
    with w.transaction():
        assert w.insert_url(rec, if_absent=False)
    assert w.url("h1") == rec
    assert w.url_exists("h1") and not w.url_exists("nope")
    assert w.url("nope") is None
    assert list(w.iter_url_hashes()) == ["h1"]
    assert w.max_seq() == 1
    with crawl.reader() as r:
        assert r.url("http://a.test/1") == rec
        assert r.url("http://a.test/none") is None
        assert r.count_states() == {"queued": 1}


def test_insert_if_absent_admits_a_url_once(crawl: Crawl) -> None:
    w = crawl.writer
    with w.transaction():
        assert w.insert_url(_url(1), if_absent=True)
        assert not w.insert_url(_url(1, state="cut"), if_absent=True)
    assert w.url("h1").state == "queued"  # type: ignore[union-attr]
    with pytest.raises(Exception), w.transaction():  # noqa: B017 - the engine's own error
        w.insert_url(_url(1), if_absent=False)  # "definitely new" but known: a bug, raises


def test_a_failed_transaction_writes_nothing(crawl: Crawl) -> None:
    w = crawl.writer
    with pytest.raises(RuntimeError), w.transaction():
        w.insert_url(_url(1), if_absent=False)
        with w.transaction():  # nested: joins the outer one
            w.add_cut(CutRecord("http://a.test/x", "a.test", "url-length"))
        raise RuntimeError("crash")
    assert w.url("h1") is None
    assert w.count_cuts() == {}


def test_a_fetch_outcome_keeps_the_facts_it_does_not_name(crawl: Crawl) -> None:
    w = crawl.writer
    with w.transaction():
        w.insert_url(_url(1, reason="deferred"), if_absent=False)
        w.lease_url("h1", 99.0)
    assert w.url("h1").state == "leased"  # type: ignore[union-attr]
    content = ContentFacts("c1", "0x01", 1, b"mh")
    with w.transaction():
        w.record_fetched(
            _fetched(
                1,
                page=PageFacts("Title", None, 3),
                content=content,
                validators=Validators('"e"', None),
                storage_key="warc:1",
                schedule=Schedule(60.0, 2000.0),
            )
        )
    got = w.url("h1")
    assert got is not None
    assert (got.state, got.outcome, got.lease_until, got.fetches) == ("done", "ok", None, 1)
    assert got.reason == "deferred"  # not named: kept
    assert (got.title, got.out_links, got.content_hash, got.minhash) == ("Title", 3, "c1", b"mh")
    assert (got.etag, got.storage_key, got.interval, got.next_due) == (
        '"e"',
        "warc:1",
        60.0,
        2000.0,
    )
    # A 304 names only its schedule: content and storage key stay.
    with w.transaction():
        w.record_fetched(_fetched(1, "not-modified", schedule=Schedule(90.0, 3000.0)))
        w.note_reason("h1", "→ elsewhere")
    got = w.url("h1")
    assert got is not None
    assert (got.outcome, got.content_hash, got.storage_key) == ("not-modified", "c1", "warc:1")
    assert (got.interval, got.reason) == (90.0, "→ elsewhere")
    with w.transaction():
        dup = ContentFacts("c1", "0x01", 0, None, "http://o/", "exact", 0.0)
        w.record_fetched(_fetched(1, "duplicate", content=dup))
    with crawl.reader() as r:
        [dup] = r.duplicates()
        assert (dup.dup_of, dup.dup_kind, dup.minhash) == ("http://o/", "exact", None)
        assert r.count_duplicate_kinds() == {"exact": 1}
        assert r.count_outcomes() == {"duplicate": 1}


def test_settled_urls_and_the_readers_lists(crawl: Crawl) -> None:
    w = crawl.writer
    with w.transaction():
        for n in range(1, 6):
            w.insert_url(_url(n), if_absent=False)
        w.settle_url("h1", "blocked", "robots-disallowed", "Disallow: /1")
        w.settle_url("h2", "failed", "crawler-error")
        w.settle_url("h3", "cut", "trap:duplicate-pattern", "pattern")
        w.record_fetched(_fetched(4, "noindex", reason="noindex (meta robots)"))
        w.record_fetched(_fetched(5, storage_key="warc:5"))
    with crawl.reader() as r:
        assert [(u.url, u.reason) for u in r.blocked()] == [("http://a.test/1", "Disallow: /1")]
        assert r.url("http://a.test/2").reason is None  # type: ignore[union-attr]
        assert [u.url for u in r.urls_with_outcome("noindex")] == ["http://a.test/4"]
        assert r.stored_pages() == ["http://a.test/5"]
        assert r.count_states() == {"blocked": 1, "failed": 1, "cut": 1, "done": 2}


# ------------------------------------------------------------------------------ resume


def test_resume_releases_stale_leases_and_rebuilds_the_queue_in_order(crawl: Crawl) -> None:
    w = crawl.writer
    with w.transaction():
        for n in (3, 1, 2):
            w.insert_url(_url(n), if_absent=False)
        w.lease_url("h1", 50.0)
        w.lease_url("h3", 50.0)
    with crawl.reader() as r:
        assert r.host_queues() == {"a.test": {"queued": 1, "leased": 2}}
    with w.transaction():
        assert w.release_stale_leases() == 2
        assert w.release_stale_leases() == 0
    queued = w.queued()
    assert [u.url_hash for u in queued] == ["h1", "h2", "h3"]  # discovery order
    assert all(u.lease_until is None for u in queued)


def test_resume_reads_back_originals_outcomes_and_deferred_urls(crawl: Crawl) -> None:
    w = crawl.writer
    with w.transaction():
        for n in range(1, 5):
            w.insert_url(_url(n), if_absent=False)
        w.insert_url(_url(9, "cut", outcome="trap:host-budget"), if_absent=False)
        w.record_fetched(_fetched(1, content=ContentFacts("c1", "0x0f", 1, b"m")))
        w.record_fetched(_fetched(2, "duplicate", content=ContentFacts("c1", "0x0f", 0, None)))
        w.record_fetched(_fetched(3, "soft-404", content=ContentFacts("c3", "0x00", 0, None)))
    assert [u.url_hash for u in w.originals()] == ["h1"]
    assert w.originals()[0].minhash == b"m"
    assert sorted(w.indexed_outcomes()) == [
        ("http://a.test/1", "ok"),
        ("http://a.test/2", "duplicate"),
    ]
    assert [u.url_hash for u in w.deferred()] == ["h9"]
    with w.transaction():
        w.readmit_deferred("h9", cycle=2, reason="admitted in cycle 2")
    got = w.url("h9")
    assert got is not None
    assert (got.state, got.outcome, got.cycle, got.attempts) == ("queued", None, 2, 0)
    assert w.deferred() == []


def test_recrawl_due_and_sitemap_hints(crawl: Crawl) -> None:
    w = crawl.writer
    with w.transaction():
        for n in (1, 2, 3):
            w.insert_url(_url(n), if_absent=False)
            w.record_fetched(_fetched(n, schedule=Schedule(10.0, 100.0 * n)))
        w.set_next_due("h3", None)
        w.set_sitemap_lastmod("h2", 1234.0)
    assert [u.url_hash for u in w.due_for_recrawl(250.0)] == ["h1", "h2"]
    assert [u.url_hash for u in w.due_for_recrawl(250.0, limit=1)] == ["h1"]
    assert w.url("h2").sitemap_lastmod == 1234.0  # type: ignore[union-attr]
    with w.transaction():
        w.requeue_due("h1", level=0, cycle=4)
    got = w.url("h1")
    assert got is not None and (got.state, got.level, got.cycle) == ("queued", 0, 4)


# ------------------------------------------------------------------ hosts, cycles, meta


def test_hosts_robots_probe_and_frontier_state(crawl: Crawl) -> None:
    w = crawl.writer
    with w.transaction():
        w.ensure_host("a.test", "127.0.0.2", "https")
        w.ensure_host("a.test", "127.0.0.9", "http")  # known: unchanged
        w.ensure_host("b.test", "127.0.0.3")
        w.count_host("a.test", "fetched")
        w.count_host("a.test", "fetched")
        w.count_host("a.test", "backoffs", 3)
        w.record_robots(
            "a.test", RobotsRecord("rules", 200, "User-agent: *", "", 10.0, 20.0, 1.5),
            HostPause(0.25, 11.0), "https://a.test/nope",
        )  # fmt: skip
        w.record_probe("a.test", "https://a.test/nope", 1, HostPause(0.3, 12.0), None)
        w.record_probe(
            "b.test",
            "http://b.test/nope",
            2,
            HostPause(0.3, 12.0),
            ProbeAnswer(200, "Oops", "not here", None),
        )
        w.write_frontier_state([FrontierHostState("a.test", 15.0, 4, 1, 0, 14.0)])
        w.set_host_pause("b.test", HostPause(0.75, 16.0))
    with pytest.raises(ValueError):
        w.count_host("a.test", "pages")  # type: ignore[arg-type]
    hosts = {h.host: h for h in w.hosts()}
    a = hosts["a.test"]
    assert (a.address, a.scheme, a.fetched, a.backoffs) == ("127.0.0.2", "https", 2, 3)
    assert (a.robots_state, a.crawl_delay, a.probe_url, a.probe_attempts) == (
        "rules",
        1.5,
        "https://a.test/nope",
        1,
    )
    assert a.probe_status is None  # asked, not answered yet
    assert (a.ready_at, a.queue, a.in_flight, a.state_at, a.last_delay) == (15.0, 4, 1, 14.0, 0.3)
    with crawl.reader() as r:
        assert [h.host for h in r.hosts()] == ["a.test", "b.test"]
        [probe] = r.host_probes()
        assert (probe.host, probe.probe_status, probe.probe_title) == ("b.test", 200, "Oops")
        assert {h.host: h.last_delay for h in r.hosts()}["b.test"] == 0.75


def test_cycles_budgets_and_meta(crawl: Crawl) -> None:
    w = crawl.writer
    with w.transaction():
        w.set_meta("seeds", ["http://a.test/"])
        w.set_meta("seeds", ["http://b.test/"])
        w.set_meta("agent", "LookupBot/1")
        w.add_cycle(CycleRecord(1, 10.0, "start"))
        w.add_cycle(CycleRecord(2, 20.0, "time"))
        w.bump_budget("a.test", 1)
        w.bump_budget("a.test", 1, 4)
        w.bump_budget("a.test", 2)
    assert w.get_meta("seeds") == ["http://b.test/"]
    assert w.get_meta("missing", 7) == 7
    assert w.cycles() == [CycleRecord(1, 10.0, "start"), CycleRecord(2, 20.0, "time")]
    assert w.budget_used(1) == {"a.test": 5}
    with crawl.reader() as r:
        assert r.meta() == {"seeds": ["http://b.test/"], "agent": "LookupBot/1"}
        assert r.count_cycles() == 2
        assert r.budget_used(2) == {"a.test": 1}
        assert r.budget_used(3) == {}


# ---------------------------------------------------------- cuts, redirects, fetch log


def test_cuts_redirects_and_the_fetch_log_with_their_counts(crawl: Crawl) -> None:
    w = crawl.writer
    with w.transaction():
        w.add_cut(CutRecord("http://a.test/x" * 30, "a.test", "url-length", "too long", at=1.0))
        w.add_cut(CutRecord("http://a.test/s?sid=1", "a.test", "session-param", at=2.0))
        w.add_cut(CutRecord("http://a.test/y", "a.test", "url-length", at=3.0))
        w.add_redirect(RedirectRecord("http://a.test/", "http://a.test/home", 301))
        w.add_fetch(_fetch("http://a.test/robots.txt", "robots", outcome="rules", started=5.0))
        w.add_fetch(_fetch("http://a.test/nope", "probe", 404, "probe:404", started=6.0))
        w.add_fetch(_fetch("http://a.test/", started=7.0))
        w.add_fetch(_fetch("http://a.test/b", status=503, outcome="retry:http-503", started=8.0))
        w.add_fetch(_fetch("http://a.test/c", status=None, outcome="retry:timeout", started=9.0))
        w.add_fetch(_fetch("http://b.test/", started=4.0, host="b.test"))
        w.add_fetch(_fetch("http://a.test/d", status=404, outcome="http-404", started=10.0))
    assert w.count_cuts() == {"url-length": 2, "session-param": 1}
    with crawl.reader() as r:
        assert [c.rule for c in r.cuts()] == ["url-length", "session-param", "url-length"]
        assert [c.at for c in r.cuts("url-length")] == [1.0, 3.0]
        assert r.cuts()[1].detail == ""
        assert r.count_cuts() == {"url-length": 2, "session-param": 1}
        log = r.fetch_log()
        assert [f.kind for f in log][:2] == ["robots", "probe"]
        assert log[2] == _fetch("http://a.test/", started=7.0)
        assert [f.started for f in r.fetch_log(order="started")] == sorted(f.started for f in log)
        assert r.count_requests() == (7, 1)
        assert r.count_pages() == 3  # 200, 200 on b.test, 404: answers; not 503, timeout
        assert r.count_pages(since=7.0) == 2
        last = r.last_fetches()
        assert last["a.test"].url == "http://a.test/d" and last["b.test"].url == "http://b.test/"


def test_waiting_on_robots_lists_queued_urls_of_unreadable_hosts(crawl: Crawl) -> None:
    w = crawl.writer
    with w.transaction():
        w.insert_url(_url(1), if_absent=False)
        w.insert_url(_url(2, host="b.test"), if_absent=False)
        w.ensure_host("a.test", "127.0.0.2")
        w.ensure_host("b.test", "127.0.0.3")
        w.record_robots(
            "a.test", RobotsRecord("disallow-all", 500, "", "HTTP 500", 1.0, 2.0, None),
            HostPause(1.0, 3.0), None,
        )  # fmt: skip
    with crawl.reader() as r:
        assert r.waiting_on_robots() == [("http://a.test/1", "HTTP 500", 500)]


# ------------------------------------------------------------------------ the factory


def test_the_reader_sees_what_a_running_writer_committed(crawl: Crawl) -> None:
    with crawl.reader() as r:
        assert r.count_states() == {}
        with crawl.writer.transaction():
            crawl.writer.insert_url(_url(1), if_absent=False)
        assert r.count_states() == {"queued": 1}


def test_factories_refuse_unknown_schemes_and_missing_or_damaged_state(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="sqlite"):
        open_crawl_store("redis://localhost/0")
    with pytest.raises(ValueError, match="sqlite"):
        open_crawl_reader("memory:")
    with pytest.raises(FileNotFoundError):
        open_crawl_reader(crawl_state_url(tmp_path / "none"))
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "crawl.sqlite").write_bytes(b"not a database at all " * 200)
    with pytest.raises(CrawlStateError), open_crawl_reader(crawl_state_url(damaged)) as r:
        r.meta()
