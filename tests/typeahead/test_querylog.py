"""The generated query log: deterministic, realistic, and carrying everything planted."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest

from lookup.typeahead import querylog
from lookup.typeahead.filters import DEFAULT_BLOCKLIST, TermBlocklist
from lookup.typeahead.normalize import normalize_query, script_of

from .conftest import EVENTS, SEED, Built


def rows(log: querylog.QueryLog, market: str | None = None) -> list[str]:
    ev = log.events
    mask = (
        np.ones(len(ev.ts), bool) if market is None else ev.market == querylog.MARKETS.index(market)
    )
    return [log.strings[q] for q in ev.query[mask]]


def test_deterministic_for_a_seed() -> None:
    a = querylog.generate(5_000, 3)
    b = querylog.generate(5_000, 3)
    c = querylog.generate(5_000, 4)
    assert a.strings == b.strings and np.array_equal(a.events.ts, b.events.ts)
    assert np.array_equal(a.events.user, b.events.user)
    assert not np.array_equal(a.events.query, c.events.query[: len(a.events.query)])


def test_file_has_the_documented_columns(built: Built) -> None:
    table = pq.read_table(built.log_path)
    assert table.column_names == ["ts", "market", "query", "user_id", "is_bot"]
    assert abs(table.num_rows - EVENTS) / EVENTS < 0.1
    assert str(table.schema.field("ts").type) in ("timestamp[s, tz=UTC]", "timestamp[ms, tz=UTC]")
    manifest = querylog.read_manifest(built.data_dir)
    assert manifest["seed"] == SEED and manifest["events"] == table.num_rows
    assert querylog.is_built(built.data_dir)


def test_skewed_popularity_and_many_users(built: Built) -> None:
    counts = np.sort(np.bincount(built.log.events.query))[::-1]
    counts = counts[counts > 0]
    top1pct = counts[: max(1, len(counts) // 100)].sum() / counts.sum()
    assert top1pct > 0.15  # a heavy head ...
    assert (counts <= 2).sum() > len(counts) * 0.2  # ... and a long tail of one-offs
    assert len(built.log.user_ids) > EVENTS / 20


def test_daily_rhythm(built: Built) -> None:
    ev = built.log.events
    hours = ((ev.ts - querylog.START_EPOCH) // 3600) % 24  # Indian time
    per_hour = np.bincount(hours[~ev.is_bot], minlength=24)
    assert per_hour[20] > 5 * per_hour[3]  # evenings busy, small hours quiet


def test_real_vocabularies_in_both_scripts(built: Built) -> None:
    hi = set(rows(built.log, "hi-IN"))
    en = set(rows(built.log, "en-IN"))
    assert any(script_of(q) == "deva" for q in hi) and any(script_of(q) == "latn" for q in hi)
    assert any(q.endswith(" weather") for q in en)
    assert any(q.endswith(" का मौसम") for q in hi)
    assert {"kya haal hai", "kyaa haal hai", "kia haal hai"} <= hi  # several spellings
    voc = querylog.vocabulary()
    assert "mumbai" in voc.cities and "मुंबई" in voc.cities_deva or "मुम्बई" in voc.cities_deva


def test_planted_typos_are_followed_by_the_retype(built: Built) -> None:
    ev, s = built.log.events, built.log.strings
    typo, right = querylog.TYPO_EXAMPLE
    ti, ri = s.index(typo), s.index(right)
    users = set(ev.user[ev.query == ti].tolist())
    assert len(users) >= 2
    for u in users:
        mine = ev.user == u
        t_typo = ev.ts[mine & (ev.query == ti)].min()
        later = ev.ts[mine & (ev.query == ri)]
        assert ((later >= t_typo) & (later - t_typo <= 30)).any()


def test_private_query_has_one_user_and_bots_are_flagged(built: Built) -> None:
    ev, s = built.log.events, built.log.strings
    private = ev.query == s.index(querylog.PRIVATE_QUERY)
    assert private.sum() >= 20 and len(set(ev.user[private].tolist())) == 1
    spam = ev.query == s.index(normalize_query(querylog.BOT_SPAM["en-IN"]))
    assert ev.is_bot[spam].mean() > 0.8
    assert set(built.log.manifest["bot_users"]) >= {
        built.log.user_ids[u] for u in ev.user[ev.is_bot]
    }


def test_unsafe_queries_are_planted_popular(built: Built) -> None:
    bl = TermBlocklist(DEFAULT_BLOCKLIST)
    counts = np.bincount(built.log.events.query, minlength=len(built.log.strings))
    for q in querylog.UNSAFE_QUERIES["en-IN"]:
        assert bl.blocks(normalize_query(q))
        assert counts[built.log.strings.index(normalize_query(q))] >= 5


def test_trending_spike_from_zero_to_thousands_in_minutes(built: Built) -> None:
    ev, s = built.log.events, built.log.strings
    spike = built.log.manifest["planted"]["en-IN"]["trending"]
    mine = ev.ts[ev.query == s.index(spike["query"])]
    assert mine.min() >= spike["start"]  # nothing before
    first_half_hour = (mine < spike["start"] + 1800).sum()
    assert first_half_hour >= 0.5 * len(mine) and len(mine) >= 1500  # thousands, within minutes
    first_five_minutes = (mine < spike["start"] + 300).sum()
    assert first_five_minutes < first_half_hour / 5  # a ramp, not a step


def test_too_few_events_is_refused() -> None:
    with pytest.raises(ValueError):
        querylog.generate(100)
