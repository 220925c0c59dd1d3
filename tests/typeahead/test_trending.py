"""The speed layer: a new term trends within simulated minutes and fades as the window moves."""

from __future__ import annotations

from pathlib import Path

import pytest

from lookup.typeahead.serving import SuggestService
from lookup.typeahead.trending import TrendingPolicy, TrendingTracker

from .conftest import Clock

POLICY = TrendingPolicy(floor=300, ratio=5.0, min_users=20, refresh_s=0.0)


def burst(tracker_or_service, query: str, market: str, n: int, users: int, clock: Clock,
          minutes: int = 5) -> None:  # type: ignore[no-untyped-def]  # fmt: skip
    """``n`` searches from ``users`` distinct people spread over ``minutes`` simulated minutes."""
    record = getattr(tracker_or_service, "record_search", None) or tracker_or_service.record
    for i in range(n):
        if i and i % max(1, n // minutes) == 0:
            clock.advance(60)
        record(query, market, f"user-{i % users}")


def test_a_new_term_trends_and_fades() -> None:
    clock = Clock()
    tracker = TrendingTracker(POLICY, clock=clock)
    burst(tracker, "Ind vs Pak LIVE", "en-IN", 600, 60, clock)
    (term,) = tracker.trending("en-IN")
    assert term.query == "ind vs pak live" and term.count == 600
    assert term.users >= POLICY.min_users  # counted up to 2 × the threshold
    assert term.boost == pytest.approx(600 * 144)  # excess over ~0, projected to a day
    boosts = []
    for _ in range(12):
        clock.advance(60)
        terms = tracker.trending("en-IN")
        boosts.append(terms[0].boost if terms else 0.0)
    assert boosts == sorted(boosts, reverse=True) and boosts[-1] == 0.0  # fades with the window
    assert tracker.matching("en-IN", "ind") == []


@pytest.mark.parametrize(
    "n, users, query, why",
    [
        (200, 60, "ind vs pak live", "below the absolute floor"),
        (600, 5, "ind vs pak live", "too few distinct people (a brigade)"),
        (600, 60, "how to make a bomb", "blocked"),
        (600, 60, "call 9840012345 now", "private"),
    ],
)
def test_safety_checks_are_stricter(n: int, users: int, query: str, why: str) -> None:
    clock = Clock()
    tracker = TrendingTracker(POLICY, clock=clock)
    burst(tracker, query, "en-IN", n, users, clock)
    assert tracker.trending("en-IN") == [], why


def test_a_normally_busy_query_is_not_trending() -> None:
    clock = Clock()
    # "normal" is 400 searches per window at this hour: 600 is not 5× normal
    tracker = TrendingTracker(POLICY, clock=clock, baseline=lambda m, q, now: 400.0)
    burst(tracker, "weather", "en-IN", 600, 100, clock)
    assert tracker.trending("en-IN") == []
    busy = TrendingTracker(POLICY, clock=clock, baseline=lambda m, q, now: 50.0)
    burst(busy, "weather", "en-IN", 600, 100, clock)
    assert [t.query for t in busy.trending("en-IN")] == ["weather"]
    assert busy.trending("en-IN")[0].baseline == 50.0


def test_trending_terms_are_blended_into_suggestions(data_dir: Path) -> None:
    clock = Clock()
    service = SuggestService.from_data_dir(data_dir, clock=clock, trending=POLICY)
    before = service.lookup("in", "en-IN")
    assert "india vs pakistan final" not in before.suggestions
    burst(service, "india vs pakistan final", "en-IN", 900, 80, clock)
    during = service.lookup("in", "en-IN")
    assert during.suggestions[0] == "india vs pakistan final"  # score 0 + a big boost
    assert during.suggestions[1:] == before.suggestions[:9]  # deduplicated, still ten
    assert "india vs pakistan final" in service.lookup("india v", "en-IN").suggestions
    assert "india vs pakistan final" not in service.lookup("ip", "en-IN").suggestions
    # the hot blocklist applies to trending terms too
    service.blocklist.add(["pakistan final"])
    assert "india vs pakistan final" not in service.lookup("in", "en-IN").suggestions
    service.blocklist.remove("pakistan final")
    clock.advance(15 * 60)  # the window moves past the spike
    assert service.lookup("in", "en-IN").suggestions == before.suggestions


def test_an_existing_query_gets_score_plus_boost_without_duplicates(data_dir: Path) -> None:
    clock = Clock()
    service = SuggestService.from_data_dir(data_dir, clock=clock, trending=POLICY)
    base = service.lookup("s", "en-IN").suggestions
    tenth = base[-1]
    burst(service, tenth, "en-IN", 900, 80, clock)
    now = service.lookup("s", "en-IN").suggestions
    assert now[0] == tenth and now.count(tenth) == 1 and len(now) == 10


def test_searches_feed_the_next_build(data_dir: Path) -> None:
    clock = Clock()
    service = SuggestService.from_data_dir(data_dir, clock=clock)
    service.record_search("  New   Thing ", "hi-IN", "someone")
    log = (data_dir / "typeahead" / "searches.csv").read_text(encoding="utf-8").splitlines()
    assert log[0] == "ts,market,query,user_id,is_bot,picked,rank,prefix"
    ts, market, query, user, bot, *pick = log[1].split(",")
    assert pick == ["", "", ""]  # typed, not picked from the suggestions
    assert (int(ts), market, query, bot) == (int(clock.t), "hi-IN", "new thing", "0")
    assert user != "someone"  # hashed
