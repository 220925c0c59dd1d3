"""Vector clocks against a brute-force oracle: a clock as the set of write events it has seen."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.blocks.kv.vclock import Order, compare, increment, merge, reconcile

ACTORS = ["a", "b", "c"]
clocks = st.dictionaries(st.sampled_from(ACTORS), st.integers(0, 4))


def events(clock: dict[str, int]) -> set[tuple[str, int]]:
    """The oracle's view: the writes ``(actor, i)`` a version has seen."""
    return {(actor, i) for actor, n in clock.items() for i in range(1, n + 1)}


def oracle_order(a: dict[str, int], b: dict[str, int]) -> Order:
    ea, eb = events(a), events(b)
    if ea == eb:
        return Order.EQUAL
    if ea < eb:
        return Order.BEFORE
    if ea > eb:
        return Order.AFTER
    return Order.CONCURRENT


@settings(max_examples=300, deadline=None)
@given(clocks, clocks)
def test_compare_equals_the_event_set_oracle(a: dict[str, int], b: dict[str, int]) -> None:
    assert compare(a, b) == oracle_order(a, b)


@settings(max_examples=200, deadline=None)
@given(st.lists(clocks, max_size=5))
def test_merge_is_the_union_of_events(cs: list[dict[str, int]]) -> None:
    union = set().union(*(events(c) for c in cs)) if cs else set()
    assert events(merge(cs)) == union


@settings(max_examples=100, deadline=None)
@given(clocks, st.sampled_from(ACTORS))
def test_increment_is_strictly_after(c: dict[str, int], actor: str) -> None:
    assert compare(increment(c, actor), c) == Order.AFTER


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(clocks, st.sampled_from("xyz")), max_size=6), st.randoms())
def test_reconcile_keeps_exactly_the_maximal_versions(
    raw: list[tuple[dict[str, int], str]], rnd
) -> None:  # noqa: ANN001
    versions = [{"clock": c, "value": v, "ts": 0.0} for c, v in raw]
    kept = reconcile(versions)
    # brute force: a version survives unless another's events strictly contain its own
    maximal = {
        frozenset(events(v["clock"]))
        for v in versions
        if not any(events(v["clock"]) < events(o["clock"]) for o in versions)
    }
    assert {frozenset(events(v["clock"])) for v in kept} == maximal
    assert len(kept) == len(maximal)  # one version per distinct clock
    for a, b in itertools.combinations(kept, 2):
        assert compare(a["clock"], b["clock"]) == Order.CONCURRENT
    shuffled = list(versions)
    rnd.shuffle(shuffled)
    assert reconcile(shuffled) == kept  # every replica ends with the same siblings


def test_a_zero_entry_is_no_entry_whatever_order_replicas_see_versions_in() -> None:
    """Found by the property above in CI: ``{"a": 0}`` and ``{}`` are one clock."""
    a = {"clock": {"a": 0}, "value": "x", "ts": 0.0}
    b = {"clock": {}, "value": "x", "ts": 0.0}
    assert reconcile([a, b]) == reconcile([b, a]) == [{"clock": {}, "value": "x", "ts": 0.0}]
