"""The count aggregator: decay math, folding without re-reading, reading logs."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.typeahead.aggregate import (
    USER_CAP,
    LogError,
    ScoreBoard,
    decay_factor,
    events_from_table,
    read_query_log,
    steady_state,
)

DAY = 86400


def test_decay_factors() -> None:
    assert decay_factor(DAY) == pytest.approx(0.906, abs=5e-4)
    assert decay_factor(3600) == pytest.approx(0.5 ** (1 / 168))
    assert decay_factor(3600) ** 24 == pytest.approx(decay_factor(DAY))


def test_steady_state_and_half_life_from_the_seed() -> None:
    # 10,000 searches every day settle near 106,000 ...
    assert steady_state(10_000) == pytest.approx(106_000, rel=0.005)
    board = ScoreBoard()
    rows = {"ts": [], "market": [], "query": [], "user_id": []}
    for day in range(200):
        for u in range(10):  # 10 users × 1,000 searches = 10,000 a day (weights below)
            rows["ts"].append(day * DAY + u)
            rows["market"].append("en-IN")
            rows["query"].append("ipl")
            rows["user_id"].append(f"u{u}")
    batch = events_from_table(pa.table(rows))
    scores = board.market("en-IN")
    scores.fold(batch)
    assert scores.score[0] * 1000 == pytest.approx(steady_state(10_000), rel=1e-6)
    # ... and halve after seven days of silence
    before = scores.score[0]
    quiet = events_from_table(
        pa.table({"ts": [206 * DAY], "market": ["en-IN"], "query": ["other"], "user_id": ["x"]})
    )
    scores.fold(quiet)
    assert scores.score[0] == pytest.approx(before * 0.5, rel=1e-9)


events_st = st.lists(
    st.tuples(st.integers(0, 20 * DAY), st.sampled_from(["a", "b", "c", "d"]),
              st.integers(0, 6), st.booleans()),
    min_size=1,
    max_size=80,
)  # fmt: skip


def table_of(events) -> pa.Table:  # type: ignore[no-untyped-def]
    return pa.table(
        {
            "ts": [e[0] for e in events],
            "market": ["en-IN"] * len(events),
            "query": [e[1] for e in events],
            "user_id": [f"user{e[2]}" for e in events],
            "is_bot": [e[3] for e in events],
        }
    )


@settings(max_examples=80, deadline=None)
@given(events_st, st.sampled_from([DAY, 3600]), st.sampled_from([0.0, 0.25]))
def test_fold_equals_the_closed_form(events, period: int, bot_weight: float) -> None:  # type: ignore[no-untyped-def]
    board = ScoreBoard(period_s=period)
    board.fold(events_from_table(table_of(events)), bot_weight=bot_weight)
    st_ = board.markets["en-IN"]
    f = decay_factor(period)
    last = max(e[0] for e in events) // period
    for q in {e[1] for e in events}:
        want = sum(
            (bot_weight if bot else 1.0) * f ** (last - ts // period)
            for ts, qq, _, bot in events
            if qq == q
        )
        got = st_.score[st_.queries.index(q)]
        assert got == pytest.approx(want, rel=1e-9, abs=1e-12)
        humans = {u for ts, qq, u, bot in events if qq == q and not bot}
        assert st_.users[st_.queries.index(q)] == min(len(humans), USER_CAP)


@settings(max_examples=60, deadline=None)
@given(events_st, st.integers(0, 80))
def test_folding_in_two_batches_equals_one(events, cut: int) -> None:  # type: ignore[no-untyped-def]
    events = sorted(events)
    cut = min(cut, len(events))
    whole = ScoreBoard()
    whole.fold(events_from_table(table_of(events)))
    split = ScoreBoard()
    first, second = events[:cut], events[cut:]
    if first:
        split.fold(events_from_table(table_of(first)))
    if second:
        # hand over the whole log again: what was folded already is skipped
        split.fold(events_from_table(table_of(events)))
    if first and second and second[0][0] == first[-1][0]:
        return  # same-second boundary: the second batch's overlap is skipped by design
    a, b = whole.markets["en-IN"], split.markets["en-IN"]
    for q in a.queries:
        i, j = a.queries.index(q), b.queries.index(q)
        assert b.score[j] == pytest.approx(a.score[i], rel=1e-9)
        assert b.users[j] == a.users[i]


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    events = [(i * 3000, q, i % 7, i % 11 == 0) for i, q in enumerate("abcabcddeeffa" * 20)]
    board = ScoreBoard()
    board.fold(events_from_table(table_of(events)))
    path = board.save(tmp_path / "state.npz")
    again = ScoreBoard.load(path)
    a, b = board.markets["en-IN"], again.markets["en-IN"]
    assert a.queries == b.queries
    assert np.array_equal(a.score, b.score) and np.array_equal(a.users, b.users)
    assert a.user_sets == b.user_sets and a.as_of == b.as_of and a.period == b.period
    assert np.array_equal(a.hour_traffic, b.hour_traffic)


def test_reads_csv_with_iso_and_epoch_timestamps(tmp_path: Path) -> None:
    csv = tmp_path / "log.csv"
    csv.write_text(
        "ts,market,query,user_id\n"
        "2026-10-01T10:00:00Z,en-IN,  IPhone   17 ,u1\n"
        "2026-10-01T15:30:00+05:30,en-IN,iphone 17,u2\n"
        "1790000000,hi-IN,मौसम,u3\n"
        "2026-10-02 09:00:00,en-IN,2026,u4\n",
        encoding="utf-8",
    )
    batch = read_query_log(csv)
    assert sorted(batch.queries) == sorted(["iphone 17", "मौसम", "2026"])  # "2026" stays text
    rows = [batch.queries[q] for q in batch.query]
    assert rows[0] == rows[1] == "iphone 17"  # normalised to one query
    ten_utc = int(datetime(2026, 10, 1, 10, tzinfo=UTC).timestamp())
    assert batch.ts.tolist()[:3] == [ten_utc, ten_utc, 1790000000]
    nine_utc = int(datetime(2026, 10, 2, 9, tzinfo=UTC).timestamp())
    assert batch.ts.tolist()[3] == nine_utc  # naive times are taken as UTC


def test_reads_parquet_with_timestamps(tmp_path: Path) -> None:
    t = pa.table(
        {
            "ts": pa.array([1_790_000_000_000, 1_790_000_060_000], pa.timestamp("ms", tz="UTC")),
            "market": ["en-IN", "en-IN"],
            "query": ["a", None],
            "user_id": ["u", "v"],
            "is_bot": [0, 1],
        }
    )
    pq.write_table(t, tmp_path / "log.parquet")
    batch = read_query_log(tmp_path / "log.parquet")
    assert batch.ts.tolist() == [1_790_000_000]
    assert batch.dropped == 1


@pytest.mark.parametrize(
    "body, message",
    [
        ("ts,market,query\n1,en-IN,a\n", "user_id"),
        ("ts,market,query,user_id\nyesterday,en-IN,a,u\n", "ISO 8601"),
        ("ts,market,query,user_id\n1,not a market!,a,u\n", "market"),
    ],
)
def test_bad_logs_get_clear_errors(tmp_path: Path, body: str, message: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(body)
    with pytest.raises(LogError, match=message):
        read_query_log(path)


def test_missing_file_and_wrong_type(tmp_path: Path) -> None:
    with pytest.raises(LogError, match="no such file"):
        read_query_log(tmp_path / "absent.csv")
    (tmp_path / "x.json").write_text("{}")
    with pytest.raises(LogError, match="csv or .parquet"):
        read_query_log(tmp_path / "x.json")


def test_hour_share_sums_to_one() -> None:
    events = [(h * 3600, "a", 0, False) for h in range(24)] * 2
    board = ScoreBoard()
    board.fold(events_from_table(table_of(events)))
    share = board.markets["en-IN"].hour_share()
    assert math.isclose(sum(share), 1.0)
