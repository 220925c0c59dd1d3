"""Search drill: one shard's primary replica turns slow under a stream of queries.

A small real index is built for the drill — pages made of the Python standard library's
own docstrings, written as the crawler writes them (WARC records plus ``PageFetched``
events) and indexed by :func:`lookup.search.build_index` into four shards — and queried
through the real :class:`~lookup.search.coordinator.Coordinator`, whose fault switch
makes one replica slow. Hedging and the per-shard deadline are the coordinator's own.
"""

from __future__ import annotations

import hashlib
import html
import importlib
import inspect
import time
from pathlib import Path

from lookup.crawler.output import EventLogWriter, WarcStore, iso
from lookup.search import build_index
from lookup.search.coordinator import Coordinator
from lookup.search.events import url_hash_of
from lookup.search.location import open_index_location
from lookup.study.drills_common import median, outcome, percentile, scratch_dir
from lookup.study.measure import Drill, DrillOutcome

__all__ = ["SEARCH_DRILLS", "write_crawl"]

_MODULES = ("collections", "itertools", "functools", "os", "re", "json", "pathlib", "string",
            "textwrap", "datetime", "decimal", "statistics", "random", "math", "heapq",
            "argparse", "logging", "threading", "subprocess", "shutil", "csv", "typing",
            "dataclasses", "enum", "asyncio", "socket", "hashlib", "struct", "codecs", "io",
            "zipfile", "pickle", "inspect", "ast", "unittest", "difflib", "queue",
            "contextlib", "operator", "types")  # fmt: skip
_QUERIES = (
    "return value",
    "iterator object",
    "file path",
    "thread lock",
    "default argument",
    "string format",
    "exception raised",
    "new list",
    "time zone",
    "socket address",
)


def _pages(limit: int) -> list[tuple[str, str, str]]:
    """(url, title, text) for up to ``limit`` pages made of standard-library docstrings."""
    out: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    for name in _MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:  # pragma: no cover - every module above ships with Python
            continue
        for member, obj in sorted(vars(module).items()):
            if member.startswith("_") or inspect.ismodule(obj):
                continue
            doc = inspect.getdoc(obj)
            if not doc or len(doc) < 120 or doc in seen:
                continue
            seen.add(doc)
            out.append((f"http://docs{len(out) % 4}.test/{name}/{member}.html",
                        f"{name}.{member}", doc))  # fmt: skip
            if len(out) >= limit:
                return out
    return out


def write_crawl(directory: Path, pages: int = 160) -> int:
    """Write a crawl directory (WARC + ``events.jsonl``) of ``pages`` docstring pages."""
    warc = WarcStore(directory)
    events = EventLogWriter(directory / "events.jsonl")
    base = time.time() - 86_400
    try:
        found = _pages(pages)
        for i, (url, title, text) in enumerate(found):
            paras = "".join(f"<p>{html.escape(p)}</p>" for p in text.split("\n\n"))
            body = (
                f"<!doctype html><html><head><title>{html.escape(title)}</title></head>"
                f"<body><main><h1>{html.escape(title)}</h1>{paras}</main></body></html>"
            )
            key = warc.write_response(url, 200, [("Content-Type", "text/html; charset=utf-8")],
                                      body.encode(), fetched_at=base + i)  # fmt: skip
            events.append({
                "type": "PageFetched", "url": url, "urlHash": url_hash_of(url),
                "fetchedAt": iso(base + i), "httpStatus": 200,
                "contentHash": "sha256:" + hashlib.sha256(text.encode()).hexdigest(),
                "simhash": "0x0", "storageKey": key, "outLinks": 0, "changed": True,
                "title": title,
            })  # fmt: skip
    finally:
        warc.close()
        events.close()
    return len(found)


SHARD_CHOICES = {
    "tail": "Most queries now take about as long as the slow shard: a query waits for its "
    "slowest shard",
    "hedged": "Queries stay about as fast as before: a copy of the request to the shard's "
    "other replica answers first",
    "partial": "Queries come back on time, but without that shard's results",
}


