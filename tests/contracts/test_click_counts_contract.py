"""The ClickCounts contract, written once and run against every implementation.

What the click aggregator relies on: a consumer's offset that moves only with a fold,
a fold that commits everything it did or nothing (so a crash replays a batch and the
dedup records make it harmless), folds from several aggregators serialised on one
store, counters that add up, visitor sketches by day, the dedup records of producer
ranges and foreign ids, and the reads behind the stats endpoint and the scanner's hot
keys. The backends come from the seam's registry
(:data:`lookup.shortener.analytics.clickcounts.BACKENDS`): a new backend registers its
scheme there, says below how to get a fresh, empty store of it (``FRESH``), and must pass
unchanged.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lookup.kit.storeurl import sqlite_url
from lookup.shortener.analytics.clickcounts import (
    BACKENDS,
    ClickCounts,
    backend,
    open_click_counts,
)
from tests.contracts.seams import (
    Fresh,
    check_port_imports_no_backend,
    check_registered,
    fresh_url,
)

HOUR, DAY = 3_600, 86_400
T0 = 1_800_000_000 // DAY * DAY


def _sqlite(tmp_path: Path) -> str:
    return sqlite_url(tmp_path / "clickstats.sqlite3")


#: scheme -> how to get the URL of a fresh, empty store: a function of a temp dir, or the
#: name of the fixture that gives a new database on a real server.
FRESH: dict[str, Fresh] = {"sqlite": _sqlite, "postgresql": "postgres_db"}


@pytest.fixture(params=list(BACKENDS))
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return fresh_url(request, tmp_path, FRESH)


def test_every_registered_backend_is_click_counts() -> None:
    check_registered(BACKENDS, backend, ClickCounts)


def test_the_port_imports_no_backend() -> None:
    """``lookup.shortener.analytics.clickcounts`` names its backends; it imports one only
    when a URL asks (so neither does the analytics package above it)."""
    check_port_imports_no_backend("lookup.shortener.analytics.clickcounts")


@pytest.fixture
def open_counts(url: str) -> Iterator[Callable[[], ClickCounts]]:
    opened: list[ClickCounts] = []

    def factory() -> ClickCounts:
        counts = open_click_counts(url)
        opened.append(counts)
        return counts

    yield factory
    for counts in opened:
        counts.close()


@pytest.fixture
def counts(open_counts: Callable[[], ClickCounts]) -> ClickCounts:
    return open_counts()


def test_the_factory_gives_click_counts(counts: ClickCounts) -> None:
    assert isinstance(counts, ClickCounts)


def test_unknown_schemes_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="sqlite"):
        open_click_counts("cassandra://ring/stats")


def test_a_new_consumer_starts_at_zero(counts: ClickCounts) -> None:
    assert counts.consumer_state("clicks") == {
        "offset": 0,
        "counted": 0,
        "duplicates": 0,
        "lastClickTs": None,
    }


def test_a_fold_commits_counters_sketches_and_the_offset_together(counts: ClickCounts) -> None:
    with counts.fold("clicks") as batch:
        assert batch.offset() == 0
        batch.add_counts([("k1", "h", T0, "all", "", 2), ("k1", "m", T0, "all", "", 2)])
        batch.put_sketch("k1", T0, b"\x01\x02")
        batch.advance(7, 2, 1, T0 + 5.0)
    assert counts.consumer_state("clicks") == {
        "offset": 7,
        "counted": 2,
        "duplicates": 1,
        "lastClickTs": T0 + 5.0,
    }
    assert counts.counts("k1", "h", T0, T0 + HOUR) == [(T0, "all", "", 2)]
    assert counts.sketches("k1") == [b"\x01\x02"]
    with counts.fold("clicks") as batch:
        assert batch.offset() == 7
        batch.add_counts([("k1", "h", T0, "all", "", 3)])  # counters add up
        batch.advance(9, 3, 0, T0 + 1.0)  # an older click time never moves lastClickTs back
    state = counts.consumer_state("clicks")
    assert (state["offset"], state["counted"], state["lastClickTs"]) == (9, 5, T0 + 5.0)
    assert counts.counts("k1", "h", T0, T0 + HOUR) == [(T0, "all", "", 5)]


def test_a_failed_fold_leaves_nothing_behind(counts: ClickCounts) -> None:
    with pytest.raises(RuntimeError), counts.fold("clicks") as batch:
        batch.add_counts([("k1", "h", T0, "all", "", 2)])
        batch.add_seen_events([("cdn-1", T0)])
        batch.replace_ranges("p1", [(1, 10)], T0)
        batch.advance(5, 2, 0, T0)
        raise RuntimeError("the aggregator died mid-batch")
    assert counts.consumer_state("clicks")["offset"] == 0
    assert counts.counts("k1", "h", T0, T0 + HOUR) == []
    with counts.fold("clicks") as batch:
        assert batch.seen_event_ids(["cdn-1"]) == set()
        assert batch.seen_ranges("p1") == []


def test_dedup_records_of_ranges_and_foreign_ids(counts: ClickCounts) -> None:
    ids = [f"cdn-{i}" for i in range(1_200)]  # more than one query's worth of ids
    with counts.fold("clicks") as batch:
        batch.replace_ranges("p1", [(20, 30), (1, 10)], T0)
        batch.replace_ranges("p2", [(5, 5)], T0)
        batch.add_seen_events([(i, T0) for i in ids[::2]])
    with counts.fold("clicks") as batch:
        assert batch.seen_ranges("p1") == [(1, 10), (20, 30)]  # ordered by lo
        batch.replace_ranges("p1", [(1, 30)], T0 + 1)  # replaced, not added to
        assert batch.seen_ranges("p1") == [(1, 30)]
        assert batch.seen_ranges("p2") == [(5, 5)]
        assert batch.seen_event_ids(ids) == set(ids[::2])


def test_folds_of_several_aggregators_are_serialised(
    open_counts: Callable[[], ClickCounts],
) -> None:
    stores = [open_counts() for _ in range(2)]
    stores[0].consumer_state("clicks")
    start = threading.Barrier(8)

    def fold_one(i: int) -> None:
        start.wait()
        for _ in range(5):
            with stores[i % 2].fold("clicks") as batch:
                offset = batch.offset()  # read under the write lock: nobody moves it meanwhile
                batch.add_counts([("k", "h", T0, "all", "", 1)])
                batch.advance(offset + 1, 1, 0, T0)

    threads = [threading.Thread(target=fold_one, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    state = stores[1].consumer_state("clicks")
    assert (state["offset"], state["counted"]) == (40, 40)  # no fold lost
    assert stores[1].counts("k", "h", T0, T0 + HOUR) == [(T0, "all", "", 40)]


def test_consumers_are_independent(counts: ClickCounts) -> None:
    with counts.fold("a") as batch:
        batch.advance(3, 3, 0, T0)
    assert counts.consumer_state("a")["offset"] == 3
    assert counts.consumer_state("b")["offset"] == 0


def test_counts_are_read_by_key_grain_and_bucket_range(counts: ClickCounts) -> None:
    with counts.fold("clicks") as batch:
        batch.add_counts(
            [
                ("k1", "h", T0, "all", "", 1),
                ("k1", "h", T0 + HOUR, "all", "", 2),
                ("k1", "h", T0 + HOUR, "country", "IN", 2),
                ("k1", "m", T0, "all", "", 1),
                ("k2", "h", T0, "all", "", 9),
            ]
        )
    got = sorted(counts.counts("k1", "h", T0 + HOUR, T0 + 2 * HOUR))
    assert got == [(T0 + HOUR, "all", "", 2), (T0 + HOUR, "country", "IN", 2)]
    assert counts.counts("k1", "m", T0, T0 + 60) == [(T0, "all", "", 1)]
    assert counts.counts("nobody", "h", T0, T0 + DAY) == []


def test_sketches_by_day(counts: ClickCounts) -> None:
    with counts.fold("clicks") as batch:
        for day in range(3):
            batch.put_sketch("k1", T0 + day * DAY, bytes([day]))
        assert batch.sketch("k1", T0 + DAY) == b"\x01"
        assert batch.sketch("k1", T0 + 9 * DAY) is None
        batch.put_sketch("k1", T0, b"\x07")  # replaced
    assert sorted(counts.sketches("k1")) == [b"\x01", b"\x02", b"\x07"]
    assert sorted(counts.sketches("k1", T0 + DAY, T0 + 2 * DAY)) == [b"\x01"]
    assert counts.sketches("nobody") == []


def test_hot_keys_and_clicks_since_read_the_hourly_totals(counts: ClickCounts) -> None:
    with counts.fold("clicks") as batch:
        batch.add_counts(
            [
                ("busy", "h", T0 + HOUR, "all", "", 50),
                ("busy", "h", T0 + 2 * HOUR, "all", "", 25),
                ("tie-b", "h", T0 + HOUR, "all", "", 10),
                ("tie-a", "h", T0 + HOUR, "all", "", 10),
                ("old", "h", T0 - HOUR, "all", "", 999),
                ("busy", "h", T0 + HOUR, "human", "", 40),  # not the 'all' dimension
                ("busy", "m", T0 + HOUR, "all", "", 50),  # not the hourly grain
            ]
        )
    assert counts.top_keys(T0, 3) == [("busy", 75), ("tie-a", 10), ("tie-b", 10)]
    assert counts.top_keys(T0, 1) == [("busy", 75)]
    many = [f"cold-{i}" for i in range(700)] + ["busy", "old"]
    assert counts.clicks_since(many, T0 + 2 * HOUR) == {"busy": 25}


def test_forget_drops_old_dedup_records_and_minute_rows(counts: ClickCounts) -> None:
    with counts.fold("clicks") as batch:
        batch.add_seen_events([("old", T0), ("new", T0 + DAY)])
        batch.replace_ranges("p-old", [(1, 5)], T0)
        batch.replace_ranges("p-new", [(1, 5)], T0 + DAY)
        batch.add_counts(
            [
                ("k", "m", T0, "all", "", 1),
                ("k", "m", T0 + DAY, "all", "", 1),
                ("k", "h", T0, "all", "", 1),
            ]
        )
    counts.forget(T0 + HOUR, T0 + HOUR)
    with counts.fold("clicks") as batch:
        assert batch.seen_event_ids(["old", "new"]) == {"new"}
        assert batch.seen_ranges("p-old") == [] and batch.seen_ranges("p-new") == [(1, 5)]
    assert counts.counts("k", "m", T0, T0 + 2 * DAY) == [(T0 + DAY, "all", "", 1)]
    assert counts.counts("k", "h", T0, T0 + HOUR) == [(T0, "all", "", 1)]  # hours stay


def test_a_closed_store_reopens(counts: ClickCounts) -> None:
    with counts.fold("clicks") as batch:
        batch.advance(1, 1, 0, T0)
    counts.close()
    assert counts.consumer_state("clicks")["offset"] == 1
