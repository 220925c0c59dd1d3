"""Proximity search benchmarks, each judged against anchors measured in the same run.

1. **Radius queries in process** over ~1 million places (``lookup datasets build places
   --count 1000000``: real cities and airports plus generated businesses), at 500 m, 2 km
   and 20 km from points where people are (beside random businesses, so mostly in
   dense cities): queries/s, p50 and p99 of one query per call for

   * the ``GeohashIndex`` (plan the cells, read their code ranges, exact haversine) and
     the ``QuadtreeIndex`` planner over the same rows;
   * anchor: scikit-learn's ``BallTree(metric="haversine").query_radius``;
   * oracle: a vectorised numpy brute-force haversine over every place (fewer queries:
     it is slow);
   * for context, the full ``ProximitySearch.search`` (filters, ranking, a page of 20);
   * peer anchors, the same places and queries in the same run: **PostGIS** ``ST_DWithin``
     on a GiST-indexed ``geography`` column and **Redis** ``GEOSEARCH … BYRADIUS``, each a
     throw-away server on loopback (one round trip per query;
     :mod:`benchmarks.places_engines`). ``--skip-missing-servers`` leaves out an engine
     that is not installed, ``--no-servers`` both.

   Every query's result set is compared: the index against brute force (exactly equal,
   same formula) and against BallTree (equal but for points whose distance equals the
   radius to within floating-point rounding — counted and shown). Targets: at least as
   fast as BallTree at every radius, identical results.
2. **Index build time and bytes per place**: ``GeohashIndex.from_rows`` (narrow columns and
   the text index, from the rows of one database snapshot) vs building the BallTree, each
   built once per run and the median kept; the narrow index's bytes per place (target
   < 40 B, the seed's figure) and the text index beside it; BallTree's arrays per place.
3. **``GET /v1/search`` over HTTP** for 2 km in the densest city: ``wrk -t1 -c32`` (a Lua
   script picking one of 1,000 nearby points per request) against ``lookup serve`` in a
   subprocess (one process, one core), with the per-cell result cache on (as served) and
   off (``cache=false``): throughput, and the server's CPU per request over the wrk run
   (from ``/proc``: what a regression of the hot path moves first, whatever else the
   machine runs). Then the tail at a **fixed offered load**: ``--rate`` requests per
   second (500) for ``--seconds``, latency counted from each request's due time
   (:mod:`benchmarks.fixed_rate`, no coordinated omission), so a stall shows the day it
   lands. Anchor: a bare Starlette route on the same server stack that answers every
   request with the same JSON bytes one of our answers had. Targets: ≥ 1,000 requests/s,
   ≥ 0.5× the anchor, p99 ≤ 25 ms at the fixed load. The load average is printed with
   every run.

Each figure is the median of ``--runs`` runs (3 by default), configurations interleaved
run by run so drift on a shared machine hits them alike.

    .venv/bin/python benchmarks/bench_places.py                 # 1M places, ~10 min
    .venv/bin/python benchmarks/bench_places.py --quick         # 100k places, one run
    .venv/bin/python benchmarks/bench_places.py --data-dir /tmp/places1m   # keep the data
    .venv/bin/python benchmarks/bench_places.py --only http --seconds 5 --rate 500
    .venv/bin/python benchmarks/bench_places.py --quick --skip-missing-servers
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import json
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks.common` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
import numpy as np

from benchmarks.common import (
    WrkResult,
    constant_json_app,
    fmt_ms,
    fmt_rate,
    free_port,
    lua_get_script,
    machine_summary,
    median,
    print_table,
    run_wrk,
    serve_uvicorn,
    spawned,
    wrk_path,
)
from benchmarks.fixed_rate import (
    FixedRateResult,
    cpu_seconds,
    fixed_summary,
    run_fixed_rate,
    server_pid,
)
from benchmarks.places_engines import LABELS as ENGINE_LABELS
from benchmarks.places_engines import EngineAnchors, edge_m
from benchmarks.places_engines import missing as missing_engines
from lookup.datasets import places as places_dataset
from lookup.geo import GeohashIndex, ProximitySearch, QuadtreeIndex, SqlitePlaceStore, haversine_m
from lookup.geo.geohash import EARTH_RADIUS_M

THIS_FILE = Path(__file__).resolve()
RADII_M = (500.0, 2_000.0, 20_000.0)
HTTP_RADIUS_M = 2_000
NARROW_TARGET_B = 40.0
HTTP_TARGET = 1_000.0
#: Throughput against the bare anchor, and p99 at the fixed offered load (issue 24, item 19).
HTTP_RATIO_TARGET = 0.5
HTTP_P99_TARGET_MS = 25.0
#: Requests per second offered for the tail figures: half the throughput target, a load
#: one server process carries with room to spare.
FIXED_RATE = 500.0
#: Metres of jitter around a business for a simulated user's position.
USER_JITTER_M = 300.0


# ------------------------------------------------------------------------- data


def ensure_places(data_dir: Path, count: int) -> Path:
    """The places database under ``data_dir``, built with ``count`` businesses if missing
    (or built with another count)."""
    db = places_dataset.db_path(data_dir)
    if places_dataset.is_built(data_dir):
        import sqlite3

        conn = sqlite3.connect(db)
        try:
            row = conn.execute("SELECT value FROM meta WHERE key = 'business_count'").fetchone()
        finally:
            conn.close()
        if row and int(row[0]) == count:
            return db
    print(f"building the places data set ({count:,} businesses) in {data_dir} ...", flush=True)
    return places_dataset.build(data_dir, count=count, progress=True)


def user_points(
    lat: np.ndarray, lng: np.ndarray, pool: np.ndarray, n: int, seed: int
) -> np.ndarray:
    """``n`` (lat, lng) points beside random places of ``pool`` (row numbers)."""
    rng = np.random.default_rng(seed)
    pick = rng.choice(pool, size=n)
    north, east = rng.normal(0.0, USER_JITTER_M, size=(2, n))
    qlat = np.clip(lat[pick] + north / 111_195.0, -89.9, 89.9)
    qlng = lng[pick] + east / (111_195.0 * np.cos(np.radians(qlat)))
    return np.stack([qlat, (qlng + 180.0) % 360.0 - 180.0], axis=1)


# ------------------------------------------------------------------- in process


def _timed(
    fn: Callable[[float, float, float], np.ndarray], points: np.ndarray, radius: float
) -> tuple[list[np.ndarray], np.ndarray]:
    """Run ``fn`` once per point; its answers and each call's latency in seconds."""
    out: list[np.ndarray] = []
    lat_s = np.empty(len(points))
    clock = time.perf_counter
    for i, (lat, lng) in enumerate(points.tolist()):
        t = clock()
        out.append(fn(lat, lng, radius))
        lat_s[i] = clock() - t
    return out, lat_s


