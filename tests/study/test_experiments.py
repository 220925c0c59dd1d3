"""Predict-then-run experiments: each runs, and each answer comes from the implementation.

For every experiment one test changes an input and checks that the measured figure
moves the way the code says it must — against an oracle computed here, independently
of the package, wherever that is cheap (a hand-written ring, md5 mod N, cell counting
by floor division, an OrderedDict LRU, the Bloom and block-lease formulas, a letter
split of the query list). Nothing here asserts a duration.
"""

from __future__ import annotations

import bisect
import hashlib
import inspect
import json
import math
import random
import string
from collections import Counter, OrderedDict
from pathlib import Path
from typing import Any

import pytest

from lookup.study.answers import score
from lookup.study.bank import parse_file
from lookup.study.checking import compute, params_for
from lookup.study.experiments import EXPERIMENTS
from lookup.study.measure import Experiment, Measured

ITEMS = parse_file(Path(__file__).resolve().parents[2] / "lookup/study/items/predict.toml")
SERVER_FIXTURES = {"redis": "redis_server", "postgres": "postgres_server"}


def _run(name: str, request: pytest.FixtureRequest | None = None, **overrides: Any) -> Measured:
    exp = EXPERIMENTS[name]
    for server in exp.requires:
        if request is None or server not in SERVER_FIXTURES:
            pytest.skip(f"{name} needs {server}")
        request.getfixturevalue(SERVER_FIXTURES[server])
    return exp.run(**{**exp.params, **overrides})


# -- the registry ------------------------------------------------------------------------
def test_the_registry_names_its_experiments_and_their_parameters() -> None:
    assert len(EXPERIMENTS) >= 14
    for name, exp in EXPERIMENTS.items():
        assert isinstance(exp, Experiment) and exp.name == name and exp.title
        sig = inspect.signature(exp.run)
        assert set(exp.params) == set(sig.parameters), name
        for key, value in exp.params.items():
            assert sig.parameters[key].default == value, (name, key)
        assert set(exp.requires) <= {"redis", "postgres", "etcd"}, name


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_every_experiment_runs_at_its_defaults(name: str, request: pytest.FixtureRequest) -> None:
    measured = _run(name, request)
    assert math.isfinite(measured.value) and measured.value >= 0, name
    assert measured.unit, name
    assert measured.chain and all(isinstance(line, str) and line for line in measured.chain)
    assert measured.text
    json.dumps(measured.as_json())  # the CLI and the page print it


# -- the items ---------------------------------------------------------------------------
def test_the_predict_items_name_real_experiments_and_parameters() -> None:
    assert len(ITEMS) >= 16
    systems = Counter(i.system for i in ITEMS)
    assert {
        "shortener",
        "typeahead",
        "proximity",
        "crawler",
        "search",
        "ids",
        "ratelimit",
        "kv",
        "cache",
    } <= set(systems)
    for item in ITEMS:
        assert item.kind == "predict" and item.checker and item.checker.experiment
        exp = EXPERIMENTS[item.checker.experiment]
        assert set(item.checker.params) <= set(exp.params), item.id
        assert item.checker.vary and set(item.checker.vary) <= set(exp.params), item.id
        for slot in item.checker.vary:
            assert "{" + slot + "}" in item.prompt, (item.id, slot)
        assert params_for(item, 1) != params_for(item, 0), item.id


@pytest.mark.parametrize("item_id", [i.id for i in ITEMS])
def test_each_item_is_answered_by_its_experiment_and_a_tenfold_answer_is_off(
    item_id: str,
) -> None:
    item = next(i for i in ITEMS if i.id == item_id)
    measured = compute(item, 0)
    assert measured.value > 0, item_id  # a zero could not tell a tenfold answer apart
    assert score(measured.value, measured.value).verdict == "exact"
    assert score(measured.value * 10, measured.value).verdict == "off"
    assert score(measured.value / 10, measured.value).verdict == "off"


# -- the ring ----------------------------------------------------------------------------
def _md5(text: str) -> int:
    return int.from_bytes(hashlib.md5(text.encode()).digest(), "big")


def _oracle_owners(nodes: list[str], vnodes: int, keys: list[str]) -> list[str]:
    """A ring written out here: points md5(f"{node}-{i}"), a key's owner is the first
    point strictly clockwise of md5(key), wrapping at the top."""
    points = sorted((_md5(f"{n}-{i}"), n) for n in nodes for i in range(vnodes))
    where = [p for p, _ in points]
    out = []
    for k in keys:
        i = bisect.bisect_right(where, _md5(k))
        out.append(points[i % len(points)][1])
    return out


