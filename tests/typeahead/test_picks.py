"""Suggestion picked vs typed out (issue 27 item 10): logged, weighed, reported.

``POST /v1/searches`` takes optional ``fromSuggestion``/``rank``/``prefix``; the search
log keeps them (old files and rows without them still parse); the build counts a picked
search ``typeahead_picked_weight`` and reports the pick rate per prefix (checked against
a brute-force count); the server counts the prefixes it answered with nothing.
"""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import httpx
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.kit.http import ApiError
from lookup.typeahead.aggregate import MarketScores, events_from_table, read_query_log
from lookup.typeahead.insights import ZeroHits, pick_report
from lookup.typeahead.manage import pick_of
from lookup.typeahead.pipeline import BuildConfig
from lookup.typeahead.trending import Pick, SearchLog
from tests.conftest import running_lookup
from tests.typeahead.conftest import Built

ADMIN = "picks-test-admin-token"


@pytest.mark.parametrize(
    "payload",
    [
        {"fromSuggestion": "yes"},
        {"fromSuggestion": True, "rank": 0},
        {"fromSuggestion": True, "rank": 11},
        {"fromSuggestion": True, "rank": True},
        {"fromSuggestion": True, "rank": 2.5},
        {"fromSuggestion": True, "prefix": 5},
        {"fromSuggestion": True, "prefix": "a\x00b"},
        {"rank": 2},
        {"fromSuggestion": False, "prefix": "ip"},
    ],
)
def test_bad_pick_fields_are_refused(payload: dict[str, object]) -> None:
    with pytest.raises(ApiError) as caught:
        pick_of(payload)
    assert caught.value.status == 400 and caught.value.code == "INVALID_REQUEST"


def test_pick_fields_are_optional() -> None:
    assert pick_of({"q": "x"}) is None
    assert pick_of({"fromSuggestion": False}) is None
    assert pick_of({"fromSuggestion": True}) == Pick(None, None)
    assert pick_of({"fromSuggestion": True, "rank": 3, "prefix": "  IPL"}) == Pick(3, "ipl")


def test_an_old_search_log_still_parses_and_is_widened_on_append(tmp_path: Path) -> None:
    path = tmp_path / "searches.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(SearchLog.OLD_COLUMNS)
        w.writerow([1_800_000_000, "en-IN", "ipl score", "u1", 0])
    old = read_query_log(path)
    assert len(old) == 1 and not old.picked.any()
    log = SearchLog(path, clock=lambda: 1_800_000_100.0)
    log.append("ipl live", "en-IN", "u2", pick=Pick(2, "ipl"))
    log.append("weather", "en-IN", "u3")
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert tuple(rows[0]) == SearchLog.COLUMNS
    assert rows[1][5:] == ["", "", ""] and rows[2][5:] == ["1", "2", "ipl"]
    batch = read_query_log(path)
    assert [batch.queries[q] for q in batch.query] == ["ipl score", "ipl live", "weather"]
    assert batch.picked.tolist() == [False, True, False]


def test_a_picked_search_counts_the_picked_weight() -> None:
    table = pa.table({
        "ts": [1_800_000_000] * 4, "market": ["en-IN"] * 4,
        "query": ["ipl live", "ipl live", "ipl live", "weather"],
        "user_id": ["a", "b", "c", "d"], "picked": ["1", "", "1", ""],
    })  # fmt: skip
    batch = events_from_table(table)
    state = MarketScores("en-IN")
    state.fold(batch, picked_weight=0.25)
    score = dict(zip(state.queries, state.score.tolist(), strict=True))
    assert score["ipl live"] == pytest.approx(1 + 2 * 0.25)
    assert score["weather"] == pytest.approx(1)
    assert BuildConfig().picked_weight == 0.5  # the setting's default


ROWS = st.lists(
    st.tuples(
        st.sampled_from(["en-IN", "hi-IN"]),
        st.sampled_from(["ipl live", "ipl score", "iphone", "india", "weather"]),
        st.booleans(),
        st.one_of(st.none(), st.integers(1, 10)),
        st.one_of(st.none(), st.sampled_from(["i", "ip", "ipl", "w", "ind"])),
    ),
    max_size=60,
)