def _stats(latencies: np.ndarray) -> dict[str, float]:
    return {
        "qps": len(latencies) / float(latencies.sum()),
        "p50_ms": float(np.percentile(latencies, 50)) * 1000.0,
        "p99_ms": float(np.percentile(latencies, 99)) * 1000.0,
    }


def _diff(ours: np.ndarray, other: np.ndarray) -> np.ndarray:
    return np.setxor1d(ours, other)


def bench_inprocess(
    data_dir: Path,
    *,
    queries: int,
    brute_queries: int,
    runs: int,
    seed: int = 5,
    engines: Sequence[str] = (),
) -> dict[str, Any]:
    """Radius queries, build time and memory: the index vs BallTree vs brute force, and
    the ``engines`` (``postgis``, ``redis``) as peer anchors on servers started here."""
    with EngineAnchors(engines) as anchors:
        return _inprocess(data_dir, queries, brute_queries, runs, seed, anchors)


def _inprocess(
    data_dir: Path,
    queries: int,
    brute_queries: int,
    runs: int,
    seed: int,
    anchors: EngineAnchors,
) -> dict[str, Any]:
    from sklearn.neighbors import BallTree

    db = places_dataset.db_path(data_dir)
    store = SqlitePlaceStore(db)
    try:
        seq, rows = store.snapshot()
    finally:
        store.close()
    n = len(rows)
    business_nums = np.array([r[1] for r in rows if r[6] == "business"], dtype=np.int64)
    # each structure is built once per run, interleaved, and the median build time is kept
    builds: dict[str, list[float]] = {
        "geohash index": [],
        "BallTree": [],
        "quadtree (over the index)": [],
    }
    for run in range(runs):
        index = tree = quadtree = None  # type: ignore[assignment]  # free the last run's
        gc.collect()
        t = time.perf_counter()
        index = GeohashIndex.from_rows(rows, seq=seq)
        builds["geohash index"].append(time.perf_counter() - t)
        radians = np.radians(np.stack([index.base.lat, index.base.lng], axis=1))
        t = time.perf_counter()
        tree = BallTree(radians, metric="haversine")
        builds["BallTree"].append(time.perf_counter() - t)
        t = time.perf_counter()
        quadtree = QuadtreeIndex(index)
        builds["quadtree (over the index)"].append(time.perf_counter() - t)
        print(
            f"  run {run + 1}/{runs} build: "
            + ", ".join(f"{name} {times[-1]:.2f} s" for name, times in builds.items()),
            flush=True,
        )
    del rows
    gc.collect()

    # every structure answers with place numbers, in the index's row order
    nums = index.base.num.astype(np.int64)
    lat, lng = index.base.lat, index.base.lng
    search = ProximitySearch(index)
    anchors.load(nums, lat, lng)  # the same places, into each engine
    engine_queries = anchors.queries()

    def geohash_q(qlat: float, qlng: float, r: float) -> np.ndarray:
        plan = index.plan_radius(qlat, qlng, r)
        cols, _, _ = index.within_radius(plan.ranges, qlat, qlng, r)
        return cols.num

    def quadtree_q(qlat: float, qlng: float, r: float) -> np.ndarray:
        plan = quadtree.plan_radius(qlat, qlng, r)
        cols, _, _ = index.within_radius(plan.ranges, qlat, qlng, r)
        return cols.num

    def balltree_q(qlat: float, qlng: float, r: float) -> np.ndarray:
        found = tree.query_radius([[math.radians(qlat), math.radians(qlng)]], r / EARTH_RADIUS_M)[0]
        return nums[found]

    def brute_q(qlat: float, qlng: float, r: float) -> np.ndarray:
        return nums[np.flatnonzero(haversine_m(qlat, qlng, lat, lng) <= r)]

    def ranked_q(qlat: float, qlng: float, r: float) -> np.ndarray:
        return np.array(
            [p["num"] for p in search.search(qlat, qlng, r, widen=False, limit=20).results]
        )

    # users stand beside businesses (where people are); row numbers in the index's order
    business_rows = np.flatnonzero(np.isin(nums, business_nums))
    pool = business_rows if len(business_rows) else np.arange(len(nums))
    methods: dict[str, Callable[[float, float, float], np.ndarray]] = {
        "geohash index": geohash_q,
        "quadtree": quadtree_q,
        "BallTree": balltree_q,
        **engine_queries,
        "brute force": brute_q,
        "search() ranked page": ranked_q,
    }
    per: dict[float, dict[str, list[dict[str, float]]]] = {
        r: {m: [] for m in methods} for r in RADII_M
    }
    checks: dict[float, dict[str, int]] = {}
    for run in range(runs):
        for radius in RADII_M:
            points = user_points(lat, lng, pool, queries, seed + run)
            answers: dict[str, list[np.ndarray]] = {}
            for name, fn in methods.items():
                pts = points[:brute_queries] if name == "brute force" else points
                answers[name], latencies = _timed(fn, pts, radius)
                per[radius][name].append(_stats(latencies))
            check = checks.setdefault(
                radius,
                {
                    "queries": 0,
                    "brute_compared": 0,
                    "brute_mismatch": 0,
                    "balltree_mismatch": 0,
                    "balltree_ties": 0,
                    "quadtree_mismatch": 0,
                    "results": 0,
                    **{f"{e}_{k}": 0 for e in anchors.names for k in ("mismatch", "ties")},
                },
            )
            check["queries"] += len(points)
            for i, (qlat, qlng) in enumerate(points.tolist()):
                ours = answers["geohash index"][i]
                check["results"] += len(ours)
                check["quadtree_mismatch"] += len(_diff(ours, answers["quadtree"][i])) > 0
                diff = _diff(ours, answers["BallTree"][i])
                if len(diff):
                    # a disagreement on a point exactly at the radius is rounding, not a miss
                    at = np.isin(nums, diff)
                    d = haversine_m(qlat, qlng, lat[at], lng[at])
                    if np.all(np.abs(d - radius) <= 1e-6 * max(radius, 1.0)):
                        check["balltree_ties"] += 1
                    else:
                        check["balltree_mismatch"] += 1
                for engine in anchors.names:  # exact but for rounding at the edge
                    diff = _diff(ours, answers[ENGINE_LABELS[engine]][i])
                    if len(diff):
                        at = np.isin(nums, diff)
                        d = haversine_m(qlat, qlng, lat[at], lng[at])
                        edge = bool(np.all(np.abs(d - radius) <= edge_m(engine, radius)))
                        check[f"{engine}_{'ties' if edge else 'mismatch'}"] += 1
                if i < brute_queries:
                    check["brute_compared"] += 1
                    check["brute_mismatch"] += len(_diff(ours, answers["brute force"][i])) > 0
            print(
                f"  run {run + 1}/{runs} radius {radius:>6,.0f} m: "
                + ", ".join(
                    f"{name} p50 {fmt_ms(per[radius][name][-1]['p50_ms'])}" for name in methods
                ),
                flush=True,
            )

    memory = index.memory()
    tree_bytes = sum(int(a.nbytes) for a in tree.get_arrays())
    summary = {
        radius: {
            name: {
                "qps": median(s["qps"] for s in stats),
                "p50_ms": median(s["p50_ms"] for s in stats),
                "p99_ms": median(s["p99_ms"] for s in stats),
                "runs_p50_ms": [round(s["p50_ms"], 4) for s in stats],
            }
            for name, stats in per[radius].items()
        }
        for radius in RADII_M
    }
    return {
        "places": n,
        "queries": queries,
        "brute_queries": brute_queries,
        "runs": runs,
        "radii": summary,
        "checks": checks,
        "build_s": {name: median(times) for name, times in builds.items()},
        "build_runs_s": {name: [round(t, 3) for t in times] for name, times in builds.items()},
        "engines": list(anchors.names),
        "engine_load_s": dict(anchors.load_s),
        "redis_skipped": anchors.redis_skipped,
        "memory": {
            "narrow_bytes_per_place": memory["narrowBytesPerPlace"],
            "text_bytes_per_place": memory["textBytesPerPlace"],
            "columns": memory["columns"],
            "quadtree_bytes_per_place": quadtree.nbytes / n,
            "balltree_bytes_per_place": tree_bytes / n,
            "brute_force_bytes_per_place": (lat.nbytes + lng.nbytes + nums.nbytes) / n,
        },
    }


