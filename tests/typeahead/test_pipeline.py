"""End to end: the served top 10 equals a brute-force ranking computed from the raw log.

The oracle never touches the pipeline's aggregator or trie: it recomputes every
query's decayed score in closed form, sum(weight × factor^(last period − period)),
counts distinct human users with Python sets, applies the same blocklist, privacy
rule and threshold, and ranks all matching queries by (score desc, text asc).
"""

from __future__ import annotations

import random
from collections import defaultdict

import numpy as np
import pytest

from lookup.typeahead import querylog
from lookup.typeahead.aggregate import ScoreBoard, decay_factor, read_query_log
from lookup.typeahead.filters import DEFAULT_BLOCKLIST, TermBlocklist, looks_private
from lookup.typeahead.fuzzy import TypoPolicy
from lookup.typeahead.normalize import script_of
from lookup.typeahead.pipeline import BuildConfig, compile_market
from lookup.typeahead.serving import SuggestService
from lookup.typeahead.translit import phonetic_key, romanize

from .conftest import Built


def oracle_scores(built: Built, market: str) -> tuple[dict[str, float], dict[str, int]]:
    """Closed-form decayed scores and distinct human users per query, from the raw events."""
    ev = built.log.events
    mi = querylog.MARKETS.index(market)
    mask = ev.market == mi
    period = 86400
    f = decay_factor(period)
    ts, q, u, bot = ev.ts[mask], ev.query[mask], ev.user[mask], ev.is_bot[mask]
    last = int(ts.max()) // period
    weights = np.where(bot, built.config.bot_weight, 1.0) * f ** (last - ts // period)
    score: dict[str, float] = defaultdict(float)
    users: dict[str, set[int]] = defaultdict(set)
    for qi, w, ui, b in zip(q.tolist(), weights.tolist(), u.tolist(), bot.tolist(), strict=True):
        s = built.log.strings[qi]
        score[s] += w
        if not b:
            users[s].add(ui)
    return dict(score), {s: len(v) for s, v in users.items()}


def kept_queries(built: Built, market: str) -> dict[str, float]:
    score, users = oracle_scores(built, market)
    bl = TermBlocklist(DEFAULT_BLOCKLIST)
    return {
        s: v
        for s, v in score.items()
        if v > 0 and users.get(s, 0) >= built.config.min_users and not bl.blocks(s)
        and not looks_private(s)
    }  # fmt: skip


def brute_force(entries: list[tuple[str, str]], score: dict[str, float], prefix: str) -> list[str]:
    shown = {display for key, display in entries if key.startswith(prefix)}
    return sorted(shown, key=lambda s: (-score[s], s))[:10]


def sample_prefixes(keys: list[str], rng: random.Random, n: int) -> list[str]:
    out = {""}
    for _ in range(n):
        key = rng.choice(keys)
        out.add(key[: rng.randint(1, min(len(key), 12))])
    out |= {k[0] for k in keys}  # every one-character prefix
    out |= {"zqx", "क्षज़", "qqq ", "iphone 99"}  # unseen
    return sorted(out)


def same_ranking(got: list[str], want: list[str], score: dict[str, float]) -> bool:
    """Equal, allowing only swaps of scores equal to float precision (two summation orders)."""
    if got == want:
        return True
    if len(got) != len(want):
        return False
    return all(
        a == b or abs(score[a] - score[b]) <= 1e-9 * max(score[a], score[b])
        for a, b in zip(got, want, strict=True)
    )


def test_en_in_served_top10_equals_brute_force_from_the_raw_log(built: Built) -> None:
    kept = kept_queries(built, "en-IN")
    build = built.builds["en-IN"]
    assert set(build.strings) == set(kept)  # same survivors as the independent filter
    typo_entries = [(k, build.strings[t]) for k, t, alias in build.keys if alias]
    entries = [(q, q) for q in kept] + typo_entries
    service = SuggestService.from_data_dir(built.data_dir)
    service.infix = False  # the prefix answers alone (word-anywhere ones: test_infix.py)
    service.typo = TypoPolicy(enabled=False)  # and no corrected ones (test_typo_http.py)
    rng = random.Random(1)
    prefixes = sample_prefixes(list(kept), rng, 2500)
    assert len(prefixes) > 1500
    for p in prefixes:
        got = service.lookup(p, "en-IN").suggestions
        want = brute_force(entries, kept, p)
        assert same_ranking(got, want, kept), (p, got, want)


def test_hi_in_served_top10_equals_brute_force(built: Built) -> None:
    """Hindi: every key (Devanagari, each Latin spelling, misspellings) → its suggestion.

    A suggestion standing for a group of spellings (Latin ones with the same phonetic
    key, plus Devanagari whose romanisation was typed) ranks by the sum of the group's
    scores; the oracle recomputes those sums from the raw log.
    """
    kept = kept_queries(built, "hi-IN")
    groups: dict[str, list[str]] = defaultdict(list)
    for q in kept:
        if script_of(q) == "latn":
            groups[phonetic_key(q)].append(q)
    for q in kept:
        if script_of(q) == "deva" and romanize(q) in kept and script_of(romanize(q)) == "latn":
            groups[phonetic_key(romanize(q))].append(q)
    score = dict(kept)
    for members in groups.values():
        if len(members) > 1:
            total = sum(kept[m] for m in members)
            for m in members:
                score[m] = total
    build = built.builds["hi-IN"]
    entries = build.entries()
    assert {k for k, _ in entries} >= set(kept)  # every surviving query is a key
    service = SuggestService.from_data_dir(built.data_dir)
    service.infix = False  # the prefix answers alone (word-anywhere ones: test_infix.py)
    service.typo = TypoPolicy(enabled=False)  # and no corrected ones (test_typo_http.py)
    rng = random.Random(2)
    prefixes = sample_prefixes([k for k, _ in entries], rng, 1500)
    assert sum(1 for p in prefixes if p and "\u0900" <= p[0] <= "\u097f") > 100  # Devanagari
    for p in prefixes:
        got = service.lookup(p, "hi-IN").suggestions
        want = brute_force(entries, score, p)
        assert same_ranking(got, want, score), (p, got, want)


def test_planted_problems_never_surface(built: Built) -> None:
    service = SuggestService.from_data_dir(built.data_dir)
    bl = TermBlocklist(DEFAULT_BLOCKLIST)
    for market in querylog.MARKETS:
        for bad in querylog.UNSAFE_QUERIES[market]:
            for n in range(1, len(bad) + 1):
                for s in service.lookup(bad[:n], market).suggestions:
                    assert not bl.blocks(s)
    private = querylog.PRIVATE_QUERY
    for n in range(1, len(private) + 1):
        assert private not in service.lookup(private[:n], "en-IN").suggestions


def test_learned_misspelling_leads_to_the_right_query(built: Built) -> None:
    service = SuggestService.from_data_dir(built.data_dir)
    assert "iphone" in service.lookup("iphnoe", "en-IN").suggestions
    assert "iphone" in service.lookup("iphn", "en-IN").suggestions
    # a misspelling typed by one person only is not learned
    build = built.builds["en-IN"]
    learned = {k for k, _, alias in build.keys if alias}
    one_off = [w for w, r, n in built.board.markets["en-IN"].typo_support() if n == 1]
    assert one_off and not learned & set(one_off)


def test_latin_hindi_spellings_lead_to_latin_suggestions(built: Built) -> None:
    service = SuggestService.from_data_dir(built.data_dir)
    for spelling in ("kya", "kyaa", "kia"):
        got = service.lookup(spelling, "hi-IN").suggestions
        assert "kya haal hai" in got, (spelling, got)
        assert all(s.isascii() for s in got)  # shown in the script being typed
    deva = service.lookup("क", "hi-IN").suggestions
    assert deva and all(not s.isascii() for s in deva)


def test_bot_discount_keeps_spam_down(built: Built) -> None:
    spam = querylog.BOT_SPAM["en-IN"]
    state = built.board.markets["en-IN"]
    discounted = compile_market(state, TermBlocklist(DEFAULT_BLOCKLIST), BuildConfig())
    # the same evidence with bots counted in full pushes the spam up the ranking
    board = ScoreBoard()
    board.fold(read_query_log(built.log_path), bot_weight=1.0)
    blocklist = TermBlocklist(DEFAULT_BLOCKLIST)
    counted = compile_market(board.markets["en-IN"], blocklist, BuildConfig())
    rank_counted = counted.strings.index(spam)
    rank_discounted = discounted.strings.index(spam) if spam in discounted.strings else 10**9
    assert rank_counted < len(counted.strings) * 0.02
    assert rank_discounted > 10 * rank_counted


def test_threshold_alone_removes_the_private_query(built: Built) -> None:
    state = built.board.markets["en-IN"]
    no_privacy_rule = BuildConfig(drop_private=False)
    build = compile_market(state, TermBlocklist(DEFAULT_BLOCKLIST), no_privacy_rule)
    assert querylog.PRIVATE_QUERY not in build.strings
    lax = compile_market(
        state, TermBlocklist(DEFAULT_BLOCKLIST), BuildConfig(min_users=1, drop_private=False)
    )
    assert querylog.PRIVATE_QUERY in lax.strings  # it was the threshold that stopped it


def test_complete_flag_means_every_completion(built: Built) -> None:
    service = SuggestService.from_data_dir(built.data_dir)
    kept = kept_queries(built, "en-IN")
    rng = random.Random(3)
    seen_complete = 0
    for p in sample_prefixes(list(kept), rng, 600):
        r = service.lookup(p, "en-IN")
        if r.complete:
            seen_complete += 1
            everything = {q for q in kept if q.startswith(p)}
            assert set(r.suggestions) == everything, p
    assert seen_complete > 50


@pytest.mark.parametrize("market", querylog.MARKETS)
def test_bytes_per_query_is_under_budget(built: Built, market: str) -> None:
    service = SuggestService.from_data_dir(built.data_dir)
    snap = service.snapshot(market)
    # the trie and the strings; the word-anywhere index is reported apart (infixBytes)
    assert (snap.file_size - snap.summary()["infixBytes"]) / snap.n_strings < 150
