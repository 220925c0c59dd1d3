"""``benchmarks/bench_crawler.py`` at a toy size, so it does not rot. No timing assertions:
only that every crawler crawls the same sandbox, the sandbox process is gone afterwards,
every detector scores the same labelled set, and the report has its shape."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from benchmarks import bench_crawler
from lookup.crawler.dedup import shingles
from lookup.crawler.sandbox import LoggedRequest


def test_the_benchmark_runs_end_to_end_at_toy_size(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    code = bench_crawler.main(
        [
            "--pages", "25", "--runs", "1", "--docs", "6", "--sandbox-size", "small",
            "--no-warm-up", "--json", str(out),
        ]
    )  # fmt: skip
    assert code == 0
    figures = json.loads(out.read_text())
    crawl = figures["crawl"]
    assert set(crawl) == {
        "ours (1 per host, 1 per address)", "Scrapy (1 per host)", "Scrapy (8 per host)",
    }  # fmt: skip
    for name, r in crawl.items():
        assert r["pages"] >= 20, name  # each crawler reached its page cap
        assert r["pages_per_second"] > 0 and r["hosts"] >= 2
        (run,) = r["runs"]
        assert run["ok"] <= run["pages"] <= run["requests"]
    dedup = figures["dedup"]
    assert set(dedup["detectors"]) == set(bench_crawler.DETECTORS)
    for s in dedup["detectors"].values():
        assert s["docs"] == dedup["docs"] and s["true_duplicates"] == dedup["docs"] - 6
        assert 0.0 <= s["precision"] <= 1.0 and 0.0 <= s["recall"] <= 1.0


def test_mutations_keep_a_page_near_its_original() -> None:
    rng = random.Random(3)
    (text,) = bench_crawler.real_pages(1)
    words = text.split()
    assert 150 <= len(words) <= 2000
    for how in bench_crawler.MUTATIONS:
        variant = bench_crawler.mutate(text, how, rng)
        assert variant != text
        a, b = set(shingles(text)), set(shingles(variant))
        assert len(a & b) / len(a | b) > 0.6, how
        if how == "reordered":
            assert sorted(variant.split()) == sorted(words)
    with pytest.raises(ValueError):
        bench_crawler.mutate(text, "translated", rng)


def test_scoring_counts_right_and_wrong_verdicts() -> None:
    docs = [
        bench_crawler.LabelledDoc("a", 0, "original", "x"),
        bench_crawler.LabelledDoc("a1", 0, "advert", "x"),  # truly a duplicate of a
        bench_crawler.LabelledDoc("b", 1, "original", "y"),  # not a duplicate
        bench_crawler.LabelledDoc("b1", 1, "timestamp", "y"),  # truly a duplicate of b
    ]
    answers = {"a": None, "a1": "a", "b": "a", "b1": None}  # one right, one wrong, one missed
    s = bench_crawler.score("fixed", lambda: lambda key, text: answers[key], docs)
    assert (s.true_duplicates, s.flagged) == (2, 2)
    assert s.precision == 0.5 and s.recall == 0.5 and s.f1 == 0.5
    assert s.recall_by_kind == {"advert": 1.0, "timestamp": 0.0}


def test_measure_reads_throughput_from_the_log() -> None:
    def req(seq: int, target: str, start: float, end: float, status: int = 200) -> LoggedRequest:
        return LoggedRequest(
            seq, "h.sandbox.test", "127.0.0.2", "GET", target, status, start, end, start,
            10, "UA", False,
        )  # fmt: skip

    run = bench_crawler.measure(
        "x",
        [req(0, "/robots.txt", 10.0, 10.1), req(1, "/", 10.2, 10.5), req(2, "/a", 11.0, 12.1, 404)],
        wall=3.0,
    )
    assert (run.requests, run.pages, run.ok, run.hosts) == (3, 2, 1, 1)
    assert run.seconds == pytest.approx(2.1) and run.pages_per_second == pytest.approx(2 / 2.1)
    assert bench_crawler.measure("empty", [], 1.0).pages_per_second == 0.0