# -------------------------------------------------------------------------- HTTP


def _anchor_app(body: bytes) -> Any:
    """Bare Starlette: ``GET /v1/search`` answers the same JSON bytes every time."""
    return constant_json_app("/v1/search", body)


def _serve_anchor(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench_places.py serve-anchor")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--body", type=Path, required=True)
    args = parser.parse_args(argv)
    serve_uvicorn(_anchor_app(args.body.read_bytes()), args.port)
    return 0


def server(
    argv: list[str], port: int, ready_path: str, timeout_s: float = 900.0
) -> AbstractContextManager[str]:
    """A server subprocess on ``port``, answering 200 on ``ready_path``; stopped after."""
    return spawned(
        argv,
        f"http://127.0.0.1:{port}",
        ready_path=ready_path,
        timeout_s=timeout_s,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        stop_timeout_s=20.0,
        request_timeout_s=5.0,
        poll_s=0.25,
    )


def dense_city_paths(data_dir: Path, count: int = 1_000, seed: int = 11) -> tuple[str, list[str]]:
    """The city with the most businesses around it, and ``count`` search paths (2 km)
    from points beside its businesses."""
    import sqlite3

    conn = sqlite3.connect(places_dataset.db_path(data_dir))
    try:
        (city_id,) = conn.execute(
            "SELECT near_city FROM places WHERE kind = 'business' GROUP BY near_city "
            "ORDER BY COUNT(*) DESC LIMIT 1"
        ).fetchone()
        (name,) = conn.execute("SELECT name FROM places WHERE id = ?", (city_id,)).fetchone()
        spots = np.array(
            conn.execute("SELECT lat, lng FROM places WHERE near_city = ?", (city_id,)).fetchall()
        )
    finally:
        conn.close()
    points = user_points(spots[:, 0], spots[:, 1], np.arange(len(spots)), count, seed)
    return name, [
        f"/v1/search?lat={a:.6f}&lng={b:.6f}&radius={HTTP_RADIUS_M}" for a, b in points.tolist()
    ]


