"""The split click pipeline: the redirect server's process writes raw clicks (headers
unparsed, IP hashed) and the aggregator enriches them — with exactly the counts that
enriching up front would give."""

from __future__ import annotations

import json
import sqlite3
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lookup.kit.ids import load_or_create_secret
from lookup.shortener.analytics import (
    ClickAggregator,
    ClickAnalytics,
    ClickBuffer,
    ClickEnricher,
    ClickEvent,
    ClickShipper,
    MemoryClickLog,
    RawClick,
    SqliteClickLog,
    classify_agent,
)
from lookup.shortener.analytics.__main__ import main as aggregator_main
from lookup.shortener.analytics.aggregate import count_rows, event_dims
from lookup.shortener.analytics.events import (
    MAX_REFERER_LENGTH,
    MAX_UA_LENGTH,
    RawBatch,
    describe,
)
from lookup.shortener.model import ClickContext

SECRET = b"p" * 32
T0 = 1_800_000_000.0
IPHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1"
)
IPAD = (
    "Mozilla/5.0 (iPad; CPU OS 17_4 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1"
)
WINDOWS_CHROME = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 "
    "(KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36"
)
SLACKBOT = "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)"
GOOGLEBOT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"

_CLICKS = st.lists(
    st.tuples(
        st.sampled_from(["aaaaaa1", "bbbbbb2", "cc"]),
        st.floats(0, 7_200, allow_nan=False),
        st.sampled_from([None, "203.0.113.9", "198.51.100.7", "2001:db8::1"]),
        st.sampled_from([None, "", IPHONE, IPAD, WINDOWS_CHROME, SLACKBOT, GOOGLEBOT, "x" * 900]),
        st.sampled_from([None, "https://t.co/x", "https://www.news.example/a", "not a url"]),
        st.sampled_from([None, "IN", "de", "XX"]),
    ),
    max_size=80,
)


def _contexts(rows: list[tuple[Any, ...]]) -> list[ClickContext]:
    return [
        ClickContext(key, T0 + dt, ip, ua, ref, country) for key, dt, ip, ua, ref, country in rows
    ]


def _everything(agg: ClickAggregator, key: str) -> dict[str, Any]:
    stats = agg.stats(key, T0, T0 + 7_201, "minute")
    return {"series": stats["series"], "breakdowns": stats["breakdowns"], "totals": stats["totals"],
            "visitors": agg.unique_visitors(key)}  # fmt: skip


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=_CLICKS, batch=st.integers(1, 30))
def test_raw_pipeline_counts_what_enriching_up_front_counts(
    rows: list[tuple[Any, ...]], batch: int
) -> None:
    """Oracle: every click enriched at once (one step, in memory) and folded, against the
    real split — buffer → shipper (raw) → SQLite log → aggregator (enriches)."""
    contexts = _contexts(rows)
    with tempfile.TemporaryDirectory() as tmp:
        buffer = ClickBuffer(capacity=1_000)
        sqlite_log = SqliteClickLog(Path(tmp) / "log.sqlite3")
        shipper = ClickShipper(buffer, sqlite_log, ClickEnricher(SECRET), batch_size=batch)
        for ctx in contexts:
            assert buffer.offer(ctx)
        assert shipper.flush() == len(contexts)
        split = ClickAggregator(
            Path(tmp) / "split.sqlite3", sqlite_log, enricher=ClickEnricher(SECRET), batch_size=7
        )
        split.catch_up()

        oracle_enricher = ClickEnricher(SECRET)
        events = [oracle_enricher.enrich(f"e{i}", ctx) for i, ctx in enumerate(contexts)]
        memory_log = MemoryClickLog()
        memory_log.append(events)
        oracle = ClickAggregator(Path(tmp) / "oracle.sqlite3", memory_log)
        oracle.catch_up()
        for key in ("aaaaaa1", "bbbbbb2", "cc"):
            assert _everything(split, key) == _everything(oracle, key)
        assert split.consumer_state()["counted"] == len(contexts)
        split.close()
        oracle.close()
        sqlite_log.close()


