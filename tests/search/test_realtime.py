"""The real-time tier: fresh pages in seconds, exact handoff at the watermark, deletions at once."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from lookup.search import SearchService, Signals, build_index
from tests.search.conftest import sample_queries
from tests.search.corpus import BASE_TIME, CrawlWriter, Page

NOW = BASE_TIME + 60 * 86400


def fresh_pages(tag: str, n: int) -> list[Page]:
    return [
        Page(
            f"http://fresh.test/{tag}/{i}.html",
            f"Fresh {tag} {i}",
            f"brandnew{tag}{i} news about heap queues and sorted lists number {i}",
            links=["http://docs0.test/collections/ChainMap.html"],
        )
        for i in range(n)
    ]


@pytest.fixture
def live(crawl: CrawlWriter, tmp_path: Path) -> Iterator[tuple[CrawlWriter, Path, SearchService]]:
    index = tmp_path / "idx"
    build_index(crawl.root, index, shards=3)
    svc = SearchService(index)  # real-time tier on; polled by hand, no thread
    svc.reload()
    yield crawl, index, svc
    svc.close()


def _urls(svc: SearchService, q: str, **kw: object) -> list[str]:
    return [r["url"] for r in svc.search(q, limit=50, **kw)["results"]]


def test_new_pages_are_searchable_after_one_poll(live) -> None:  # type: ignore[no-untyped-def]
    crawl, _, svc = live
    before = svc.search("heap")["estimatedTotal"]
    crawl.fetch(fresh_pages("a", 3), at=NOW)
    assert _urls(svc, "brandnewa1") == []
    assert svc.tier.poll() == 3
    body = svc.search("brandnewa1", explain=True)
    assert [r["url"] for r in body["results"]] == ["http://fresh.test/a/1.html"]
    assert body["results"][0]["explain"]["tier"] == "realtime"
    assert "<em>brandnewa1</em>" in body["results"][0]["snippet"]
    assert svc.search("heap")["estimatedTotal"] == before + 3


def test_tiers_score_like_one_index_over_everything(
    live,
    tmp_path: Path,  # type: ignore[no-untyped-def]
    pages: list[Page],
) -> None:
    crawl, _, svc = live
    crawl.fetch(fresh_pages("b", 10), at=NOW)
    changed = Page(pages[0].url, "Changed title", "heap sorted rewritten text for the first page")
    crawl.fetch([changed], at=NOW + 5)
    crawl.gone(pages[1].url, at=NOW + 10)
    svc.tier.poll()
    whole = tmp_path / "whole"
    build_index(crawl.root, whole, shards=2)
    ref = SearchService(whole, realtime=False)
    for q in sample_queries(pages, 80, seed=3) + ["heap queues", "sorted lists", "brandnewb3"]:
        a = svc.search(q, now=NOW, signals=Signals.off())
        b = ref.search(q, now=NOW, signals=Signals.off())
        assert [r["url"] for r in a["results"]] == [r["url"] for r in b["results"]], q
        assert [r["score"] for r in a["results"]] == pytest.approx(
            [r["score"] for r in b["results"]], abs=1e-9
        )
        assert a["estimatedTotal"] == b["estimatedTotal"]
    ref.close()


def test_changed_and_gone_pages_hide_their_batch_versions(live, pages: list[Page]) -> None:  # type: ignore[no-untyped-def]
    crawl, _, svc = live
    old_title = pages[0].title
    assert pages[0].url in _urls(svc, old_title)
    crawl.fetch([Page(pages[0].url, "Totally new", "quuxification replaces everything")], at=NOW)
    crawl.gone(pages[1].url, at=NOW + 1)
    svc.tier.poll()
    assert _urls(svc, "quuxification") == [pages[0].url]
    assert pages[0].url not in _urls(svc, old_title)  # the old version is tombstoned
    assert pages[1].url not in _urls(svc, pages[1].title)
    # a page re-fetched with its batch content again is served by the batch, once
    crawl.fetch([pages[0]], at=NOW + 2)
    svc.tier.poll()
    assert Counter(_urls(svc, old_title))[pages[0].url] == 1
    assert _urls(svc, "quuxification") == []


def test_api_delete_hides_at_once_and_reaches_the_next_build(live, pages: list[Page]) -> None:  # type: ignore[no-untyped-def]
    crawl, index, svc = live
    target = pages[10]
    assert target.url in _urls(svc, target.title)
    assert svc.delete(url=target.url)["deleted"]
    assert target.url not in _urls(svc, target.title)  # no poll, no rebuild: at once
    assert not svc.delete(url="http://nowhere.test/")["deleted"]
    log = [json.loads(x) for x in (index / "deletions.jsonl").read_text().splitlines()]
    assert log[0]["url"] == target.url
    report = build_index(crawl.root, index)
    assert report.deleted == 1
    svc.reload()
    assert svc.tier.status()["pendingDeletions"] == 0  # the batch now holds the deletion
    assert target.url not in _urls(svc, target.title)


def test_a_delete_reaches_every_service_on_the_index_and_a_restarted_one(
    live, pages: list[Page]
) -> None:  # type: ignore[no-untyped-def]
    """Another process's service (a shard server, another API worker) hides a page deleted
    through this one at its next poll, and one started after the delete hides it at once."""
    _, index, svc = live
    other = SearchService(index)
    other.reload()
    try:
        target = pages[12]
        assert target.url in _urls(other, target.title)
        assert svc.delete(url=target.url)["deleted"]
        other.tier.poll()
        assert target.url not in _urls(other, target.title)
        assert other.tier.status()["pendingDeletions"] == 1
        svc.tier.poll()  # its own deletion, read back from the log, is not counted twice
        assert svc.tier.status()["pendingDeletions"] == 1
        late = SearchService(index)
        late.reload()
        assert target.url not in _urls(late, target.title)
        late.close()
    finally:
        other.close()


def test_watermark_handoff_has_no_duplicates_and_no_gaps(live, pages: list[Page]) -> None:  # type: ignore[no-untyped-def]
    crawl, index, svc = live
    first = fresh_pages("c", 6)
    crawl.fetch(first, at=NOW)
    svc.tier.poll()
    build_index(crawl.root, index)  # the batch catches up with the first batch of pages
    second = fresh_pages("d", 4)
    crawl.fetch(second, at=NOW + 100)  # arrives after the build, before the swap
    svc.tier.poll()
    old_version = svc.snapshot().version
    svc.reload()
    snap = svc.snapshot()
    assert snap.version == old_version + 1
    assert snap.realtime.state.docs == 4  # only what the new batch does not cover
    for i, p in enumerate(first + second):
        tag = "c" if i < 6 else "d"
        assert _urls(svc, f"brandnew{tag}{i % 6 if tag == 'c' else i - 6}") == [p.url]
    everything = _urls(svc, "heap queues sorted lists news", hedge=False)
    assert len(everything) == len(set(everything))
    total = svc.search(
        "brandnewc0 brandnewc1 brandnewc2 brandnewc3 brandnewc4 brandnewc5 "
        "brandnewd0 brandnewd1 brandnewd2 brandnewd3"
    )
    assert total["estimatedTotal"] == 10


def test_tier_tails_in_the_background(live) -> None:  # type: ignore[no-untyped-def]
    import time

    crawl, _, svc = live
    svc.tier.poll_seconds = 0.05
    svc.start()
    crawl.fetch(fresh_pages("e", 1), at=NOW)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not _urls(svc, "brandnewe0"):
        time.sleep(0.05)
    assert _urls(svc, "brandnewe0") == ["http://fresh.test/e/0.html"]
    assert svc.status()["realtime"]["ingested"] == 1


def _wait_for(check, seconds: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    import time

    deadline = time.monotonic() + seconds
    while not check() and time.monotonic() < deadline:
        time.sleep(0.02)


def test_a_failing_poll_is_counted_and_the_tier_keeps_polling(  # type: ignore[no-untyped-def]
    live, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _, _, svc = live

    def broken(max_events: int = 5000) -> int:
        raise OSError("crawl log unreadable")

    monkeypatch.setattr(svc.tier, "poll", broken)
    svc.tier.poll_seconds = 0.02
    with caplog.at_level("ERROR", logger="lookup.search"):
        svc.tier.start()
        _wait_for(lambda: svc.status()["realtime"]["poller"]["failures"] >= 2)
    realtime = svc.status()["realtime"]
    assert realtime["poller"]["failures"] >= 2 and realtime["poller"]["running"]
    assert realtime["poller"]["lastError"] == "OSError: crawl log unreadable"
    assert realtime["failed"] >= 2 and "search-realtime" in caplog.text
    svc.close()
    assert svc.tier is None


def test_the_watcher_opens_a_new_version_in_the_background(live) -> None:  # type: ignore[no-untyped-def]
    from lookup.kit.service import LiveService

    crawl, index, svc = live
    assert isinstance(svc, LiveService)
    svc.start()
    before = svc.snapshot().version
    crawl.fetch(fresh_pages("w", 2), at=NOW)
    build_index(crawl.root, index)
    _wait_for(lambda: svc.snapshot().version == before + 1)
    status = svc.status()
    assert status["version"] == before + 1
    assert status["reloader"]["running"] and status["reloader"]["failures"] == 0
    assert _urls(svc, "brandneww1") == ["http://fresh.test/w/1.html"]


def test_a_failing_version_check_is_counted(  # type: ignore[no-untyped-def]
    live, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, _, svc = live
    svc.start()

    def broken() -> str:
        raise PermissionError("CURRENT unreadable")

    monkeypatch.setattr(svc.location, "current_token", broken)
    _wait_for(lambda: svc.status()["reloader"]["failures"] >= 1)
    reloader = svc.status()["reloader"]
    assert reloader["failures"] >= 1 and reloader["running"]
    assert reloader["lastError"] == "PermissionError: CURRENT unreadable"