def bench_http(
    data_dir: Path, *, seconds: int, runs: int, connections: int = 32, rate: float = FIXED_RATE
) -> dict[str, Any]:
    """``/v1/search`` over HTTP vs a bare Starlette route answering the same bytes: ``wrk``
    for throughput, then ``rate`` requests per second offered for ``seconds`` for the tail
    (:mod:`benchmarks.fixed_rate`), and each server's CPU per request during the wrk run."""
    city, paths = dense_city_paths(data_dir)
    api_port, anchor_port = free_port(), free_port()
    api_argv = [
        sys.executable,
        "-m",
        "lookup.cli",
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(api_port),
        "--data-dir",
        str(data_dir),
    ]
    names = ("anchor", "ours, cache on", "ours, cache off")
    results: dict[str, list[WrkResult]] = {name: [] for name in names}
    fixed: dict[str, list[FixedRateResult]] = {name: [] for name in names}
    cpu_us: dict[str, list[float]] = {name: [] for name in names}
    loads: dict[str, list[float]] = {name: [] for name in names}
    with (
        tempfile.TemporaryDirectory(prefix="bench-places-") as tmp,
        server(api_argv, api_port, "/v1/places/index") as api,
    ):
        sample = httpx.get(api + paths[0], timeout=30)
        if sample.status_code != 200 or not sample.json().get("results"):
            raise RuntimeError(f"/v1/search answered {sample.status_code}: {sample.text[:300]}")
        totals = [httpx.get(api + p, timeout=30).json()["total"] for p in paths[:50]]
        body = Path(tmp) / "body.json"
        body.write_bytes(sample.content)
        anchor_argv = [
            sys.executable,
            str(THIS_FILE),
            "serve-anchor",
            "--port",
            str(anchor_port),
            "--body",
            str(body),
        ]
        with server(anchor_argv, anchor_port, "/healthz", timeout_s=60) as anchor:
            on = lua_get_script(paths)
            off_paths = [p + "&cache=false" for p in paths]
            off = lua_get_script(off_paths)
            run_wrk(api, on, seconds=1, connections=connections)  # warm-up
            pids = {"anchor": server_pid(anchor_port), "ours": server_pid(api_port)}
            for run in range(runs):
                for name, url, script, offered in (
                    ("anchor", anchor, on, paths),
                    ("ours, cache on", api, on, paths),
                    ("ours, cache off", api, off, off_paths),
                ):
                    pid = pids["anchor" if name == "anchor" else "ours"]
                    cpu = cpu_seconds(pid)
                    result = run_wrk(url, script, seconds=seconds, connections=connections)
                    used = cpu_seconds(pid) - cpu
                    tail = run_fixed_rate(url, offered, rate=rate, seconds=seconds)
                    results[name].append(result)
                    fixed[name].append(tail)
                    cpu_us[name].append(1e6 * used / max(result.requests, 1) if pid else 0.0)
                    loads[name].append(os.getloadavg()[0])
                    print(
                        f"  http run {run + 1}/{runs} {name:>15}: {fmt_rate(result.rate)}"
                        f"  p50 {fmt_ms(result.p50_ms)}  p99 {fmt_ms(result.p99_ms)}"
                        f"  CPU/request {cpu_us[name][-1]:.0f} µs  errors {result.error_count}"
                        f" | at {rate:,.0f}/s: p50 {fmt_ms(tail.p50_ms)}  p99"
                        f" {fmt_ms(tail.p99_ms)}  max {fmt_ms(tail.max_ms)}  late {tail.late}"
                        f"  errors {tail.errors} | load {loads[name][-1]:.1f}",
                        flush=True,
                    )
    anchor_rates = [r.rate for r in results["anchor"]]
    return {
        "city": city,
        "body_bytes": len(sample.content),
        "mean_matches": float(np.mean(totals)),
        "rate": rate,
        **{
            name: {
                "rate": median(r.rate for r in rs),
                "p50_ms": median(r.p50_ms for r in rs),
                "p99_ms": median(r.p99_ms for r in rs),
                "errors": sum(r.error_count for r in rs),
                "runs": [round(r.rate, 1) for r in rs],
                "ratio": median(r.rate / a for r, a in zip(rs, anchor_rates, strict=True)),
                "cpu_us": median(cpu_us[name]),
                "load": [round(x, 2) for x in loads[name]],
                "fixed": fixed_summary(fixed[name]),
            }
            for name, rs in results.items()
        },
    }


