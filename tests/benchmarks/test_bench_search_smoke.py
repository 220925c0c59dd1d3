"""``benchmarks/bench_search.py`` at a toy size, so it does not rot. No timing assertions:
only that every engine indexes the same corpus, answers, and the report has its shape."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import bench_search, profile_search
from lookup.search import build_index


def test_the_benchmark_runs_end_to_end_at_toy_size(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    code = bench_search.main(
        [
            "--docs", "240", "--queries", "16", "--runs", "1", "--crawl-pages", "12",
            "--rank-bm25-queries", "4", "--slow-ms", "30", "--shards", "2",
            "--workdir", str(tmp_path / "work"), "--json", str(out),
        ]
    )  # fmt: skip
    assert code in (0, 1)  # 1 = a target missed, which a toy corpus may well do
    figures = json.loads(out.read_text())
    corpus = figures["corpus"]
    assert corpus["docs"] == 240 and corpus["crawled"] > 0
    assert corpus["crawled"] + corpus["generated"] == 240
    assert set(figures["build"]) == {
        "ours (1 shard)", "ours (2 shards)", "bm25s", "rank_bm25", "SQLite FTS5", "tantivy",
    }  # fmt: skip
    engines = figures["queries"]["all"]
    assert len(engines) == 11  # ours OR and AND also run exhaustively
    assert all(e["qps"] > 0 and e["p50_ms"] <= e["p99_ms"] for e in engines.values())
    assert len(figures["tail"]) == 5
    assert figures["tail"]["no slow shard, hedging on"]["deadlineMisses"] == 0
    # the slow primary was overtaken by its replica whenever hedging was on
    slow = figures["tail"]["shard 0 primary +30 ms always, hedging on"]
    assert slow["hedgesFired"] >= 1
    assert {"ours OR / bm25s (q/s)", "p99 slow shard hedged / p99 healthy"} <= set(
        figures["ratios"]
    )
    # same tokens, same formula: our OR ranking and bm25s's agree (ties may differ)
    assert figures["agreementWithBm25s"] >= 0.9
    assert (code == 1) == bool(figures["missed"])
    # ours against tantivy and pruned against exhaustive, one ratio per run (issue 24)
    assert {k: len(v) for k, v in figures["perRunRatios"].items()} == {
        "ours AND / tantivy AND": 1, "ours OR / tantivy OR": 1,
        "ours AND pruned / exhaustive": 1, "ours OR pruned / exhaustive": 1,
    }  # fmt: skip
    assert len(figures["loadAverageAfter"]) == 3
    # the profile by stage runs over the same work directory
    assert profile_search.main(["--workdir", str(tmp_path / "work"), "--queries", "8"]) == 0


def test_generated_pages_index_like_crawled_ones(tmp_path: Path) -> None:
    crawl = tmp_path / "crawl"
    crawl.mkdir()
    assert bench_search.generate_pages(crawl, 50, seed=3) == 50
    docs = bench_search.read_corpus(crawl)
    assert len(docs) == 50 and all(d.title and len(d.text.split()) >= 20 for d in docs)
    report = build_index(crawl, tmp_path / "index", shards=2)
    assert report.live_docs == 50 and report.failed == 0
    # the generator's words follow real English frequencies: common words dominate
    words = [w for d in docs for w in d.text.split()]
    assert words.count("the") > words.count("chair")
    queries = bench_search.make_queries(docs, 30, seed=1)
    assert len(queries) == 30 and all(1 <= len(q.split()) <= 3 for q in queries)


def test_engines_are_timed_in_a_shuffled_order_by_the_given_clock() -> None:
    """Issue 24: with the order only rotated each engine kept one neighbour, and identical
    code timed 0.68-0.74× apart by which engine ran before it. Now every engine answers
    every query once, in an order drawn per query, each following every other one."""
    calls: list[tuple[str, str]] = []
    names = [f"e{i}" for i in range(5)]
    searches = {n: (lambda q, n=n: calls.append((n, q))) for n in names}
    ticks = iter(range(10**6))
    lat = bench_search.time_interleaved(
        searches, [f"q{i}" for i in range(200)], {"e4": 50}, seed=3,
        clock=lambda: float(next(ticks)),
    )  # fmt: skip
    assert {n: len(v) for n, v in lat.items()} == {"e0": 200, "e1": 200, "e2": 200, "e3": 200,
                                                   "e4": 50}  # fmt: skip
    assert all(v == 1000.0 for vs in lat.values() for v in vs)  # one tick per call, in ms
    orders = {tuple(n for n, q in calls if q == f"q{i}") for i in range(50)}
    assert len(orders) > 10  # not one order rotated
    follows = {(a[0], b[0]) for a, b in zip(calls, calls[1:], strict=False) if a[1] == b[1]}
    assert follows == {(a, b) for a in names for b in names if a != b}
    again: list[tuple[str, str]] = []
    searches = {n: (lambda q, n=n: again.append((n, q))) for n in names}
    bench_search.time_interleaved(searches, [f"q{i}" for i in range(200)], {"e4": 50}, seed=3)
    assert again == calls  # seeded: a run repeats