@pytest.mark.parametrize(("nodes", "added", "ideal"), [(10, 1, 1 / 11), (10, 10, 1 / 2)])
def test_ring_growth_moves_what_a_hand_written_ring_moves(
    nodes: int, added: int, ideal: float
) -> None:
    keys = 6_000
    measured = _run("ring_growth", nodes=nodes, added=added, vnodes=40, keys=keys)
    sample = [f"key:{i}" for i in range(keys)]
    old = [f"node-{i}" for i in range(nodes)]
    new = old + [f"node-{nodes + i}" for i in range(added)]
    before, after = _oracle_owners(old, 40, sample), _oracle_owners(new, 40, sample)
    oracle = sum(a != b for a, b in zip(before, after, strict=True)) / keys
    assert measured.value == pytest.approx(oracle, abs=1e-12)
    assert measured.value == pytest.approx(ideal, abs=0.06)
    assert measured.details["moved between old nodes"] == 0  # only the newcomers gain


def test_mod_n_growth_moves_almost_every_key() -> None:
    keys, nodes = 6_000, 10
    measured = _run("ring_growth", nodes=nodes, keys=keys, scheme="mod")
    oracle = sum(_md5(f"key:{i}") % nodes != _md5(f"key:{i}") % (nodes + 1) for i in range(keys))
    assert measured.value == pytest.approx(oracle / keys, abs=1e-12)
    assert measured.value > 0.85  # about N/(N+1)


def test_ring_balance_is_the_busiest_nodes_load_and_vnodes_even_it_out() -> None:
    keys, nodes = 6_000, 8
    one = _run("ring_balance", nodes=nodes, vnodes=1, keys=keys)
    counts = Counter(
        _oracle_owners([f"node-{i}" for i in range(nodes)], 1, [f"key:{i}" for i in range(keys)])
    )
    assert one.value == pytest.approx(max(counts.values()) / (keys / nodes))
    many = _run("ring_balance", nodes=nodes, vnodes=200, keys=keys)
    assert many.value < one.value and many.value < 1.25


# -- quorums on real node processes ------------------------------------------------------
def test_quorum_stale_reads_appear_only_when_r_plus_w_is_not_above_n() -> None:
    weak = _run("quorum_under_isolation", w=1, r=1)
    assert weak.value > 0 and weak.details["stale reads (failed)"] > 0
    assert weak.details["write availability"] == 1.0  # everything stays available
    strong = _run("quorum_under_isolation", w=2, r=2, figure="write_availability")
    assert strong.details["stale reads (failed)"] == 0  # two of three always overlap
    assert 0 < strong.value < 1  # writes through the cut-off node cannot reach W=2
    assert strong.value == strong.details["write availability"]


# -- geohash -----------------------------------------------------------------------------
def _oracle_cells(lat: float, lng: float, radius_m: float, precision: int) -> int:
    """Cells of a precision touching the circle's lat/lng box, counted by floor division."""
    delta = radius_m / 6_371_000.0
    d_lat = math.degrees(delta)
    d_lng = math.degrees(math.asin(math.sin(delta) / math.cos(math.radians(lat))))
    bits = 5 * precision
    lat_bits, lng_bits = bits // 2, bits - bits // 2
    h, w = 180.0 / 2**lat_bits, 360.0 / 2**lng_bits
    rows = math.floor((lat + d_lat + 90) / h) - math.floor((lat - d_lat + 90) / h) + 1
    cols = math.floor((lng + d_lng + 180) / w) - math.floor((lng - d_lng + 180) / w) + 1
    return rows * cols


@pytest.mark.parametrize(("radius_m", "precision"), [(5_000.0, 5), (5_000.0, 6), (1_200.0, 6)])
def test_radius_cells_are_the_cells_touching_the_circles_box(
    radius_m: float, precision: int
) -> None:
    p = EXPERIMENTS["radius_cells"].params
    measured = _run("radius_cells", radius_m=radius_m, precision=precision, places=500)
    assert measured.value == _oracle_cells(float(p["lat"]), float(p["lng"]), radius_m, precision)


def test_reading_only_the_own_cell_misses_neighbours_and_the_block_misses_none() -> None:
    measured = _run("neighbour_miss", places=8_000, queries=60)
    d = measured.details
    assert d["found in 3x3 block"] == d["in radius (brute force)"]
    assert d["found in own cell"] < d["in radius (brute force)"]
    assert measured.value == pytest.approx(
        1 - d["found in own cell"] / d["in radius (brute force)"]
    )
    assert measured.value > 0.1 and d["read in own cell"] < d["read in 3x3 block"]