@settings(max_examples=100, deadline=None)
@given(rows=ROWS)
def test_the_pick_rate_per_prefix_equals_a_brute_force_count(
    rows: list[tuple[str, str, bool, int | None, str | None]],
) -> None:
    report = pick_report(rows, top=1000)
    for market in {r[0] for r in rows}:
        mine = [r for r in rows if r[0] == market]
        got = {x["prefix"]: x for x in report[market]["prefixes"]}
        picks_at: dict[str, list[int | None]] = {}
        for _, q, picked, rank, prefix in mine:
            if picked:
                picks_at.setdefault(prefix or q[:3], []).append(rank)
        assert set(got) == set(picks_at)
        for p, ranks in picks_at.items():
            typed = sum(1 for _, q, picked, _, _ in mine if not picked and q.startswith(p))
            assert got[p]["picks"] == len(ranks) and got[p]["typedOut"] == typed
            assert got[p]["pickRate"] == pytest.approx(len(ranks) / (len(ranks) + typed), abs=1e-4)
            known = [r for r in ranks if r is not None]
            assert got[p]["meanRank"] == (round(sum(known) / len(known), 2) if known else None)
        assert report[market]["picked"] == sum(1 for r in mine if r[2])


def test_zero_hits_are_counted_and_bounded() -> None:
    hits = ZeroHits(cap=2)
    for p in ["zzq", "zzq", "qqq", "xyz", " "]:
        hits.add("en-IN", p)
    assert hits.top("en-IN") == [{"prefix": "zzq", "count": 2}, {"prefix": "qqq", "count": 1}]
    assert hits.overflow["en-IN"] == 1


def test_picks_and_zero_hits_over_http(built: Built, tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(built.data_dir, data)
    with running_lookup(data, {"LOOKUP_ADMIN_TOKEN": ADMIN}, timeout=120) as url, \
            httpx.Client(base_url=url, timeout=60) as c:  # fmt: skip
        picked = {"q": "ipl live score", "fromSuggestion": True, "rank": 2, "prefix": "ipl"}
        assert c.post("/v1/searches", json=picked).status_code == 202
        assert c.post("/v1/searches", json={"q": "ipl tickets"}).status_code == 202
        r = c.post("/v1/searches", json={"q": "x", "fromSuggestion": True, "rank": 99})
        assert r.status_code == 400 and r.json()["error"] == "INVALID_REQUEST"
        for _ in range(3):
            assert c.get("/v1/suggest", params={"q": "qzxv"}).json()["suggestions"] == []
        r = c.get("/v1/typeahead/insights")
        assert r.status_code == 200
        assert {"prefix": "qzxv", "count": 3} in r.json()["zeroHits"]
        assert c.get("/v1/typeahead/insights", params={"market": "xx-YY"}).status_code == 400

        admin = {"authorization": f"Bearer {ADMIN}"}
        assert c.post("/v1/typeahead/snapshots/build", headers=admin).status_code == 202
        state = {}
        for _ in range(600):
            state = c.get("/v1/typeahead/snapshots/build").json()
            if state.get("state") not in ("RUNNING", "QUEUED", "running", "queued"):
                break
            import time

            time.sleep(0.2)
        assert state.get("result", {}).get("picks") is not None, state
        picks = c.get("/v1/typeahead/insights").json()["picks"]
        ipl = next(x for x in picks["prefixes"] if x["prefix"] == "ipl")
        assert ipl == {"prefix": "ipl", "picks": 1, "typedOut": 1, "pickRate": 0.5, "meanRank": 2.0}
    rows = list(csv.reader(open(data / "typeahead" / "searches.csv", encoding="utf-8")))
    assert rows[0][5:] == ["picked", "rank", "prefix"]
    assert np.array([r[5] for r in rows[1:]]).tolist() == ["1", ""]
