"""The fleet's event outbox on a real PostgreSQL: written in the fenced commit, exported
once each in commit order to one ``events.jsonl``, readable by search's log reader.

Oracles: a second writer holding a newer epoch (the fence), a transaction held open
while a later one commits (the cursor), a torn export (the exactly-once repair), and
the schema of :mod:`lookup.kit.crawlevents`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lookup.crawler.fleet import export_events
from lookup.crawler.output import read_events
from lookup.crawler.partitions import Fence, FencedOut, current_fence
from lookup.crawler.store_pg import PgCrawlStore
from lookup.kit.crawlevents import InvalidEvent, event_errors
from lookup.search.events import EventLogReader


def fetched(n: int, content: str = "a") -> dict[str, object]:
    return {
        "type": "PageFetched", "url": f"http://a.test/{n}", "urlHash": f"h{n}",
        "fetchedAt": "2026-12-04T20:00:00Z", "httpStatus": 200,
        "contentHash": "sha256:" + content * 64, "simhash": "0x1f",
        "storageKey": f"w1/warc/crawl-00001.warc.gz#{n}", "outLinks": 0, "changed": True,
        "title": f"page {n}",
    }  # fmt: skip


def removed(n: int) -> dict[str, object]:
    return {
        "type": "PageRemoved",
        "url": f"http://a.test/{n}",
        "urlHash": f"h{n}",
        "fetchedAt": "2026-12-04T20:00:01Z",
        "httpStatus": 404,
        "reason": "gone",
    }


def fenced_write(store: PgCrawlStore, epoch: int, events: list[dict[str, object]]) -> int:
    token = current_fence.set(Fence(1, epoch))
    try:
        with store.transaction():
            return store.add_events(events)
    finally:
        current_fence.reset(token)


def test_a_fenced_out_writer_records_no_event_and_a_refetch_is_deduplicated(
    postgres_db: str, tmp_path: Path
) -> None:
    old = PgCrawlStore(postgres_db, partitions=4, worker="old")
    new = PgCrawlStore(postgres_db, partitions=4, worker="new")
    exporter = PgCrawlStore(postgres_db)
    try:
        assert old.grant_partition(1, 10, "old", 1.0)
        assert fenced_write(old, 10, [fetched(1)]) == 1
        assert new.grant_partition(1, 12, "new", 2.0)
        with pytest.raises(FencedOut):
            fenced_write(old, 10, [fetched(2)])  # the stale owner's page in flight
        assert fenced_write(new, 12, [fetched(1)]) == 0  # same URL, same content: skipped
        assert fenced_write(new, 12, [fetched(2)]) == 1  # the new owner's refetch
        assert fenced_write(new, 12, [fetched(1, "b")]) == 1  # changed: a new event
        assert fenced_write(new, 12, [removed(1)]) == 1
        assert fenced_write(new, 12, [fetched(1, "a")]) == 1  # back to the first: kept
        with pytest.raises(InvalidEvent):
            fenced_write(new, 12, [{**fetched(3), "httpStatus": 500}])
        assert export_events(exporter, tmp_path) == 5
        events = read_events(tmp_path / "events.jsonl")
        assert [(e["urlHash"], e["type"]) for e in events] == [
            ("h1", "PageFetched"), ("h2", "PageFetched"), ("h1", "PageFetched"),
            ("h1", "PageRemoved"), ("h1", "PageFetched"),
        ]  # fmt: skip
        assert all(event_errors(e) == [] for e in events)
        assert [(w, e) for _l, w, e in old.outbox_rows()] == [("old", 10)] + [("new", 12)] * 4
        # search reads the fleet's log as it reads an embedded crawl's
        assert [ev.url for ev, _pos in EventLogReader(tmp_path).read()] == [
            str(e["url"]) for e in events
        ]
    finally:
        old.close()
        new.close()
        exporter.close()


def test_the_export_misses_no_late_commit_and_writes_each_row_once(
    postgres_db: str, tmp_path: Path
) -> None:
    early = PgCrawlStore(postgres_db, partitions=4, worker="w1")
    late = PgCrawlStore(postgres_db, partitions=4, worker="w2")
    exporter = PgCrawlStore(postgres_db)
    try:
        with early.transaction():
            early.add_events([fetched(1)])  # its transaction id is taken first ...
            late.add_events([fetched(2)])  # ... a later one commits while it is open
            assert export_events(exporter, tmp_path) == 0  # nothing below the open one
        assert export_events(exporter, tmp_path) == 2
        assert export_events(exporter, tmp_path) == 0  # nothing twice
        late.add_events([fetched(3)])
        # an exporter killed after its write, before its cursor: the torn lines are cut
        path = tmp_path / "events.jsonl"
        with path.open("ab") as f:
            f.write(json.dumps(fetched(3)).encode() + b"\n" + b'{"type": "PageFet')
        assert export_events(exporter, tmp_path) == 1
        hashes = [e["urlHash"] for e in read_events(path)]
        assert sorted(hashes) == ["h1", "h2", "h3"]
        assert hashes[-1] == "h3"
    finally:
        early.close()
        late.close()
        exporter.close()
