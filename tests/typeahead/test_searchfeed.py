"""The searches feed and trending windows in Redis (issue 26, fleet-wide trending).

* Oracle: :class:`RedisTrendingTracker` decides exactly what the in-memory
  :class:`TrendingTracker` decides on the same event sequence (hypothesis), and two
  trackers over one Redis are one tracker: a spike split between them trends at the
  single tracker's threshold, and ``sets_version`` moves in the process that saw none of it.
* The copier: every search appended to the stream lands in the build's CSV once, including
  a batch a dead copier took (claimed, ``XAUTOCLAIM``) and one it wrote but never
  acknowledged (skipped by its stream id); the next build reads the copy.
"""

from __future__ import annotations

import csv
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from lookup.typeahead.aggregate import read_query_log
from lookup.typeahead.searchfeed import open_search_feed, open_trending, scheme_of
from lookup.typeahead.searchfeed.file import FileSearchFeed
from lookup.typeahead.searchfeed.redis import COLUMNS, RedisSearchFeed
from lookup.typeahead.searchfeed.trending_redis import RedisTrendingTracker
from lookup.typeahead.trending import Pick, SearchLog, TrendingPolicy, TrendingTracker

from .conftest import Clock

SMALL = TrendingPolicy(window_s=300, bucket_s=60, floor=4, min_users=2, min_networks=2, ratio=2.0)
MARKETS = ("en-IN", "hi-IN")
QUERIES = ("ipl live", "ipl score", "rain delhi", "ab", "my password is x")


def _redis_tracker(server: Any, clock: Clock, policy: TrendingPolicy = SMALL) -> Any:
    url = f"{server.url}?prefix=t-{uuid.uuid4().hex[:10]}"
    return open_trending(url, policy, clock=clock, baseline=_baseline)


def _baseline(market: str, query: str, now: float) -> float:
    return 2.0 if query == "ipl score" else 0.0  # one query with a normal rate to beat


def test_schemes_pick_the_backends(tmp_path: Path) -> None:
    assert scheme_of("") == "file" and scheme_of("redis://127.0.0.1:1/0") == "redis"
    feed = open_search_feed("", tmp_path)
    assert isinstance(feed, FileSearchFeed)
    assert feed.path == tmp_path / "typeahead" / "searches.csv"
    assert type(open_trending("", SMALL)) is TrendingTracker
    with pytest.raises(ValueError, match="redis:"):
        open_search_feed("kafka://somewhere", tmp_path)


def test_the_gates_setting_sets_the_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    from lookup import settings as knobs
    from lookup.typeahead.searchfeed import policy_from_settings

    assert policy_from_settings() == TrendingPolicy()  # the default is today's policy
    monkeypatch.setenv("LOOKUP_TYPEAHEAD_TRENDING_GATES", "50/5/3")
    assert (policy_from_settings().floor, policy_from_settings().min_networks) == (50, 3)
    for bad in ("50/5", "50/0/3", "a/b/c"):
        monkeypatch.setenv("LOOKUP_TYPEAHEAD_TRENDING_GATES", bad)
        with pytest.raises(knobs.SettingError):
            policy_from_settings()


events = st.lists(
    st.tuples(
        st.integers(0, 90),  # seconds the clock moves first
        st.sampled_from(MARKETS),
        st.sampled_from(QUERIES),
        st.integers(0, 4),  # user
        st.integers(0, 3),  # network
    ),
    max_size=60,
)