# ------------------------------------------------------------------------ report


def _yes(ok: bool) -> str:
    return "yes" if ok else "NO"


def report(results: dict[str, Any]) -> str:
    """Print the side-by-side tables (absolute figures and ratios); return them."""
    out: list[str] = []
    inp = results.get("inprocess")
    if inp:
        rows = []
        for radius, by in inp["radii"].items():
            ball = by["BallTree"]
            check = inp["checks"][radius]
            for name, s in by.items():
                speed = ball["p50_ms"] / s["p50_ms"] if s["p50_ms"] else 0.0
                ident = ""
                if name == "geohash index":
                    ident = (
                        f"brute {_yes(check['brute_mismatch'] == 0)}, BallTree "
                        f"{_yes(check['balltree_mismatch'] == 0)}"
                        + (f" ({check['balltree_ties']} ties)" if check["balltree_ties"] else "")
                    )
                elif name == "quadtree":
                    ident = f"= index {_yes(check['quadtree_mismatch'] == 0)}"
                for engine, label in ENGINE_LABELS.items():
                    if name == label:
                        ties = check.get(f"{engine}_ties", 0)
                        ident = f"= index {_yes(check.get(f'{engine}_mismatch', 0) == 0)}" + (
                            f" ({ties} at the edge)" if ties else ""
                        )
                target = ""
                if name == "geohash index":
                    target = _yes(s["p50_ms"] <= ball["p50_ms"] and s["qps"] >= ball["qps"])
                rows.append(
                    [
                        f"{radius / 1000:g} km",
                        name,
                        fmt_rate(s["qps"]),
                        f"{s['p50_ms']:.3f} ms",
                        f"{s['p99_ms']:.3f} ms",
                        f"{speed:.2f}×",
                        ident,
                        target,
                    ]
                )
        out.append(
            print_table(
                f"Radius queries over {inp['places']:,} places ({inp['queries']:,} queries per "
                f"radius, brute force {inp['brute_queries']}), median of {inp['runs']}",
                [
                    "radius",
                    "method",
                    "queries/s",
                    "p50",
                    "p99",
                    "p50 vs BallTree",
                    "identical results",
                    "≥ BallTree",
                ],
                rows,
            )
        )
        mean_results = {
            f"{r / 1000:g} km": c["results"] / max(c["queries"], 1)
            for r, c in inp["checks"].items()
        }
        print(
            "  mean results per query: "
            + ", ".join(f"{k}: {v:,.0f}" for k, v in mean_results.items()),
            flush=True,
        )
        mem, build = inp["memory"], inp["build_s"]
        tree_s = build["BallTree"]

        def vs_tree(seconds: float) -> str:
            return f"{seconds / tree_s:.2f}×" if tree_s else ""

        rows = [
            [
                "geohash index, narrow columns",
                f"{mem['narrow_bytes_per_place']:.1f} B",
                f"{build['geohash index']:.2f} s (with the text index)",
                vs_tree(build["geohash index"]),
                _yes(mem["narrow_bytes_per_place"] < NARROW_TARGET_B),
            ],
            ["  + text index (relevance)", f"{mem['text_bytes_per_place']:.1f} B", "", "", ""],
            [
                "  + quadtree nodes",
                f"{mem['quadtree_bytes_per_place']:.1f} B",
                f"{build['quadtree (over the index)']:.2f} s",
                vs_tree(build["quadtree (over the index)"]),
                "",
            ],
            [
                "BallTree (haversine)",
                f"{mem['balltree_bytes_per_place']:.1f} B",
                f"{tree_s:.2f} s",
                "1.00×",
                "",
            ],
            *[
                [
                    f"{ENGINE_LABELS[e]} (load{': GEOADD' if e == 'redis' else ': COPY + GiST'})",
                    "(in the server)",
                    f"{t:.2f} s",
                    vs_tree(t),
                    "",
                ]
                for e, t in inp.get("engine_load_s", {}).items()
            ],
            [
                "numpy brute force (lat, lng, id)",
                f"{mem['brute_force_bytes_per_place']:.1f} B",
                "0 s",
                "",
                "",
            ],
        ]
        out.append(
            print_table(
                "Memory per place and build time ("
                + (f"median of {inp['runs']} builds)" if inp["runs"] > 1 else "one build)"),
                [
                    "structure",
                    "bytes/place",
                    "build",
                    "build vs BallTree",
                    f"< {NARROW_TARGET_B:.0f} B",
                ],
                rows,
            )
        )
        print(
            "  narrow columns: " + ", ".join(f"{k} {v} B" for k, v in mem["columns"].items()),
            flush=True,
        )
    http = results.get("http")
    if http:
        rate = http.get("rate", FIXED_RATE)
        rows = []
        for name in ("anchor", "ours, cache on", "ours, cache off"):
            s = http[name]
            f = s["fixed"]
            ours = name != "anchor"
            rows.append(
                [
                    name,
                    fmt_rate(s["rate"]),
                    fmt_ms(s["p99_ms"]),
                    f"{s['ratio']:.2f}×",
                    f"{s['cpu_us']:.0f} µs",
                    fmt_ms(f["p50_ms"]),
                    fmt_ms(f["p99_ms"]),
                    fmt_ms(f["max_ms"]),
                    str(s["errors"] + f["errors"] + f["late"]),
                    "–".join(f"{x:.1f}" for x in (min(s["load"]), max(s["load"]))),
                    _yes(s["rate"] >= HTTP_TARGET) if ours else "",
                    _yes(s["ratio"] >= HTTP_RATIO_TARGET) if ours else "",
                    _yes(f["p99_ms"] <= HTTP_P99_TARGET_MS) if ours else "",
                ]
            )
        out.append(
            print_table(
                f"GET /v1/search, {HTTP_RADIUS_M:,} m around {http['city']} (mean "
                f"{http['mean_matches']:.0f} matches, {http['body_bytes']:,} B answers), one "
                f"server process: wrk -t1 -c32 (throughput, its p99, server CPU per request), then "
                f"{rate:,.0f} requests/s offered (p50, p99, max from each request's due time); "
                "median of runs",
                [
                    "server",
                    "req/s",
                    "wrk p99",
                    "vs anchor",
                    "CPU/req",
                    f"p50 @{rate:,.0f}/s",
                    f"p99 @{rate:,.0f}/s",
                    f"max @{rate:,.0f}/s",
                    "errors",
                    "load",
                    f"≥ {HTTP_TARGET:,.0f}/s",
                    f"≥ {HTTP_RATIO_TARGET:g}×",
                    f"p99 ≤ {HTTP_P99_TARGET_MS:g} ms",
                ],
                rows,
            )
        )
    return "\n\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmarks; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--places",
        type=int,
        default=1_000_000,
        help="businesses to generate (1,000,000; cities and airports are added)",
    )
    parser.add_argument("--queries", type=int, default=2_000, help="queries per radius (2,000)")
    parser.add_argument(
        "--brute-queries", type=int, default=100, help="queries per radius for brute force (100)"
    )
    parser.add_argument("--runs", type=int, default=3, help="runs (the median is taken)")
    parser.add_argument("--seconds", type=int, default=10, help="seconds per wrk run (10)")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument(
        "--rate",
        type=float,
        default=FIXED_RATE,
        help=f"requests/s offered for the tail figures ({FIXED_RATE:,.0f})",
    )
    parser.add_argument(
        "--quick", action="store_true", help="100k businesses, 300 queries, one run, 2 s wrk runs"
    )
    parser.add_argument("--only", default="inprocess,http", help="inprocess,http")
    parser.add_argument(
        "--skip-missing-servers",
        action="store_true",
        help="leave out the PostGIS or Redis anchor when its server is not installed",
    )
    parser.add_argument(
        "--no-servers", action="store_true", help="no PostGIS or Redis anchors at all"
    )
    parser.add_argument("--data-dir", type=Path, help="keep (and reuse) the data set here")
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    args = parser.parse_args(argv)
    if args.quick:
        args.places, args.queries, args.brute_queries = 100_000, 300, 30
        args.runs, args.seconds = 1, 2
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    if not only <= {"inprocess", "http"} or not only:
        parser.error("--only takes inprocess and/or http")
    if min(args.queries, args.brute_queries, args.runs, args.seconds) < 1 or args.rate <= 0:
        parser.error(
            "--queries, --brute-queries, --runs and --seconds must be at least 1, --rate positive"
        )
    if "http" in only and wrk_path() is None:
        parser.error("wrk is not installed: apt-get install -y wrk")
    engines = [] if args.no_servers or "inprocess" not in only else ["postgis", "redis"]
    for engine, why in missing_engines(engines).items():
        if not args.skip_missing_servers:
            parser.error(f"{why}; --skip-missing-servers leaves out its anchor")
        print(f"# no {ENGINE_LABELS[engine]} anchor: {why}", flush=True)
        engines.remove(engine)

    started = dt.datetime.now()
    print(f"# bench_places {started:%Y-%m-%d %H:%M} — {machine_summary()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-places-data-") as tmp:
        data_dir = args.data_dir or Path(tmp)
        ensure_places(data_dir, args.places)
        results: dict[str, Any] = {"places": args.places}
        if "inprocess" in only:
            results["inprocess"] = bench_inprocess(
                data_dir,
                queries=args.queries,
                brute_queries=args.brute_queries,
                runs=args.runs,
                engines=engines,
            )
            gc.collect()
        if "http" in only:
            results["http"] = bench_http(
                data_dir,
                seconds=args.seconds,
                runs=args.runs,
                connections=args.connections,
                rate=args.rate,
            )
    print(f"\nload average at the end: {machine_summary().rsplit('load average ', 1)[-1]}")
    report(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))
    return 0


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "serve-anchor":
        sys.exit(_serve_anchor(sys.argv[2:]))
    sys.exit(main())
