"""The typeahead benchmark's code paths at a toy size, so they do not rot.

No timing assertions: only that the corpus has its shape, that every structure gives
the same answers as a brute-force ranking, that servers start, answer and stop, and
that the report prints.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import bench_typeahead as bt
from benchmarks.common import wrk_path
from lookup.typeahead import DEFAULT_BLOCKLIST, TermBlocklist

needs_wrk = pytest.mark.skipif(
    wrk_path() is None, reason="wrk is not installed (apt-get install wrk)"
)
N = 3_000


@pytest.fixture(scope="module")
def corpus() -> bt.Corpus:
    return bt.make_corpus(N)


@pytest.fixture(scope="module")
def ours(corpus: bt.Corpus, tmp_path_factory: pytest.TempPathFactory) -> bt.Ours:
    return bt.build_ours(corpus, tmp_path_factory.mktemp("bench-ta") / "snapshots")


def brute_force(corpus: bt.Corpus, prefix: str) -> list[str]:
    """The oracle: every query with the prefix, best score first, ten of them."""
    hits = [
        (s, q) for q, s in zip(corpus.queries, corpus.scores, strict=True) if q.startswith(prefix)
    ]
    return [q for _, q in sorted(hits, key=lambda h: -h[0])[:10]]


def test_corpus_is_distinct_ranked_and_safe(corpus: bt.Corpus) -> None:
    assert len(corpus) == N == len(set(corpus.queries))
    assert all((corpus.scores[1:] < corpus.scores[:-1]).tolist())
    assert abs(float(corpus.popularity.sum()) - 1.0) < 1e-9
    blocklist = TermBlocklist(DEFAULT_BLOCKLIST)
    assert not any(blocklist.blocks(q) for q in corpus.queries)
    assert any(" " in q for q in corpus.queries)  # word combinations, not only words
    prefixes = bt.draw_prefixes(corpus, 60)
    assert {len(p) for p in prefixes["1 char"]} == {1}
    assert {len(p) for p in prefixes["2 chars"]} == {2}
    assert all(3 <= len(p) <= 8 for p in prefixes["3-8 chars"])


def test_every_structure_answers_like_brute_force(corpus: bt.Corpus, ours: bt.Ours) -> None:
    anchors = {
        "sorted": bt.SortedList(corpus).top,
        "marisa": bt.MarisaAnchor(corpus).top,
        "pygtrie": bt.PygtrieAnchor(corpus).top,
    }
    prefixes = bt.draw_prefixes(corpus, 90)
    for p in {x for ps in prefixes.values() for x in ps} | {"zzzq", ""}:
        want = brute_force(corpus, p)
        assert ours.find(p) == want, p
        assert ours.lookup_exact(p) == want, p  # the prefix answers (word-anywhere ones apart)
        for name, top in anchors.items():
            assert top(p) == want, (name, p)
    assert bt.check_answers(ours.lookup_exact, anchors, prefixes) > 0
    with pytest.raises(AssertionError):
        bt.check_answers(ours.lookup, {"wrong": lambda p: ["nope"]}, prefixes)


class ChargedClock:
    """A nanosecond clock that moves only when a method charges it: exact latencies."""

    def __init__(self) -> None:
        self.ns = 0

    def __call__(self) -> int:
        return self.ns


def test_latency_and_memory_have_their_shape(
    corpus: bt.Corpus, ours: bt.Ours, monkeypatch: pytest.MonkeyPatch
) -> None:
    prefixes = bt.draw_prefixes(corpus, 30)
    clock = ChargedClock()
    monkeypatch.setattr(bt.time, "perf_counter_ns", clock)
    calls = {"n": 0}
    # Per class a known cost: 1 char 2 µs, 2 chars 3 µs, longer 4 µs; every tenth call of
    # the fast method 50 µs more (a tail above 1 %); the slow one a flat 7 µs.
    cost_us = {1: 2.0, 2: 3.0}

    def fast(prefix: str) -> list[str]:
        calls["n"] += 1
        tail = 50.0 if calls["n"] % 10 == 0 else 0.0
        clock.ns += int((cost_us.get(len(prefix), 4.0) + tail) * 1000)
        return ours.find(prefix)

    def slow(prefix: str) -> list[str]:
        clock.ns += 7_000
        return bt.SortedList(corpus).top(prefix)

    methods = {"ours: trie walk + top 10": fast, "sorted": slow}
    lat = bt.bench_latency(methods, prefixes, runs=2, fast_calls=50, slow_budget_s=0.01)
    want = {"1 char": 2.0, "2 chars": 3.0, "3-8 chars": 4.0}
    for cls in bt.CLASSES:
        f = lat["ours: trie walk + top 10"][cls]
        assert f["p50"] == pytest.approx(want[cls]) and f["p50_runs"] == [want[cls]] * 2
        assert f["p99"] == pytest.approx(want[cls] + 50.0)  # the tail shows at p99
        assert f["calls"] == 100  # fast_calls per run, two runs
        g = lat["sorted"][cls]
        assert g["p50"] == pytest.approx(7.0) == g["p99"] and g["calls"] >= 40
    monkeypatch.undo()
    mem = bt.resident_per_query(ours.path, prefixes["1 char"])
    assert mem["file_bytes"] == ours.path.stat().st_size
    assert mem["file_per_query"] == pytest.approx(mem["file_bytes"] / N)
    trie = mem["rss_bytes"] - mem["infix_bytes"]
    assert mem["per_query"] == pytest.approx(trie / N) and mem["per_query"] > 0
    assert mem["infix_per_query"] == pytest.approx(mem["infix_bytes"] / N)


def test_main_without_http_prints_every_table(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out_json = tmp_path / "r.json"
    argv = [
        "--queries",
        "2000",
        "--runs",
        "1",
        "--fast-calls",
        "100",
        "--slow-budget",
        "0.02",
        "--skip-http",
        "--json",
        str(out_json),
    ]
    assert bt.main(argv) == 0
    out = capsys.readouterr().out
    assert "answers identical across all structures" in out
    assert "In-process suggest latency" in out and "(c) pygtrie items + select" in out
    assert "resident memory after loading" in out
    assert out_json.exists()


def test_main_rejects_bad_arguments() -> None:
    with pytest.raises(SystemExit):
        bt.main(["--queries", "5"])
    with pytest.raises(SystemExit):
        bt.main(["--runs", "0"])


@needs_wrk
def test_http_at_tiny_size(corpus: bt.Corpus, ours: bt.Ours) -> None:
    http = bt.bench_http(ours, corpus, seconds=1, runs=1, connections=4, warmup=0, rate=100)
    assert http["rate"] == 100
    for name in ("bare", "ours"):
        assert http[name]["rate"] > 0
        assert http[name]["errors"] == 0
        assert http[name]["cpu_us"] > 0 and len(http[name]["load"]) == 1
        # the tail at a fixed offered load: its shape, never its speed
        fixed = http[name]["fixed"]
        assert fixed["errors"] == 0
        assert 0 < fixed["p50_ms"] <= fixed["p99_ms"] <= fixed["p999_ms"] <= fixed["max_ms"]
        assert fixed["achieved"] > 0 and len(fixed["runs_p99_ms"]) == 1
    assert http["ratio"] > 0
    text = bt.report(
        {
            "queries": N,
            "connections": 4,
            "http": http,
            "build": {
                "build_s": ours.build_s,
                "write_s": ours.write_s,
                "nodes": ours.nodes,
                "plain_nodes": ours.plain_nodes,
            },
            "memory": {
                "rss_bytes": 1.0,
                "per_query": 1.0,
                "file_bytes": 1.0,
                "file_per_query": 1.0,
            },
            "latency": {
                name: {cls: {"p50": 1.0, "p99": 2.0, "calls": 1} for cls in bt.CLASSES}
                for name in (
                    "ours: trie walk + top 10",
                    "ours: SuggestService.lookup",
                    "(a) sorted list: bisect + heapq",
                )
            },
        }
    )
    assert "GET /v1/suggest on lookup serve" in text
    assert "bare Starlette constant body (anchor)" in text
    assert "Tail at a fixed offered load: 100 requests/s" in text
    assert f"p99 @100/s ≤ {bt.HTTP_P99_TARGET_MS:g} ms" in text


@needs_wrk
def test_http_through_the_shard_router_at_tiny_size(corpus: bt.Corpus, ours: bt.Ours) -> None:
    http = bt.bench_http(
        ours, corpus, seconds=1, runs=1, connections=4, warmup=0, shards=2, hop_requests=100,
        rate=100,
    )  # fmt: skip
    sharded = http["sharded"]
    assert sharded["rate"] > 0 and sharded["errors"] == 0 and sharded["shards"] == 2
    assert sharded["fixed"]["errors"] == 0 and sharded["fixed"]["p99_ms"] > 0
    assert 0 < sharded["head_share"] < 1 and sharded["ratio_direct"] > 0
    assert set(http["hop"]) == {"aiohttp c1", "aiohttp c32", "httpx c1", "httpx c32"}
    text = bt.report(
        {
            "queries": N,
            "connections": 4,
            "http": http,
            "build": {"build_s": 1.0, "write_s": 1.0, "nodes": 1, "plain_nodes": 1},
            "memory": {"rss_bytes": 1.0, "per_query": 1.0, "file_bytes": 1.0,
                       "file_per_query": 1.0},
            "latency": {
                name: {cls: {"p50": 1.0, "p99": 2.0, "calls": 1} for cls in bt.CLASSES}
                for name in ("ours: trie walk + top 10", "ours: SuggestService.lookup",
                             "(a) sorted list: bisect + heapq")
            },
        }
    )  # fmt: skip
    assert "via the router, 2 shard servers" in text and "The router's hop alone" in text
