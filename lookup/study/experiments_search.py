"""Predict-then-run experiment on the search engine: the fan-out tail, with and without hedging.

A small index is built for real (:func:`lookup.search.build_index`) from generated pages
written in the crawler's own output format (WARC records plus ``PageFetched`` events) in a
temporary directory, served by a :class:`lookup.search.SearchService` whose
:class:`~lookup.search.coordinator.Coordinator` fans every query out to every shard. Each
shard's primary replica gets a fault switch — slow by ``delay_ms`` with probability
``slow_share`` — and the queries' own ``tookMs`` are measured.
"""

from __future__ import annotations

import math
import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

from lookup.study.measure import Experiment, Measured

__all__ = ["EXPERIMENTS_SEARCH", "build_small_index", "fanout_tail"]

_START = 1_772_323_200.0  # 2026-03-01, when the generated pages were "fetched"
_FIGURES = ("slow_share", "p99_s")


def _vocabulary(n: int = 3_000) -> list[str]:
    import wordfreq

    from lookup.search.analysis import STOP_WORDS

    return [w for w in wordfreq.top_n_list("en", n) if w.isalpha() and w not in STOP_WORDS]


def build_small_index(work: Path, pages: int, shards: int, seed: int) -> list[str]:
    """Write ``pages`` generated pages as a crawl under ``work/crawl``, index them into
    ``shards`` shards under ``work/index``; returns the vocabulary the pages use."""
    from lookup.crawler.dedup import content_hash
    from lookup.crawler.output import EventLogWriter, WarcStore, iso
    from lookup.kit.urlnorm import url_hash
    from lookup.search import build_index

    words = _vocabulary()
    rng = random.Random(seed)
    crawl = work / "crawl"
    warc, log = WarcStore(crawl), EventLogWriter(crawl / "events.jsonl")
    try:
        for n in range(pages):
            title = " ".join(rng.choices(words[:400], k=5)).capitalize()
            body = " ".join(rng.choices(words, k=rng.randint(40, 120)))
            url = f"http://gen{n % 8}.corpus.test/page/{n}.html"
            html = f"<html><head><title>{title}</title></head><body><p>{body}</p></body></html>"
            when = _START + 60.0 * n
            key = warc.write_response(
                url,
                200,
                [("Content-Type", "text/html; charset=utf-8")],
                html.encode(),
                fetched_at=when,
            )
            log.append(
                {
                    "type": "PageFetched",
                    "url": url,
                    "urlHash": url_hash(url),
                    "fetchedAt": iso(when),
                    "httpStatus": 200,
                    "contentHash": content_hash(title + "\n" + body),
                    "simhash": "0x0",
                    "storageKey": key,
                    "outLinks": 0,
                    "changed": True,
                    "title": title,
                }
            )
    finally:
        warc.close()
        log.close()
    build_index(crawl, work / "index", shards=shards)
    return words


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def fanout_tail(
    shards: int = 8,
    slow_share: float = 0.02,
    delay_ms: float = 100.0,
    queries: int = 120,
    hedge: bool = False,
    figure: str = "slow_share",
    pages: int = 200,
    seed: int = 11,
) -> Measured:
    """Queries over ``shards`` shards whose primaries are each slow by ``delay_ms`` with
    probability ``slow_share``; ``hedge`` sends a late shard's request to its replica.

    ``figure="slow_share"``: the share of queries taking at least half of ``delay_ms``;
    ``figure="p99_s"``: the 99th-percentile query time in seconds.
    """
    from lookup.search import Coordinator, SearchService

    if figure not in _FIGURES:
        raise ValueError(f"figure must be one of {', '.join(_FIGURES)}")
    if not (
        1 <= shards <= 32
        and 0.0 <= slow_share <= 1.0
        and 0 < delay_ms <= 2_000
        and 1 <= queries <= 1_000
        and pages >= 10 * shards
    ):
        raise ValueError(
            "need 1 <= shards <= 32, 0 <= slow_share <= 1, 0 < delay_ms <= 2000, "
            "1 <= queries <= 1000 and pages >= 10 × shards"
        )
    work = Path(tempfile.mkdtemp(prefix="study-search-"))
    state = random.getstate()  # the fault switch draws from the module's generator
    service: Any = None
    try:
        words = build_small_index(work, pages, shards, seed)
        coordinator = Coordinator(deadline_ms=max(5_000.0, 10 * delay_ms), hedge=bool(hedge))
        service = SearchService(work / "index", coordinator=coordinator, realtime=False)
        service.reload()
        rng = random.Random(seed + 1)
        texts = [
            f"{rng.choice(words[:600])} {rng.choice(words[:600])}" for _ in range(queries + 30)
        ]
        for text in texts[:30]:  # healthy queries first: each shard learns its own p95
            service.search(text, ranking="hand", suggest=False)
        coordinator.reset_counters()
        for s in range(shards):
            coordinator.set_fault(s, 0, "slow", delay_ms=delay_ms, probability=slow_share)
        random.seed(seed)
        took: list[float] = []
        slowed = 0
        for text in texts[30:]:
            before = sum(g.replicas[0].stats.slowed for g in coordinator.groups)
            body = service.search(text, ranking="hand", suggest=False)
            took.append(float(body["tookMs"]))
            slowed += sum(g.replicas[0].stats.slowed for g in coordinator.groups) > before
        status = coordinator.status()["shards"]
    finally:
        random.setstate(state)
        if service is not None:
            service.close()
        shutil.rmtree(work, ignore_errors=True)
    threshold = delay_ms / 2
    slow = sum(t >= threshold for t in took)
    hedges = sum(s["hedgesFired"] for s in status)
    wins = sum(s["hedgeWins"] for s in status)
    p50, p99 = _p(took, 0.5), _p(took, 0.99)
    share = slow / len(took)
    value = share if figure == "slow_share" else p99 / 1000.0
    chain = (
        f"indexed {pages} generated pages into {shards} shards, two replicas each; every "
        "query goes to every shard",
        f"each primary made slow by {delay_ms:g} ms with probability {slow_share:g}; hedging "
        + (
            "on: a shard late past its own p95 is asked again at its replica"
            if hedge
            else "off: the query waits for its slowest shard"
        ),
        f"ran {len(took)} queries; {slowed} of them drew at least one slow primary "
        f"(1 − (1 − {slow_share:g})^{shards} = {1 - (1 - slow_share) ** shards:.1%} expected)",
        f"hedges fired: {hedges}; won by the replica: {wins}",
        f"queries taking {threshold:g} ms or more: {slow} = {share:.1%}",
        f"query time: median {p50:.1f} ms, 99th percentile {p99:.1f} ms",
    )
    unit = "fraction" if figure == "slow_share" else "s"
    return Measured(
        value,
        unit,
        chain,
        {
            "queries": len(took),
            "queries with a slowed primary": slowed,
            "slow queries": slow,
            "slow share": share,
            "p50 ms": p50,
            "p99 ms": p99,
            "hedges fired": hedges,
            "hedge wins": wins,
            "threshold ms": threshold,
        },
    )


EXPERIMENTS_SEARCH = (
    Experiment(
        "fanout_tail",
        "Slow queries when every query fans out to every shard, with and without hedging",
        fanout_tail,
        {
            "shards": 8,
            "slow_share": 0.02,
            "delay_ms": 100.0,
            "queries": 120,
            "hedge": False,
            "figure": "slow_share",
            "pages": 200,
            "seed": 11,
        },
    ),
)