# -- rate limits and ids -----------------------------------------------------------------
@pytest.mark.parametrize("limit", [10, 37, 100])
def test_the_fixed_window_admits_two_bursts_and_the_sliding_log_one_limit(limit: int) -> None:
    assert _run("window_boundary", limit=limit).value == 2 * (limit - 1)
    assert _run("window_boundary", limit=limit, algorithm="sliding_log").value == limit
    assert _run("window_boundary", limit=limit, algorithm="sliding_counter").value == limit


def test_a_divided_quota_admits_what_each_server_saw_up_to_its_slice() -> None:
    for hot in (0.4, 0.9):
        shares = [hot, *([(1 - hot) / 3] * 3)]
        route = random.Random(0).choices(range(4), weights=shares, k=200)
        seen = Counter(route)
        oracle = sum(min(25, seen[i]) for i in range(4))
        assert _run("split_quota", hot_share=hot).value == oracle
    assert _run("split_quota", figure="shared").value == 100
    assert _run("split_quota", figure="grown").value > 100
    assert _run("split_quota", hot_share=0.9).value < _run("split_quota", hot_share=0.4).value


@pytest.mark.parametrize("bits", [6, 10, 12])
def test_snowflake_ids_per_millisecond_is_two_to_the_sequence_bits(bits: int) -> None:
    measured = _run("snowflake_per_ms", sequence_bits=bits)
    assert measured.value == 2**bits
    assert measured.details["distinct"] == 5 * 2**bits and measured.details["increasing"]


# -- Bloom filters and caches ------------------------------------------------------------
def test_more_bits_per_item_lower_the_measured_false_positive_rate() -> None:
    small = _run("bloom_false_positives", items=5_000, probes=40_000, bits_per_item=4.8)
    big = _run("bloom_false_positives", items=5_000, probes=40_000, bits_per_item=9.6)
    for m in (small, big):
        k, n, bits = m.details["hashes"], 5_000, m.details["bits"]
        theory = (1 - math.exp(-k * n / bits)) ** k
        assert theory / 2 < m.value < theory * 2
        assert m.details["false negatives"] == 0
    assert big.value < small.value / 3


@pytest.mark.parametrize(("items", "rate"), [(1_000, 0.01), (250_000, 0.01), (250_000, 0.001)])
def test_bloom_size_is_the_sizing_formula_in_bytes(items: int, rate: float) -> None:
    bits = math.ceil(-items * math.log(rate) / math.log(2) ** 2)
    assert _run("bloom_size", items=items, fp_rate=rate).value == math.ceil(bits / 8)


def test_single_flight_loads_once_and_an_unprotected_cache_once_per_caller() -> None:
    guarded = _run("single_flight", callers=30, latency_ms=200.0)
    assert guarded.value == 1 and guarded.details["answered"] == 30
    bare = _run("single_flight", callers=30, protect=False, latency_ms=200.0)
    assert 2 <= bare.value <= 30 and bare.details["answered"] == 30


def test_the_lru_hit_ratio_matches_an_ordered_dict_lru() -> None:
    from lookup.datasets.cache_traces import shortener_clicks

    trace = shortener_clicks(8_000, 400, 7)
    results = []
    for share in (0.05, 0.3):
        capacity = round(share * 400)
        cache: OrderedDict[int, None] = OrderedDict()
        hits = 0
        for key in trace:
            if key in cache:
                hits += 1
                cache.move_to_end(key)
            else:
                cache[key] = None
                if len(cache) > capacity:
                    cache.popitem(last=False)
        measured = _run("cache_hit_ratio", cache_share=share, links=400, requests=8_000)
        assert measured.value == pytest.approx(hits / len(trace))
        results.append(measured.value)
    assert results[1] > results[0]


# -- search fan-out ----------------------------------------------------------------------
def test_fanout_tail_counts_what_the_fault_switches_drew_and_hedging_cuts_it() -> None:
    shards, p, queries, seed = 6, 0.05, 60, 11
    bare = _run("fanout_tail", shards=shards, slow_share=p, queries=queries, seed=seed, pages=120)
    draws = random.Random(seed)  # the switches draw from the seeded module generator
    per_query = [[draws.random() < p for _ in range(shards)] for _ in range(queries)]
    slowed = sum(any(drawn) for drawn in per_query)  # one draw per shard, every query
    assert bare.details["queries with a slowed primary"] == slowed > 0
    # every query that drew a slow primary waited for it (it sleeps the full delay)
    assert bare.details["slow queries"] >= slowed
    assert bare.value == pytest.approx(bare.details["slow queries"] / queries)
    hedged = _run(
        "fanout_tail",
        shards=shards,
        slow_share=p,
        queries=queries,
        seed=seed,
        pages=120,
        hedge=True,
    )
    assert hedged.details["queries with a slowed primary"] == slowed
    assert hedged.details["hedges fired"] > 0 and hedged.details["hedge wins"] > 0
    assert hedged.value < bare.value