SPIKE = [(1, "en-IN", "ipl live", i % 3, i % 2) for i in range(6)]  # trends


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seq=events)
@example(seq=SPIKE)
def test_redis_windows_decide_as_the_in_memory_tracker(redis_server: Any, seq: list[Any]) -> None:
    clock = Clock()
    memory = TrendingTracker(SMALL, clock=clock, baseline=_baseline)
    shared = _redis_tracker(redis_server, clock)
    if seq == SPIKE:  # the oracle is not vacuous: this one trends
        for step, market, query, user, network in seq:
            clock.advance(step)
            memory.record(query, market, f"u{user}", f"n{network}")
        assert [t.query for t in memory.trending("en-IN")] == ["ipl live"]
        memory = TrendingTracker(SMALL, clock=clock, baseline=_baseline)
    try:
        for i, (step, market, query, user, network) in enumerate(seq):
            clock.advance(step)
            assert memory.record(query, market, f"u{user}", f"n{network}") == shared.record(
                query, market, f"u{user}", f"n{network}"
            )
            if i % 7 == 0 or i == len(seq) - 1:
                for m in MARKETS:
                    assert shared.trending(m) == memory.trending(m)
                    assert shared.matching(m, "ipl") == memory.matching(m, "ipl")
                assert shared.window_count("en-IN", "ipl live") == memory.window_count(
                    "en-IN", "ipl live"
                )
    finally:
        shared.close()


def test_two_trackers_over_one_redis_are_one_tracker(redis_server: Any) -> None:
    clock = Clock()
    url = f"{redis_server.url}?prefix=t-{uuid.uuid4().hex[:10]}"
    a, b = (open_trending(url, SMALL, clock=clock) for _ in range(2))
    try:
        version = b.sets_version()
        for i in range(SMALL.floor - 1):  # one short of the floor, split between two
            (a if i % 2 else b).record("ipl live", "en-IN", f"u{i}", f"n{i}")
        clock.advance(SMALL.refresh_s)
        assert a.trending("en-IN") == b.trending("en-IN") == []
        a.record("ipl live", "en-IN", "u9", "n9")  # the floor, crossed in a only
        clock.advance(SMALL.refresh_s)
        assert [t.query for t in b.trending("en-IN")] == ["ipl live"]
        assert b.sets_version() != version  # b's cached answers go stale
        assert b.window_count("en-IN", "ipl live") == SMALL.floor
        # one user from many networks, split between the two: never trends
        for i in range(3 * SMALL.floor):
            (a if i % 2 else b).record("rain delhi", "en-IN", "same", f"n{i}")
        clock.advance(SMALL.refresh_s)
        assert "rain delhi" not in {t.query for t in b.trending("en-IN")}
    finally:
        a.close()
        b.close()


def test_the_refresher_keeps_suggest_reads_off_redis(redis_server: Any) -> None:
    tracker = _redis_tracker(redis_server, Clock())
    assert isinstance(tracker, RedisTrendingTracker)
    tracker.start()
    try:
        calls = []
        tracker._window = lambda **kw: calls.append(kw) or []  # type: ignore[method-assign]
        for _ in range(50):
            tracker.sets_version()
            tracker.matching("en-IN", "ip")
        assert calls == []  # reads use the sets the background thread computed
    finally:
        tracker.close()


def _feed(server: Any, path: Path, stream: str, **kw: Any) -> RedisSearchFeed:
    url = f"{server.url}?stream={stream}"
    feed = RedisSearchFeed.from_url(url, copy_to=path)
    if kw:
        feed.claim_idle_ms = int(kw["claim_idle_s"] * 1000)
    return feed


def _events(path: Path) -> list[str]:
    with open(path, newline="", encoding="utf-8") as f:
        return [row["event"] for row in csv.DictReader(f)]


def test_the_copy_is_what_the_build_reads(redis_server: Any, tmp_path: Path) -> None:
    path = tmp_path / "typeahead" / "searches.csv"
    SearchLog(path, clock=lambda: 1_800_000_000.0).append("old one", "en-IN", "u0")
    feed = _feed(redis_server, path, f"s-{uuid.uuid4().hex[:8]}")
    try:
        for i in range(5):
            feed.append(f"query {i}", "en-IN", f"user{i}", pick=Pick(2, "qu") if i == 0 else None)
        feed.append("a bot", "hi-IN", "crawler", is_bot=True)
        assert feed.copy_once() == 6
        assert feed.copy_once() == 0
        assert feed.client.xlen(feed.stream) == 0  # copied entries leave the stream
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        assert tuple(rows[0]) == COLUMNS  # the old file widened in place
        assert [r["query"] for r in rows] == ["old one", *(f"query {i}" for i in range(5)), "a bot"]
        assert (rows[1]["picked"], rows[1]["rank"], rows[1]["prefix"]) == ("1", "2", "qu")
        assert rows[-1]["is_bot"] == "1" and rows[1]["user_id"] != "user0"  # hashed
        batch = read_query_log(path)
        assert len(batch) == 7
        feed.start()  # the background copier: a clean stop leaves the group
        feed.append("late one", "en-IN", "u9")
        deadline = time.monotonic() + 30
        while "late one" not in path.read_text(encoding="utf-8"):
            assert time.monotonic() < deadline, "the copier did not copy"
            time.sleep(0.05)
        feed.close()
        probe = redis.Redis.from_url(redis_server.url)
        names = {c["name"].decode() for c in probe.xinfo_consumers(feed.stream, feed.group)}
        probe.close()
        assert feed.consumer not in names
        SearchLog(path).append("embedded again", "en-IN", "u1")  # pads the event column
        assert len(read_query_log(path)) == 9
    finally:
        feed.close()