def test_the_shipper_parses_nothing_and_writes_no_address(tmp_path: Path) -> None:
    """What runs in the redirect server's process: no user-agent parsing, no referrer or
    country work — and the log never sees the client's address."""
    buffer = ClickBuffer()
    click_log = SqliteClickLog(tmp_path / "log.sqlite3")
    shipper = ClickShipper(buffer, click_log, ClickEnricher(SECRET))
    long_ua = IPHONE + " " + "z" * 2_000
    long_ref = "https://ref.example/" + "q" * 5_000
    for i in range(50):
        buffer.offer(ClickContext("aaaaaa1", T0 + i, "203.0.113.9", long_ua, long_ref, "IN"))
    parses, describes = classify_agent.cache_info(), describe.cache_info()
    assert shipper.flush() == 50
    assert classify_agent.cache_info() == parses and describe.cache_info() == describes
    records = [record for _, record in click_log.read(0, 100)]
    assert all(type(r) is RawClick for r in records)
    first = records[0]
    assert first.event_id == f"{buffer.origin}-1" and records[-1].event_id == f"{buffer.origin}-32"
    assert first.ip_hash == ClickEnricher(SECRET).ip_hash("203.0.113.9") != "203.0.113.9"
    assert first.user_agent == long_ua[:MAX_UA_LENGTH] and first.country == "IN"
    assert first.referer == long_ref[:MAX_REFERER_LENGTH]
    stored = (
        sqlite3.connect(tmp_path / "log.sqlite3")
        .execute("SELECT group_concat(events) FROM click_batches")
        .fetchone()[0]
    )
    assert "203.0.113.9" not in stored


def test_the_log_round_trips_raw_clicks_and_events_side_by_side(tmp_path: Path) -> None:
    click_log = SqliteClickLog(tmp_path / "log.sqlite3")
    raw = RawClick("p-1", "k1", T0 + 0.125, "a" * 16, "bücher-agent \udcff", None, "IN")
    event = ClickEvent("cdn:9", "k1", T0 + 1.5, "IN", "mobile", "iOS", "Safari",
                       "t.co", "b" * 16, "c" * 16, "human")  # fmt: skip
    click_log.append([tuple(raw), event])  # the shipper's plain tuples, an edge's event
    assert [record for _, record in click_log.read(0, 10)] == [raw, event]
    assert [type(record) for _, record in click_log.read(0, 10)] == [RawClick, ClickEvent]


