"""The canary's parts checked against independent answers: the client split (a stable
hash, its share against the binomial), the overlap of top results (brute force over
sets), the verdict rules, and the service's fallback when the candidate fails."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.typeahead.canary import Canary, CanaryPolicy, in_canary, overlap_at
from lookup.typeahead.serving import CanaryRefused, SuggestService

from .test_serving import publish_variant


@given(st.text(min_size=1, max_size=40), st.text(max_size=20), st.floats(0.01, 0.99))
def test_the_split_is_deterministic(identity: str, salt: str, share: float) -> None:
    assert in_canary(identity, salt, share) == in_canary(identity, salt, share)


@pytest.mark.parametrize("share", [0.05, 0.1, 0.5])
def test_the_split_takes_the_share_asked_for(share: float) -> None:
    n = 20_000
    taken = sum(in_canary(f"client-{i}", "v1", share) for i in range(n))
    sd = math.sqrt(n * share * (1 - share))
    assert abs(taken - n * share) < 5 * sd  # binomial: 5 standard deviations


def test_a_new_canary_takes_a_different_slice() -> None:
    one = {i for i in range(5_000) if in_canary(f"c{i}", "v1", 0.1)}
    two = {i for i in range(5_000) if in_canary(f"c{i}", "v2", 0.1)}
    assert len(one & two) < 0.3 * len(one)  # independent slices overlap by ~10 %


def test_a_bigger_share_contains_the_smaller_one() -> None:
    small = {i for i in range(5_000) if in_canary(f"c{i}", "v", 0.05)}
    big = {i for i in range(5_000) if in_canary(f"c{i}", "v", 0.2)}
    assert small <= big  # widening a canary keeps its clients where they were


words = st.lists(st.sampled_from("abcdefghij"), max_size=8, unique=True)


@given(words, words)
@settings(max_examples=200)
def test_overlap_against_brute_force(ours: list[str], theirs: list[str]) -> None:
    top_theirs = theirs[:5]
    if not top_theirs:
        expected = 1.0 if not ours else 0.0
    else:
        expected = sum(1 for t in top_theirs if t in ours[:5]) / len(top_theirs)
    assert overlap_at(ours, theirs) == pytest.approx(expected)


def canary(**policy: float) -> Canary:
    return Canary("en-IN", "new", "old", CanaryPolicy(**policy))  # type: ignore[arg-type]


def test_no_verdict_before_enough_requests() -> None:
    c = canary(min_requests=10)
    for _ in range(9):
        c.record(["a", "b"], ["a", "b"], 0.1, 0.1)
    assert c.verdict() is None
    c.record(["a", "b"], ["a", "b"], 0.1, 0.1)
    assert c.verdict() is not None and c.verdict()[0] == "promote"  # type: ignore[index]


def test_errors_roll_back_early() -> None:
    c = canary(min_requests=1_000, early_requests=20)
    for i in range(20):
        c.record(None if i % 5 == 0 else ["a"], ["a"], 0.1, 0.1)
    verdict = c.verdict()
    assert verdict is not None and verdict[0] == "rollback" and "error rate" in verdict[1]


def test_more_empty_answers_roll_back() -> None:
    c = canary(min_requests=100)
    for i in range(100):
        c.record([] if i < 10 else ["a"], ["a"], 0.1, 0.1)
    verdict = c.verdict()
    assert verdict is not None and verdict[0] == "rollback" and "empty" in verdict[1]


def test_a_slow_candidate_rolls_back_and_jitter_does_not() -> None:
    slow, jitter = canary(min_requests=50), canary(min_requests=50)
    for _ in range(50):
        slow.record(["a"], ["a"], 20.0, 1.0)  # 20× slower: a broken index
        jitter.record(["a"], ["a"], 2.5, 1.0)  # within the slack of a loaded machine
    assert slow.verdict()[0] == "rollback" and "p95" in slow.verdict()[1]  # type: ignore[index]
    assert jitter.verdict()[0] == "promote"  # type: ignore[index]


def test_policies_out_of_range_are_refused() -> None:
    for bad in ({"share": 0.0}, {"share": 1.0}, {"min_overlap": float("nan")}, {"min_requests": 0}):
        with pytest.raises(ValueError):
            CanaryPolicy(**bad)  # type: ignore[arg-type]


def test_a_failing_candidate_is_answered_from_the_current_snapshot(data_dir: Path) -> None:
    service = SuggestService.from_data_dir(data_dir)
    current = service.snapshot("en-IN")
    v = publish_variant(data_dir, "en-IN", ["zebra", *current.strings()], "20991231T000000Z-feed00")
    c = service.start_canary("en-IN", v, CanaryPolicy(share=0.5, min_requests=1_000))
    with pytest.raises(CanaryRefused):
        service.start_canary("en-IN", v)
    client = next(f"c{i}" for i in range(100) if c.takes(f"c{i}"))
    assert service.lookup("zeb", "en-IN", client=client).version == v

    class Broken:
        def __getattr__(self, name: str) -> object:
            raise RuntimeError("a corrupt candidate")

    service._candidates["en-IN"] = Broken()  # type: ignore[assignment]
    answer = service.lookup("a", "en-IN", client=client)
    assert answer.version == current.version and answer.suggestions
    assert c.errors == 1
    assert service.lookup("a", "en-IN").version == current.version  # no client: no canary
