"""The history checker on hand-made histories whose verdicts are known."""

from __future__ import annotations

from lookup.blocks.kv.checker import Op, lost_writes, seq_of, stale_reads, summary


def put(key: str, seq: int, t0: float, t1: float, outcome: str = "ok") -> Op:
    return Op("c", "put", key, f"{key}#{seq}", t0, t1, outcome)


def get(key: str, seen: list[int], t0: float, t1: float, outcome: str = "ok") -> Op:
    return Op("c", "get", key, None, t0, t1, outcome, [f"{key}#{s}" for s in seen])


def test_a_read_after_an_acknowledged_write_must_see_it() -> None:
    ops = [put("k", 1, 0, 1), put("k", 2, 2, 3), get("k", [1], 4, 5)]
    assert stale_reads(ops) == [ops[2]]


def test_a_read_overlapping_the_write_may_miss_it() -> None:
    ops = [put("k", 1, 0, 1), put("k", 2, 2, 6), get("k", [1], 4, 5)]
    assert stale_reads(ops) == []


def test_a_newer_unacknowledged_write_or_a_sibling_counts_as_fresh() -> None:
    ops = [
        put("k", 1, 0, 1),
        put("k", 2, 2, 3, "info"),
        put("k", 3, 3.5, 3.9),
        get("k", [2, 3], 4, 5),
        get("k", [2], 6, 7),
    ]
    assert stale_reads(ops) == [ops[4]]


def test_not_found_after_an_acknowledged_write_is_stale_and_failed_reads_are_not() -> None:
    ops = [put("k", 1, 0, 1), get("k", [], 2, 3), get("k", [], 2, 3, "fail")]
    assert stale_reads(ops) == [ops[1]]
    s = summary(ops)
    assert s["stale reads"] == 1 and s["get availability"] == 0.5


def test_lost_writes_compares_with_what_a_replica_holds() -> None:
    ops = [put("a", 1, 0, 1), put("a", 2, 1, 2), put("b", 1, 0, 1), put("c", 5, 0, 1, "fail")]
    assert lost_writes(ops, {"a": ["a#2"], "b": ["b#1"]}) == []
    assert lost_writes(ops, {"a": ["a#1"], "b": [None]}) == [ops[1], ops[2]]


def test_seq_of() -> None:
    assert seq_of("user:1#12") == 12 and seq_of(None) == -1 and seq_of("plain") == -1