def test_a_dead_copiers_batch_is_copied_once(redis_server: Any, tmp_path: Path) -> None:
    path = tmp_path / "searches.csv"
    stream = f"s-{uuid.uuid4().hex[:8]}"
    dead_before, dead_after = (_feed(redis_server, path, stream) for _ in range(2))
    survivor = _feed(redis_server, path, stream, claim_idle_s=0.0)
    try:
        for i in range(4):
            survivor.append(f"q{i}", "en-IN", "u")
        # one copier takes two entries and dies before writing them
        dead_before._ensure_group()
        dead_before.client.xreadgroup(
            dead_before.group, dead_before.consumer, {stream: ">"}, count=2
        )
        # another takes the other two, writes them, and dies before XACK
        claimed, taken = dead_after._take(None)
        assert claimed == [] and len(taken) == 2
        dead_after._write(taken, dedup=False)
        assert survivor.copy_once() == 4  # claims all four; two of them were written
        assert survivor.skipped == 2
        events = _events(path)
        assert len(events) == len(set(events)) == 4
        pending = survivor.client.xpending(stream, survivor.group)
        assert pending["pending"] == 0
        assert survivor.client.hlen(survivor.markers) == 0  # the dead markers are gone
    finally:
        for feed in (dead_before, dead_after, survivor):
            feed.close()


def test_searches_answer_503_while_redis_is_down_and_suggest_keeps_answering(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fastapi.testclient import TestClient

    from lookup.kit.ports import free_port
    from lookup.server import create_app
    from lookup.typeahead.http import install
    from lookup.typeahead.serving import SuggestService

    monkeypatch.setenv("LOOKUP_TYPEAHEAD_SEARCHES_URL", f"redis://127.0.0.1:{free_port()}/0")
    service = SuggestService.from_data_dir(data_dir)
    app = create_app(data_dir, subsystems=[lambda m: install(m, service)])
    with TestClient(app) as c:
        r = c.post("/v1/searches", json={"q": "ipl live", "market": "en-IN"})
        assert r.status_code == 503, r.text
        assert r.json()["error"] == "UNAVAILABLE"
        assert c.get("/v1/suggest", params={"q": "ip", "market": "en-IN"}).status_code == 200
        assert c.get("/v1/typeahead/trending", params={"market": "en-IN"}).json()["terms"] == []


def test_entries_trimmed_before_anyone_copied_them_are_counted(
    redis_server: Any, tmp_path: Path
) -> None:
    stream = f"s-{uuid.uuid4().hex[:8]}"
    dead = _feed(redis_server, tmp_path / "s.csv", stream)
    survivor = _feed(redis_server, tmp_path / "s.csv", stream, claim_idle_s=0.0)
    try:
        for i in range(3):
            dead.append(f"q{i}", "en-IN", "u")
        dead._ensure_group()
        dead.client.xreadgroup(dead.group, dead.consumer, {stream: ">"}, count=3)
        dead.client.xtrim(stream, maxlen=0)  # retention ran before the claim
        assert survivor.copy_once() == 0
        assert survivor.status()["lostToTrimming"] == 3
    finally:
        dead.close()
        survivor.close()