def test_an_external_aggregator_folds_what_the_server_shipped(
    make_app: Callable[..., Any], auth: dict[str, str], capsys: Any
) -> None:
    """``LOOKUP_SHORTENER_AGGREGATOR=external``: the server ships raw clicks and folds
    nothing in the background; ``python -m lookup.shortener.analytics --once`` folds them."""
    app = make_app(aggregator="external")
    analytics = app.shortener.analytics
    assert analytics.mode == "external"
    assert [t.name for t in analytics._tasks] == ["click-shipper"]
    key = app.client.post("/v1/links", json={"longUrl": "https://e.example/"}, headers=auth)
    key = key.json()["key"]
    visits = [{"User-Agent": IPHONE, "CF-IPCountry": "IN"}, {"User-Agent": SLACKBOT},
              {"User-Agent": GOOGLEBOT}]  # fmt: skip
    for headers in visits:
        assert app.client.get(f"/{key}", headers=headers, follow_redirects=False).status_code == 302
    analytics.shipper.flush()
    assert analytics.aggregator.consumer_state()["counted"] == 0  # nobody folded yet
    data_dir = app.shortener.config.data_dir
    assert aggregator_main(["--data-dir", str(data_dir), "--once"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["records"], report["counted"], report["duplicates"]) == (3, 3, 0)
    stats = app.client.get(f"/v1/links/{key}/stats?granularity=minute", headers=auth).json()
    assert stats["totals"] == {"clicks": 1, "bots": 1, "previews": 1, "total": 3}
    assert aggregator_main(["--data-dir", str(data_dir / "missing"), "--once"]) == 2


def test_the_aggregator_finds_the_shortener_secret_beside_its_stats(tmp_path: Path) -> None:
    """Without an explicit enricher, raw clicks are enriched with ``secret.key`` beside the
    stats file — the same visitor hashes as the server's own enricher."""
    secret = load_or_create_secret(tmp_path / "secret.key")
    click_log = MemoryClickLog()
    ctx = ClickContext("aaaaaa1", T0, "203.0.113.9", IPHONE, None, "IN")
    click_log.append([ClickEnricher(secret).raw("x-1", ctx)])
    agg = ClickAggregator(tmp_path / "clickstats.sqlite3", click_log)
    agg.catch_up()
    assert agg.enricher.enrich("x-1", ctx) == ClickEnricher(secret).enrich("x-1", ctx)
    assert agg.stats("aaaaaa1", T0, T0 + 60, "minute")["totals"]["clicks"] == 1
    agg.close()


def test_analytics_refuses_an_unknown_mode(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="aggregator must be one of"):
        ClickAnalytics(tmp_path, SECRET, aggregator="cluster")
    memory = ClickAnalytics(tmp_path, SECRET, aggregator="process", click_log=MemoryClickLog())
    assert memory.mode == "thread"  # another process cannot read an in-memory log


def test_a_raw_batch_implies_its_event_ids(tmp_path: Path) -> None:
    """A batch stores its producer and first sequence once; the ids are positional."""
    rows = [("k1", T0 + i, "h" * 16, IPHONE, None, "IN") for i in range(3)]
    batch = RawBatch.from_rows("0123456789ab", 0x1F, rows)
    assert batch.rows == rows and batch.columns[0] == ("k1", "k1", "k1")
    oracle = [RawClick(f"0123456789ab-{0x1F + i:x}", *row) for i, row in enumerate(rows)]
    assert list(batch) == oracle and batch[-1] == oracle[-1] and batch[1:] == oracle[1:]
    assert len(batch) == 3 and "3 clicks" in repr(batch)
    with pytest.raises(IndexError):
        batch[3]
    with pytest.raises(ValueError):
        RawBatch("p", 1, [("k",), (1.0, 2.0)] + [()] * 4)  # ragged columns
    with pytest.raises(ValueError):
        RawBatch("p", 1, [()] * 5)  # a column short
    click_log = SqliteClickLog(tmp_path / "log.sqlite3")
    click_log.append(batch)
    blob = sqlite3.connect(tmp_path / "log.sqlite3").execute("SELECT events FROM click_batches")
    assert blob.fetchone()[0].startswith('["0123456789ab",31,["k1","k1","k1"],')  # columns
    assert [record for _, record in click_log.read(0, 10)] == oracle
    memory = MemoryClickLog()
    memory.append(batch)
    assert memory.events() == oracle


def test_an_external_aggregators_server_ships_but_does_not_fold_at_shutdown(
    tmp_path: Path,
) -> None:
    analytics = ClickAnalytics(tmp_path, SECRET, aggregator="external", ship_interval_s=3_600)
    analytics.start()
    for i in range(20):
        analytics.buffer.offer(ClickContext("aaaaaa1", T0 + i, "203.0.113.9", IPHONE))
    analytics.stop()
    assert analytics.log.backlog(0) == 20  # shipped on the way out...
    assert analytics.aggregator.consumer_state()["counted"] == 0  # ...and left for the job
    analytics.close()


_EVENTS = st.lists(
    st.builds(
        lambda i, key, dt, agent, country, device, ref: ClickEvent(
            f"e{i}", key, T0 + dt, country, device, "iOS", "Safari", ref, "ip", "v", agent
        ),
        st.integers(0, 10**6),
        st.sampled_from(["aaaaaa1", "bbbbbb2"]),
        st.floats(0, 3 * 3_600, allow_nan=False),
        st.sampled_from(["human", "human", "bot", "preview"]),
        st.sampled_from(["IN", "US"]),
        st.sampled_from(["mobile", "desktop"]),
        st.sampled_from(["(direct)", "t.co"]),
    ),
    max_size=200,
)


@settings(max_examples=60, deadline=None)
@given(events=_EVENTS)
def test_columnar_counting_equals_adding_each_events_dims(events: list[ClickEvent]) -> None:
    """Oracle: one counter increment per event, dimension and grain, in plain Python."""
    want: Counter[tuple[str, str, int, str, str]] = Counter()
    for event in events:
        minute = int(event.ts // 60) * 60
        for dim, value in event_dims(event):
            want[(event.key, "m", minute, dim, value)] += 1
            want[(event.key, "h", minute - minute % 3_600, dim, value)] += 1
    rows = count_rows(events)
    got = {(k, g, b, d, v): n for k, g, b, d, v, n in rows}
    assert len(got) == len(rows)  # each counter once
    assert got == dict(want)


def test_waiting_clicks_are_invisible_to_the_garbage_collector() -> None:
    """Clicks wait in the buffer as plain tuples, which the collector stops tracking at its
    first pass — a named tuple it tracks for ever, and thousands of those would be promoted
    and lengthen every full collection of the server's heap (redirect tail latency)."""
    import gc

    buffer = ClickBuffer()
    ctx = ClickContext("aaaaaa1", T0, "203.0.113.9", IPHONE, "https://t.co/x", "IN")
    for _ in range(100):
        buffer.offer(ctx)
    gc.collect()
    assert gc.is_tracked(ctx)  # what the redirect builds...
    waiting = list(buffer._items)
    assert all(type(item) is tuple and not gc.is_tracked(item) for item in waiting)  # ...not kept
    assert [ClickContext._make(item) for item in waiting] == [ctx] * 100
    first, taken = buffer.take(10)
    assert first == 1 and taken == waiting[:10]


def test_a_new_click_log_uses_large_pages(tmp_path: Path) -> None:
    """Batches of ~200 KB fit in a few 64 KB pages instead of fifty 4 KB ones."""
    from lookup.shortener.analytics.log import PAGE_SIZE

    click_log = SqliteClickLog(tmp_path / "log.sqlite3")
    click_log.append(RawBatch.from_rows("p", 1, [("k", T0, "h", IPHONE, None, "IN")]))
    conn = sqlite3.connect(tmp_path / "log.sqlite3")
    assert conn.execute("PRAGMA page_size").fetchone()[0] == PAGE_SIZE == 65_536
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
    assert [r.event_id for _, r in click_log.read(0, 10)] == ["p-1"]
