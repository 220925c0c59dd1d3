"""A crawl run as a child process and watched through its directory, judged from the
sandbox's own request log and the crawler's final report; and the dedup inspector on it.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from lookup.crawler import DEFAULT_USER_AGENT, Sandbox
from lookup.crawler.dedup import content_hash
from lookup.crawler.inspector import (
    compare_texts,
    duplicate_clusters,
    fetched_pages,
    host_probes,
    page_text,
    soft_404_pages,
)
from lookup.crawler.sandbox import LoggedRequest
from lookup.crawler.session import (
    CrawlSession,
    CrawlSettings,
    SandboxProcess,
    list_crawls,
    politeness_gaps,
    probe_sandbox,
    read_snapshot,
    sandbox_url,
    too_close,
)
from tests.crawler.conftest import DELAY_FACTOR, HOST_BUDGET, MIN_DELAY

SETTINGS = CrawlSettings(
    max_seconds=60,
    max_pages=5000,
    min_delay=MIN_DELAY,
    delay_factor=DELAY_FACTOR,
    timeout=1.0,
    host_budget=HOST_BUDGET,
)


@dataclass
class Watched:
    session: CrawlSession
    report: dict[str, Any]
    web: Sandbox


@pytest.fixture(scope="module")
def watched(web: Sandbox, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Watched]:
    out = tmp_path_factory.mktemp("session") / "crawl"
    session = CrawlSession.start(out, probe_sandbox(web.control_url), SETTINGS)
    try:
        assert session.wait(timeout=90) == 0, session.output()
        # The hung host's robots.txt is logged when the sandbox notices the crawler let go.
        time.sleep(0.5)
        yield Watched(session, json.loads((out / "report.json").read_text()), web)
    finally:
        session.kill()


def _host(name: str) -> str:
    return name.split(":", 1)[0]


def test_the_snapshot_agrees_with_the_crawlers_report(watched: Watched) -> None:
    snap = watched.session.snapshot()
    r = watched.report
    assert snap.finished and snap.stop_reason == r["stop_reason"]
    assert snap.pages == r["pages"] > 50
    assert snap.requests == r["requests"]
    assert snap.robots_fetches == r["robots_fetches"]
    assert snap.frontier == r["frontier"]
    assert snap.duplicates == r["duplicates"]
    assert snap.traps == r["traps"]
    assert snap.outcomes == r["outcomes"]
    assert snap.states == r["states"]
    assert snap.in_flight == 0
    assert sum(h.queued for h in snap.hosts) == snap.frontier


def test_every_request_is_in_the_sandboxs_log(watched: Watched) -> None:
    log = watched.session.request_log()
    snap = watched.session.snapshot()
    assert len(log) == snap.requests
    assert {e.user_agent for e in log} == {DEFAULT_USER_AGENT}
    per_origin = Counter((e.scheme, f"{e.host}:{e.port}") for e in log)
    db = sqlite3.connect(watched.session.out_dir / "crawl.sqlite")
    try:
        probes = dict(db.execute("SELECT host, probe_attempts FROM hosts"))
    finally:
        db.close()
    for h in snap.hosts:
        # Its pages, its robots.txt and its soft-404 probe (asked again after a 429/503).
        assert per_origin[(h.scheme, h.host)] == h.fetched + 1 + probes[h.host], h.host
    assert ("https", next(h.host for h in snap.hosts if h.scheme == "https")) in per_origin
    # Hosts whose robots.txt failed got that one request and nothing else.
    failing = {_host(h.host) for h in snap.hosts if h.robots_state == "disallow-all"}
    assert failing == {_host(n) for n in watched.web.manifest()["robots"]["failing_hosts"]}
    for e in log:
        if e.host in failing:
            assert e.path == "/robots.txt"


def test_next_allowed_time_is_the_frontiers_own(watched: Watched) -> None:
    snap = watched.session.snapshot()
    db = sqlite3.connect(watched.session.out_dir / "crawl.sqlite")
    try:
        for h in snap.hosts:
            started, took, delay = db.execute(
                "SELECT started, took, delay FROM fetches WHERE host = ? ORDER BY id DESC",
                (h.host,),
            ).fetchone()
            ready_at, state_at = db.execute(
                "SELECT ready_at, state_at FROM hosts WHERE host = ?", (h.host,)
            ).fetchone()
            assert h.last_request_at == started
            # What the frontier wrote, never earlier than the last answer plus its pause
            # (allowing for the two clocks the conversion reads).
            assert h.next_allowed_at == ready_at and h.frontier_at == state_at
            assert h.next_allowed_at >= started + took + delay - 1e-3
            if h.waiting_robots:  # parked until robots.txt is retried
                assert h.next_allowed_at >= started + 60
            assert h.wait(h.next_allowed_at - 1) == pytest.approx(1.0)
            assert h.wait(h.next_allowed_at + 5) == 0.0
    finally:
        db.close()


def test_the_log_of_this_crawl_excludes_other_agents_and_later_crawls(watched: Watched) -> None:
    before = len(watched.session.request_log())
    docs = next(h for h in watched.web.manifest()["hosts"] if h["key"] == "docs")
    port = watched.web.port
    for agent in ("OtherBot/1.0", DEFAULT_USER_AGENT):  # the second one comes later
        httpx.get(
            f"http://{docs['address']}:{port}/",
            headers={"Host": f"{docs['name']}:{port}", "User-Agent": agent},
            trust_env=False,
        )
    # Wait past the report's time + 1 s: a request by our agent then is another crawl's.
    time.sleep(
        max(0.0, (watched.session.out_dir / "report.json").stat().st_mtime + 1.2 - time.time())
    )
    httpx.get(
        f"http://{docs['address']}:{port}/",
        headers={"Host": f"{docs['name']}:{port}", "User-Agent": DEFAULT_USER_AGENT},
        trust_env=False,
    )
    after = watched.session.request_log()
    assert all(e.user_agent == DEFAULT_USER_AGENT for e in after)
    assert before <= len(after) <= before + 1  # at most the one sent within the window


def test_the_crawl_kept_every_pause_by_the_servers_clock(watched: Watched) -> None:
    snap = watched.session.snapshot()
    delays = {_host(h.host): h.crawl_delay for h in snap.hosts if h.crawl_delay}
    log = watched.session.request_log()
    # The 10 × fetch-time part of the rule is judged by the crawler's clock in
    # tests/crawler/test_crawl_sandbox.py; from the server's log of a crawl running in a
    # subprocess on a loaded machine, only the clock-independent floors are judged here.
    for by in ("host", "address"):
        gaps = politeness_gaps(
            log, min_delay=MIN_DELAY, delay_factor=0.0, crawl_delays=delays, by=by
        )
        assert sum(g.violations for g in gaps) == 0, [g for g in gaps if g.violations]
        assert sum(g.requests for g in gaps) == len(log)
        for g in gaps:
            if g.min_slack is not None:
                assert g.min_slack >= 0 and g.min_gap is not None and g.min_gap >= MIN_DELAY


def _req(seq: int, host: str, start: float, end: float, **kw: Any) -> LoggedRequest:
    fields: dict[str, Any] = dict(
        address="127.0.0.2", method="GET", target="/x", status=200, wall=start,
        bytes_sent=1, user_agent="t", aborted=False,
    )  # fmt: skip
    fields.update(kw)
    return LoggedRequest(seq=seq, host=host, start=start, end=end, **fields)


def test_politeness_gaps_count_every_gap_shorter_than_the_rule() -> None:
    log = [
        _req(0, "a", 0.0, 0.1, target="/robots.txt"),  # no Crawl-delay after robots.txt
        _req(1, "a", 0.4, 0.5),  # gap 0.3 ≥ max(0.2, 2 × 0.1)
        _req(2, "a", 1.0, 1.1),  # gap 0.5 < Crawl-delay 1.0: a violation
        _req(3, "a", 2.2, 2.7, aborted=True),  # gap 1.1 fine
        _req(4, "a", 2.71, 2.8),  # after an aborted answer: not judged
        _req(5, "b", 2.75, 2.8),  # same address as "a": 2.75 < 2.8 by address
    ]
    by_host = {
        g.key: g
        for g in politeness_gaps(log, min_delay=0.2, delay_factor=2.0, crawl_delays={"a": 1.0})
    }
    a = by_host["a"]
    assert (a.requests, a.violations) == (5, 1)
    assert a.min_gap == pytest.approx(0.3)
    assert a.min_slack == pytest.approx(0.5 - 1.0)
    assert by_host["b"].requests == 1 and by_host["b"].min_gap is None
    by_addr = politeness_gaps(
        log, min_delay=0.2, delay_factor=2.0, crawl_delays={"a": 1.0}, by="address"
    )
    assert [g.key for g in by_addr] == ["127.0.0.2"]
    assert by_addr[0].violations == 2  # the Crawl-delay one, and b right after a
    delays = {"a": 1.0}
    assert too_close(log, min_delay=0.2, delay_factor=2.0, crawl_delays=delays) == {2}
    by_address = too_close(log, min_delay=0.2, delay_factor=2.0, crawl_delays=delays, by="address")
    assert by_address == {2, 5}  # the requests the violations counted above
    with pytest.raises(ValueError):
        politeness_gaps(log, min_delay=0, delay_factor=0, by="port")


def test_progress_samples_grow_to_the_final_figures(watched: Watched) -> None:
    samples = watched.session.history()
    assert len(samples) >= 3
    pages = [s.pages for s in samples]
    assert pages == sorted(pages)
    assert [s.t for s in samples] == sorted(s.t for s in samples)
    final = watched.session.snapshot()
    assert samples[-1].pages == final.pages and samples[-1].frontier == final.frontier


def test_a_finished_crawl_reads_back_from_disk(watched: Watched, tmp_path: Path) -> None:
    again = CrawlSession.open(watched.session.out_dir)
    assert not again.running and again.sandbox_url == watched.web.control_url
    assert again.settings["min_delay"] == MIN_DELAY
    assert again.snapshot().pages == watched.report["pages"]
    assert list_crawls(watched.session.out_dir.parent) == [watched.session.out_dir]
    assert list_crawls(tmp_path / "nothing") == []
    with pytest.raises(FileNotFoundError):
        CrawlSession.open(tmp_path)
    with pytest.raises(FileNotFoundError):
        read_snapshot(tmp_path)
    (tmp_path / "crawl.sqlite").write_bytes(b"this is not a database" * 100)
    with pytest.raises(sqlite3.DatabaseError):
        read_snapshot(tmp_path)


# ------------------------------------------------------------------ the dedup inspector


def test_every_duplicate_sits_in_one_cluster_under_an_original(watched: Watched) -> None:
    out = watched.session.out_dir
    clusters = duplicate_clusters(out)
    db = sqlite3.connect(out / "crawl.sqlite")
    try:
        dups = dict(db.execute("SELECT url, dup_kind FROM urls WHERE outcome = 'duplicate'"))
        outcome = dict(db.execute("SELECT url, outcome FROM urls"))
    finally:
        db.close()
    members = [d.url for c in clusters for d in c.duplicates]
    assert sorted(members) == sorted(dups)
    for c in clusters:
        assert outcome[c.original.url] in ("ok", "unchanged")
        assert all(d.kind == dups[d.url] for d in c.duplicates)
    # Every planted near-duplicate the crawl fetched is clustered with its story.
    where = {d.url: c.original.url for c in clusters for d in c.duplicates}
    for planted in watched.web.manifest()["duplicates"]:
        if planted["kind"] != "near":
            continue
        urls = [m["url"] for m in planted["members"] if m["url"] in outcome]
        roots = {where.get(u, u) for u in urls}
        assert len(roots) == 1, urls


def test_page_text_is_the_text_the_crawler_hashed(watched: Watched) -> None:
    out = watched.session.out_dir
    db = sqlite3.connect(out / "crawl.sqlite")
    try:
        hashes = dict(db.execute("SELECT url, content_hash FROM urls WHERE content_hash NOT NULL"))
        kinds = dict(db.execute("SELECT url, dup_kind FROM urls WHERE dup_kind NOT NULL"))
    finally:
        db.close()
    pages = fetched_pages(out)
    assert len(pages) > 50
    revisits = 0
    for url in pages:
        page = page_text(out, url)
        assert content_hash(page.text) == hashes[url], url
        if page.record_type == "revisit":
            revisits += 1
            assert kinds[url] == "exact" and page.stored_as is not None
    assert revisits > 0
    with pytest.raises(KeyError):
        page_text(out, "http://nowhere.sandbox.test/")


def test_pair_measures_match_the_crawlers_verdicts(watched: Watched) -> None:
    out = watched.session.out_dir
    near = 0
    for cluster in duplicate_clusters(out):
        original = page_text(out, cluster.original.url).text
        for d in cluster.duplicates:
            r = compare_texts(original, page_text(out, d.url).text)
            if d.kind == "exact":
                assert r.identical and r.hamming == 0
            elif d.kind == "simhash":
                near += 1
                assert r.hamming == d.score and r.simhash_near and not r.identical
            else:
                near += 1
                assert r.minhash_jaccard == pytest.approx(d.score) and r.minhash_jaccard >= 0.8
    assert near > 0


def test_soft_404s_and_probes_read_back_as_the_crawler_stored_them(watched: Watched) -> None:
    from lookup.crawler import open_crawl_reader
    from lookup.crawler.soft404 import masked_words
    from lookup.crawler.store import crawl_state_url

    out = watched.session.out_dir
    pages = soft_404_pages(out)
    with open_crawl_reader(crawl_state_url(out)) as store:
        assert [p.url for p in pages] == [r.url for r in store.urls_with_outcome("soft-404")]
    assert watched.session.snapshot().soft_404s == len(pages) > 0
    probes = host_probes(out)
    soft_hosts = {h for h, p in probes.items() if p.soft}
    assert {h.split(".")[0] for h in soft_hosts} == {"shop", "calendar"}
    for page in pages:
        assert page.method == ("probe" if page.host in soft_hosts else "wording"), page
        text = page_text(out, page.url).text  # its copy is in the WARC files
        if page.method == "probe":
            probe = probes[page.host]
            assert masked_words(text, page.url) == masked_words(probe.text, probe.url)


# ------------------------------------------------------------------ starting and stopping


def test_stop_ends_a_crawl_gracefully_with_its_report(web: Sandbox, tmp_path: Path) -> None:
    slow = CrawlSettings(max_seconds=120, min_delay=0.5, delay_factor=DELAY_FACTOR, timeout=1.0)
    session = CrawlSession.start(tmp_path / "c", probe_sandbox(web.control_url), slow)
    try:
        deadline = time.monotonic() + 30
        while not (tmp_path / "c" / "crawl.sqlite").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.0)
        assert session.running
        session.stop()
        assert session.wait(timeout=30) == 0
        report = json.loads((tmp_path / "c" / "report.json").read_text())
        assert report["stop_reason"] == "stopped"
        assert session.failed() is None
        with pytest.raises(FileExistsError):
            CrawlSession.start(tmp_path / "c", probe_sandbox(web.control_url), slow)
    finally:
        session.kill()


def test_settings_are_bounded() -> None:
    assert "--max-seconds" in CrawlSettings().argv()
    for bad in (
        dict(max_seconds=0),
        dict(max_seconds=10_000),
        dict(max_pages=0),
        dict(min_delay=-1),
        dict(concurrency=0),
        dict(timeout=float("nan")),
    ):
        with pytest.raises(ValueError, match=next(iter(bad))):
            CrawlSettings(**bad)  # type: ignore[arg-type]


def test_probing_says_why_there_is_no_sandbox(
    web: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LOOKUP_SANDBOX_URL", raising=False)
    assert sandbox_url() == "http://127.0.0.1:8600"
    monkeypatch.setenv("LOOKUP_SANDBOX_URL", web.control_url + "/")
    assert sandbox_url() == web.control_url
    up = probe_sandbox()
    assert up.up and up.seeds == web.seeds() and len(up.hosts) == len(web.hosts())
    with socket_closed() as dead:
        assert probe_sandbox(dead).problem == "nothing is listening there"
    assert "loopback" in (probe_sandbox("http://192.0.2.1:8600").problem or "")
    assert "http://" in (probe_sandbox("ftp://127.0.0.1:8600").problem or "")
    # A web server that is not a sandbox's control address.
    docs = web.hosts()[next(iter(web.hosts()))]
    not_sandbox = probe_sandbox(f"http://{docs}:{web.port}")
    assert not not_sandbox.up and "404" in (not_sandbox.problem or "")
    with pytest.raises(RuntimeError, match="no sandbox"):
        CrawlSession.start(Path("/nonexistent/never"), not_sandbox)


class socket_closed:  # noqa: N801 - used as a context manager
    """A loopback URL where nothing listens."""

    def __enter__(self) -> str:
        from lookup.kit.ports import free_port

        return f"http://127.0.0.1:{free_port()}"

    def __exit__(self, *exc: object) -> None:
        return None


def test_a_sandbox_process_starts_answers_and_stops(tmp_path: Path) -> None:
    sandbox = SandboxProcess(tmp_path / "sandbox.log", size="small", crawl_delay=0.05)
    try:
        sandbox.start()
        probe = probe_sandbox(sandbox.url)
        assert probe.up and probe.manifest["port"] == sandbox.port
        assert probe.manifest["robots"]["crawl_delay"]
    finally:
        sandbox.stop()
    assert not sandbox.running
    assert not probe_sandbox(sandbox.url).up
    with pytest.raises(ValueError):
        SandboxProcess(tmp_path / "x.log", size="huge")