def slow_search_shard(delay_ms: float = 250.0, hedge: bool = True, deadline_ms: float = 1000.0,
                      queries: int = 24, shards: int = 4, probability: float = 1.0,
                      ) -> DrillOutcome:  # fmt: skip
    """Shard 1's primary sleeps ``delay_ms`` on a share ``probability`` of its requests;
    ``queries`` queries go through the coordinator with ``hedge`` on or off."""
    queries, shards = int(queries), int(shards)
    hedge = bool(hedge)
    if delay_ms <= 0 or deadline_ms <= 0 or queries < 4 or shards < 2:
        raise ValueError("need delay_ms > 0, deadline_ms > 0, queries >= 4 and shards >= 2")
    if not 0 < probability <= 1:
        raise ValueError("probability must be in (0, 1]")
    with scratch_dir("search") as tmp:
        crawl = Path(tmp) / "crawl"
        crawl.mkdir()
        docs = write_crawl(crawl)
        build_index(crawl, Path(tmp) / "index", shards=shards)
        snapshot = open_index_location(Path(tmp) / "index").open()
        if snapshot is None:
            raise RuntimeError("the drill's index was not published")
        co = Coordinator(deadline_ms=deadline_ms, hedge=hedge)
        try:
            co.ensure_shards(len(snapshot.shards))
            healthy = []
            for i in range(max(30, queries)):  # the hedge delay learns each shard's p95
                healthy.append(co.search(snapshot, _QUERIES[i % len(_QUERIES)])["tookMs"])
            co.reset_counters()
            co.set_fault(1, 0, "slow", delay_ms=delay_ms, probability=probability)
            took, partial = [], 0
            for i in range(queries):
                body = co.search(snapshot, _QUERIES[i % len(_QUERIES)])
                took.append(float(body["tookMs"]))
                partial += body["shardsAnswered"] < body["shardsQueried"]
            status = co.status()["shards"][1]
        finally:
            co.close()
    base = median(healthy[-queries:])
    slow_line = delay_ms / 2
    slow = sum(t >= slow_line for t in took)
    slow_share, partial_share = slow / queries, partial / queries
    if partial_share >= 0.2:
        choice = "partial"
    elif slow_share >= 0.5 * probability:
        choice = "tail"
    else:
        choice = "hedged"
    figures = {
        "documents": docs, "shards": shards, "queries": queries, "delay (ms)": delay_ms,
        "hedging": float(hedge), "deadline (ms)": deadline_ms,
        "healthy median (ms)": round(base, 2), "median (ms)": round(median(took), 2),
        "p95 (ms)": round(percentile(took, 95), 2), "max (ms)": round(max(took), 2),
        "queries at least half the delay": slow, "slow share": round(slow_share, 4),
        "partial answers": partial, "hedges fired on the slow shard": status["hedgesFired"],
        "hedge wins": status["hedgeWins"], "requests slowed": status["replicas"][0]["slowed"],
    }  # fmt: skip
    summary = (
        f"Shard 1's primary slowed by {delay_ms:g} ms with hedging "
        f"{'on' if hedge else 'off'}: median {median(took):.0f} ms (healthy "
        f"{base:.0f} ms), {slow}/{queries} queries took at least {slow_line:g} ms, "
        f"{partial} came back without a shard."
    )
    chain = (
        f"{docs} pages indexed into {shards} shards, two replicas each, by the real indexer",
        f"{max(30, queries)} healthy queries first (each shard learns its p95 hedge delay; "
        f"median {base:.1f} ms)",
        f"fault switch: shard 1, replica 0 sleeps {delay_ms:g} ms on "
        f"{probability:.0%} of requests; {queries} queries, hedging "
        f"{'on' if hedge else 'off'}, deadline {deadline_ms:g} ms",
        f"{slow} took at least half the delay; {partial} answered without every shard; "
        f"{status['hedgesFired']} hedges fired, {status['hedgeWins']} won",
        "choice: a fifth or more partial → partial; at least half of the slowed share at "
        "half the delay or more → tail; otherwise → hedged",
    )
    return outcome(SHARD_CHOICES, choice, figures, summary, chain)


SEARCH_DRILLS: dict[str, Drill] = {
    "slow_search_shard": Drill(
        "slow_search_shard",
        "One search shard turns slow",
        SHARD_CHOICES,
        slow_search_shard,
        {
            "delay_ms": 250.0,
            "hedge": True,
            "deadline_ms": 1000.0,
            "queries": 24,
            "shards": 4,
            "probability": 1.0,
        },
    ),
}