# -- typeahead ---------------------------------------------------------------------------
def test_completions_under_a_prefix_match_a_brute_force_count() -> None:
    from lookup.study.experiments_typeahead import english_queries

    queries, counts = english_queries(30_000, 11)
    values = []
    for length in (1, 3):
        typed: Counter[str] = Counter()
        for q, c in zip(queries, counts, strict=True):
            if len(q) >= length:
                typed[q[:length]] += c
        oracle = sum(n * sum(q.startswith(p) for q in queries) for p, n in typed.items())
        measured = _run("typeahead_completions", prefix_len=length)
        assert measured.value == pytest.approx(oracle / sum(typed.values()))
        values.append(measured.value)
    assert values[0] > values[1]  # a longer prefix narrows the subtree


def test_letter_shards_are_skewed_and_the_planner_evens_them_out() -> None:
    from lookup.study.experiments_typeahead import english_queries

    queries, counts = english_queries(30_000, 11)
    shards = 4
    starts = [string.ascii_lowercase[round(i * 26 / shards)] for i in range(1, shards)]
    traffic = Counter()
    for q, c in zip(queries, counts, strict=True):
        traffic[sum(s <= q[:2] for s in starts)] += c
    oracle = max(traffic.values()) / sum(counts)
    naive = _run("typeahead_shard_skew", shards=shards)
    assert naive.value == pytest.approx(oracle)
    planned = _run("typeahead_shard_skew", shards=shards, planned=True)
    assert 1 / shards <= planned.value < naive.value


# -- shortener keys and id leases --------------------------------------------------------
def _base62(n: int) -> str:
    alphabet = string.digits + string.ascii_letters
    out = ""
    for _ in range(7):
        n, r = divmod(n, 62)
        out = alphabet[r] + out
    return out


def test_permuted_keys_look_unrelated_and_counter_keys_share_their_heads() -> None:
    start, keys = 5_000_000, 3_000
    plain = _run("key_neighbours", start=start, keys=keys, permute=False)
    made = [_base62(i) for i in range(start, start + keys)]
    oracle = sum(a[0] == b[0] for a, b in zip(made, made[1:], strict=False)) / (keys - 1)
    assert plain.value == pytest.approx(oracle) and plain.value > 0.95
    mixed = _run("key_neighbours", start=start, keys=keys, permute=True)
    assert mixed.details["distinct"] == keys
    assert mixed.value < 0.05  # about 1 in 62


@pytest.mark.parametrize(("minted", "block"), [(2_500, 10_000), (1_200, 500), (1_000, 1_000)])
def test_leased_blocks_waste_the_rest_of_each_last_block(minted: int, block: int) -> None:
    measured = _run("id_block_gaps", instances=2, lives=3, minted=minted, block_size=block)
    per_life = math.ceil(minted / block) * block - minted
    assert measured.value == 2 * 3 * per_life
    assert measured.details["duplicates"] == 0


# -- crawler -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("pages", "hosts", "fetch_s"), [(600, 6, 0.2), (600, 60, 0.2), (90, 3, 0.05)]
)
def test_a_polite_crawl_takes_the_busiest_hosts_queue_of_requests_and_rests(
    pages: int, hosts: int, fetch_s: float
) -> None:
    measured = _run("crawl_politeness", pages=pages, hosts=hosts, fetch_s=fetch_s)
    requests = pages // hosts + 1  # robots.txt, then its pages, one at a time
    gap = max(1.0, 10 * fetch_s)
    assert measured.value == pytest.approx(requests * fetch_s + (requests - 1) * gap)


def test_the_seen_set_turns_away_exactly_the_links_already_known() -> None:
    from lookup.study.experiments_crawler import spellings

    pages, links, site, share, seed = 100, 20, 1_500, 0.3, 4
    rng = random.Random(seed)
    pages_found, spelled = set(), set()
    for _ in range(pages * links):
        n = rng.randrange(site)
        url = f"http://www.site{n % 7}.test/section{n % 23}/page{n}.html"
        spelled.add(spellings(url, rng) if rng.random() < share else url)
        pages_found.add(n)
    args = {
        "pages": pages,
        "links_per_page": links,
        "site_urls": site,
        "variant_share": share,
        "seed": seed,
    }
    normalised = _run("seen_dedup", **args)
    assert normalised.value == pytest.approx(1 - len(pages_found) / (pages * links))
    raw = _run("seen_dedup", **args, normalize=False)
    assert raw.value == pytest.approx(1 - len(spelled) / (pages * links))
    assert raw.value < normalised.value
