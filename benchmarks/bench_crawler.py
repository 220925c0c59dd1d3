"""Crawler benchmarks, each judged against anchors measured in the same run.

1. **Crawl throughput** on the sandbox web (``lookup sandbox --size large
   --crawl-delay 0`` in its own process), politeness delays set to zero, 8 content
   hosts on 6 loopback addresses, every crawler capped at the same page count (1,000:
   all reach it — past ~1,260 ours has cut every trap URL and runs out) and started
   from the same seeds. Anchor: **Scrapy** crawling the same sandbox in the
   same run with equal concurrency (64 requests in flight in all, one per host), and
   Scrapy with 8 per host for scale. Pages per second are measured **from the
   sandbox's own request log** (first request's start to last answer's end), the same
   yardstick for every crawler, which also shows how many requests each kept in
   flight per host and per address. Target: ≥ Scrapy's pages/s with one request per
   host, while keeping the rules Scrapy does not (one request per *address* too,
   robots.txt fail-closed, trap cuts, content dedup, WARC + SQLite durability).
2. **Near-duplicate detection** on a labelled set made by mutating real pages (the
   ``pydoc`` text of standard-library classes and functions): a timestamp, an advert,
   header/footer boilerplate, two sections swapped, or two of these at once. Every
   page is checked in a shuffled stream as a crawler would (originals indexed,
   duplicates pointing at them). Compared: our SimHash (exact + 64-bit SimHash with
   4 × 16-bit block tables, ≤ 3 bits), our full detector (+ MinHash LSH),
   ``datasketch`` MinHash LSH alone, and the ``simhash`` package (``SimhashIndex``,
   k = 3) on the same word 3-shingles. Figures: documents per second, precision,
   recall, F1. Target: near-duplicate F1 ≥ 0.9.

    .venv/bin/python benchmarks/bench_crawler.py              # 1,000 pages × 3 runs; 250 base pages
    .venv/bin/python benchmarks/bench_crawler.py --quick      # 500 pages × 1 run; 120 base pages
    .venv/bin/python benchmarks/bench_crawler.py --only crawl --pages 2000 --runs 1

Workers (run by the benchmark, each in its own process)::

    python benchmarks/bench_crawler.py worker ours   --sandbox URL --pages N --out DIR
    python benchmarks/bench_crawler.py worker scrapy --sandbox URL --pages N --per-host K
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks.common` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import machine_summary, median, print_table
from lookup.crawler.sandbox import LoggedRequest
from lookup.crawler.session import SandboxProcess, probe_sandbox, read_request_log

THIS_FILE = Path(__file__).resolve()
#: The sandbox hosts with content; the hostile ones (slow, hung, busy, ...) measure
#: timeouts, not throughput, and are left out for every crawler alike.
CONTENT_HOSTS = ("docs", "www", "mirror", "news", "shop", "calendar", "blog", "wiki")
OURS_AGENT = "LookupBot/0.1 (+benchmark)"
SCRAPY_AGENT = "ScrapyBench/1.0 (+benchmark)"
F1_TARGET = 0.9


# ------------------------------------------------------------------ crawl throughput


@dataclass(frozen=True)
class CrawlRun:
    """One crawler's run, as the sandbox's request log saw it."""

    crawler: str
    requests: int
    pages: int  # requests other than robots.txt
    ok: int  # of which answered 2xx
    seconds: float  # first request's start → last answer's end
    pages_per_second: float
    hosts: int  # hosts that answered
    wall_seconds: float  # the worker process, start-up included


def measure(name: str, entries: list[LoggedRequest], wall: float) -> CrawlRun:
    """Throughput and concurrency of one run from the sandbox's log entries."""
    if not entries:
        return CrawlRun(name, 0, 0, 0, 0.0, 0.0, 0, wall)
    pages = [e for e in entries if e.path != "/robots.txt"]
    span = max(e.end for e in entries) - min(e.start for e in entries)
    return CrawlRun(
        crawler=name,
        requests=len(entries),
        pages=len(pages),
        ok=sum(1 for e in pages if 200 <= e.status < 300),
        seconds=span,
        pages_per_second=len(pages) / span if span > 0 else 0.0,
        hosts=len({e.host for e in entries}),
        wall_seconds=wall,
    )


def _content_sandbox(url: str) -> tuple[list[str], dict[str, str]]:
    """Seeds (each content host's front page) and the name table of the content hosts."""
    probe = probe_sandbox(url, timeout=10.0)
    if not probe.up:
        raise RuntimeError(f"no sandbox web at {url}: {probe.problem}")
    port = probe.manifest["port"]
    hosts = {h["name"]: h["address"] for h in probe.hosts if h["key"] in CONTENT_HOSTS}
    seeds = [f"http://{name}:{port}/" for name in sorted(hosts)]
    return seeds, hosts


def run_worker(kind: str, sandbox: str, pages: int, per_host: int, out: Path) -> CrawlRun:
    """Run one crawler in its own process and measure it from the sandbox's log."""
    since = len(read_request_log(sandbox))
    argv = [sys.executable, str(THIS_FILE), "worker", kind, "--sandbox", sandbox]
    argv += ["--pages", str(pages), "--per-host", str(per_host), "--out", str(out)]
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"the {kind} worker failed:\n{done.stdout}\n{done.stderr}")
    time.sleep(0.3)  # let the sandbox log the last answers
    agent = OURS_AGENT if kind == "ours" else SCRAPY_AGENT
    entries = [e for e in read_request_log(sandbox, since=since) if e.user_agent == agent]
    name = "ours (1 per host, 1 per address)" if kind == "ours" else f"Scrapy ({per_host} per host)"
    return measure(name, entries, wall)


def _worker_ours(sandbox: str, pages: int, out: Path) -> int:
    import asyncio

    from lookup.crawler import CrawlConfig, Crawler

    seeds, hosts = _content_sandbox(sandbox)
    config = CrawlConfig(
        out,
        seeds=seeds,
        hosts=hosts,
        strict_hosts=True,
        user_agent=OURS_AGENT,
        concurrency=64,
        min_delay=0.0,
        delay_factor=0.0,
        max_pages=pages,
        timeout=15.0,
    )
    report = asyncio.run(Crawler(config).run())
    print(json.dumps({"pages": report.pages, "stop": report.stop_reason}))
    return 0


def _worker_scrapy(sandbox: str, pages: int, per_host: int) -> int:
    import scrapy
    from scrapy.crawler import CrawlerProcess
    from scrapy.http import TextResponse
    from scrapy.resolver import CachingThreadedResolver
    from twisted.internet import defer

    seeds, hosts = _content_sandbox(sandbox)
    table = {name.lower(): addr for name, addr in hosts.items()}

    class SandboxResolver(CachingThreadedResolver):
        """The sandbox's name table instead of DNS (there is no DNS for .sandbox.test)."""

        def getHostByName(self, name: str, timeout: Sequence[int] = ()) -> Any:  # noqa: N802
            addr = table.get(name.lower())
            if addr is None:
                return defer.fail(OSError(f"{name} is not in the sandbox's name table"))
            return defer.succeed(addr)

    # Scrapy imports this module by name for DNS_RESOLVER.
    sys.modules[__name__].SandboxResolver = SandboxResolver  # type: ignore[attr-defined]

    class SandboxSpider(scrapy.Spider):
        name = "sandbox"
        allowed_domains = sorted(hosts)
        start_urls = seeds

        def parse(self, response: Any) -> Any:
            if not isinstance(response, TextResponse):
                return
            for href in response.css("a::attr(href)").getall():
                yield response.follow(href, callback=self.parse)

    process = CrawlerProcess(
        settings={
            "USER_AGENT": SCRAPY_AGENT,
            "ROBOTSTXT_OBEY": True,
            "ROBOTSTXT_USER_AGENT": "LookupBot",  # the same robots.txt group as ours
            "CONCURRENT_REQUESTS": 64,
            "CONCURRENT_REQUESTS_PER_DOMAIN": per_host,
            "DOWNLOAD_DELAY": 0,
            "RANDOMIZE_DOWNLOAD_DELAY": False,
            "AUTOTHROTTLE_ENABLED": False,
            "CLOSESPIDER_PAGECOUNT": pages,
            "DOWNLOAD_TIMEOUT": 15,
            "DNS_RESOLVER": f"{__name__}.SandboxResolver",
            "LOG_LEVEL": "ERROR",
            "TELNETCONSOLE_ENABLED": False,
            "COOKIES_ENABLED": False,
        }
    )
    process.crawl(SandboxSpider)
    process.start()
    return 0


def bench_crawl(
    pages: int, runs: int, workdir: Path, *, size: str = "large", warm_up: bool = True
) -> dict[str, Any]:
    """Ours vs Scrapy (1 and 8 per host) on one sandbox process, interleaved run by run."""
    sandbox = SandboxProcess(workdir / "sandbox.log", size=size, crawl_delay=0.0)
    sandbox.start()
    results: dict[str, list[CrawlRun]] = {}
    try:
        plan = [("ours", 1), ("scrapy", 1), ("scrapy", 8)]
        if warm_up:  # an unmeasured visit renders every pydoc page once (the sandbox caches)
            run_worker("scrapy", sandbox.url, pages, 8, workdir / "warm-up")
        for r in range(runs):
            order = plan if r % 2 == 0 else list(reversed(plan))
            for kind, per_host in order:
                out = workdir / f"{kind}-{per_host}-{r}"
                run = run_worker(kind, sandbox.url, pages, per_host, out)
                results.setdefault(run.crawler, []).append(run)
                print(
                    f"  run {r + 1}: {run.crawler:<36} {run.pages:5d} pages in "
                    f"{run.seconds:5.1f} s = {run.pages_per_second:6.1f}/s",
                    flush=True,
                )
    finally:
        sandbox.stop()
    return {
        name: {
            "pages_per_second": median(r.pages_per_second for r in rs),
            "pages": median(r.pages for r in rs),
            "ok": median(r.ok for r in rs),
            "seconds": median(r.seconds for r in rs),
            "hosts": max(r.hosts for r in rs),
            "runs": [asdict(r) for r in rs],
        }
        for name, rs in results.items()
    }


# ----------------------------------------------------------------- near-duplicates

ADVERT = (
    "Advertisement: upgrade to the premium plan today and get two months free, unlimited "
    "downloads and priority support from our friendly team."
)
HEADER = "Home | Documentation | Downloads | Community | Blog | Search this site"
FOOTER = (
    "Share this page. Subscribe to our newsletter. Cookie settings. Privacy policy. "
    "Terms of use. Copyright 2026 the sandbox web. All rights reserved."
)
MUTATIONS = ("timestamp", "advert", "boilerplate", "reordered")


#: More standard-library modules with long class and function docs, for a bigger set.
MORE_MODULES = (
    "asyncio collections concurrent.futures decimal email.message email.policy "
    "http.server http.cookiejar xml.dom.minidom unittest.mock multiprocessing.pool sqlite3 "
    "smtplib mailbox logging.handlers optparse pdb bdb cmd code trace tracemalloc zipapp "
    "wsgiref.simple_server xmlrpc.client imaplib poplib ftplib"
).split()


def real_pages(count: int, seed: int = 7) -> list[str]:
    """Distinct real texts: ``pydoc``'s text of standard-library classes and functions.

    Kept between 150 and 2,000 words, and pairwise distinct (shingle Jaccard < 0.5 with
    every other kept text), so that every duplicate in the labelled set is one we made.
    """
    import importlib
    import inspect
    import pydoc

    from lookup.crawler.dedup import shingles
    from lookup.crawler.sandbox.content import DOC_MODULES, NEWS_MODULES

    texts: list[str] = []
    sets: list[set[str]] = []
    modules = list(dict.fromkeys([*NEWS_MODULES, *DOC_MODULES, *MORE_MODULES]))
    rng = random.Random(seed)
    for mod_name in modules:
        try:
            module = importlib.import_module(mod_name)
        except Exception:  # noqa: BLE001 - a module missing on this build
            continue
        for name, obj in sorted(vars(module).items()):
            if len(texts) >= count:
                return texts
            if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
                continue
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            try:
                text = pydoc.plaintext.document(obj, name)
            except Exception:  # noqa: BLE001 - pydoc cannot render everything
                continue
            text = re.sub(r"/\S*?/lib/python3\.\d+/\S*?\.py", "(source)", text)
            text = re.sub(r" at 0x[0-9a-f]+", "", text)  # reprs differ from run to run
            words = text.split()
            if len(words) < 150:
                continue
            text = " ".join(words[:2000])
            mine = set(shingles(text))
            if any(len(mine & s) / len(mine | s) >= 0.5 for s in sets):
                continue
            texts.append(text)
            sets.append(mine)
    rng.shuffle(texts)
    return texts


def mutate(text: str, how: str, rng: random.Random) -> str:
    """One near-duplicate of ``text``: what the web does to the same page."""
    words = text.split()
    if how == "timestamp":
        at = rng.randrange(0, min(12, len(words)))
        stamp = (
            f"Last updated {rng.choice(['Monday', 'Tuesday', 'Friday'])} {rng.randrange(1, 29)} "
            f"November 2026, {rng.randrange(24):02d}:{rng.randrange(60):02d}:"
            f"{rng.randrange(60):02d} UTC"
        )
        return " ".join([*words[:at], stamp, *words[at:]])
    if how == "advert":
        at = rng.randrange(len(words) // 4, max(len(words) // 4 + 1, 3 * len(words) // 4))
        return " ".join([*words[:at], ADVERT, *words[at:]])
    if how == "boilerplate":
        return f"{HEADER} {text} {FOOTER}"
    if how == "reordered":  # two of four sections swapped
        q = len(words) // 4
        parts = [words[:q], words[q : 2 * q], words[2 * q : 3 * q], words[3 * q :]]
        i, j = rng.sample(range(4), 2)
        parts[i], parts[j] = parts[j], parts[i]
        return " ".join(w for p in parts for w in p)
    raise ValueError(how)


@dataclass(frozen=True)
class LabelledDoc:
    key: str
    cluster: int  # the base page it was made from
    kind: str  # original | timestamp | advert | boilerplate | reordered | two of these
    text: str


def labelled_set(base_count: int, seed: int = 11) -> list[LabelledDoc]:
    """Base pages (a third wrapped in the same boilerplate, as hard negatives) and 1–3
    near-duplicates of each, shuffled."""
    rng = random.Random(seed)
    docs: list[LabelledDoc] = []
    for c, text in enumerate(real_pages(base_count)):
        base = f"{HEADER} {text} {FOOTER}" if c % 3 == 0 else text
        docs.append(LabelledDoc(f"p{c}", c, "original", base))
        for v in range(rng.randint(1, 3)):
            if rng.random() < 0.25:
                a, b = rng.sample(MUTATIONS, 2)
                kind, variant = "two of these", mutate(mutate(base, a, rng), b, rng)
            else:
                kind = rng.choice(MUTATIONS)
                variant = mutate(base, kind, rng)
            docs.append(LabelledDoc(f"p{c}v{v}", c, kind, variant))
    rng.shuffle(docs)
    return docs


Detector = Callable[[str, str], "str | None"]


def _ours(use_minhash: bool) -> Detector:
    from lookup.crawler.dedup import DuplicateDetector

    detector = DuplicateDetector(use_minhash=use_minhash)

    def check(key: str, text: str) -> str | None:
        return detector.check(key, text).of

    return check


def _datasketch() -> Detector:
    from datasketch import MinHashLSH

    from lookup.crawler.dedup import MINHASH_PERMUTATIONS, MINHASH_THRESHOLD, minhash, shingles

    lsh = MinHashLSH(threshold=MINHASH_THRESHOLD, num_perm=MINHASH_PERMUTATIONS)
    sketches: dict[str, Any] = {}

    def check(key: str, text: str) -> str | None:
        mh = minhash(shingles(text))
        best: tuple[float, str] | None = None
        for other in lsh.query(mh):
            j = mh.jaccard(sketches[other])
            if j >= MINHASH_THRESHOLD and (best is None or j > best[0]):
                best = (j, other)
        if best is not None:
            return best[1]
        lsh.insert(key, mh)
        sketches[key] = mh
        return None

    return check


def _simhash_package() -> Detector:
    import logging

    from simhash import Simhash, SimhashIndex

    from lookup.crawler.dedup import shingles

    logging.getLogger("simhash").setLevel(logging.ERROR)  # "big bucket" warnings
    index = SimhashIndex([], f=64, k=3)

    def check(key: str, text: str) -> str | None:
        fp = Simhash(shingles(text), f=64)
        near = index.get_near_dups(fp)
        if near:
            return sorted(near)[0]
        index.add(key, fp)
        return None

    return check


DETECTORS: dict[str, Callable[[], Detector]] = {
    "ours: exact + SimHash": lambda: _ours(False),
    "ours: exact + SimHash + MinHash LSH": lambda: _ours(True),
    "datasketch MinHash LSH": _datasketch,
    "simhash package (SimhashIndex, k=3)": _simhash_package,
}


@dataclass(frozen=True)
class DedupScore:
    detector: str
    docs: int
    seconds: float
    docs_per_second: float
    true_duplicates: int
    flagged: int
    precision: float
    recall: float
    f1: float
    recall_by_kind: dict[str, float]


def score(name: str, make: Callable[[], Detector], docs: list[LabelledDoc]) -> DedupScore:
    """Stream ``docs`` through a fresh detector; precision and recall of its verdicts."""
    check = make()
    cluster = {d.key: d.cluster for d in docs}
    seen: set[int] = set()
    tp = fp = fn = 0
    by_kind: dict[str, list[int]] = {}
    t0 = time.perf_counter()
    verdicts = [check(d.key, d.text) for d in docs]
    seconds = time.perf_counter() - t0
    for d, of in zip(docs, verdicts, strict=True):
        truly = d.cluster in seen
        seen.add(d.cluster)
        right = of is not None and cluster.get(of) == d.cluster
        if of is not None and not right:
            fp += 1
        if truly:
            tp += right
            fn += not right
            by_kind.setdefault(d.kind, [0, 0])
            by_kind[d.kind][0] += right
            by_kind[d.kind][1] += 1
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return DedupScore(
        detector=name,
        docs=len(docs),
        seconds=seconds,
        docs_per_second=len(docs) / seconds if seconds > 0 else 0.0,
        true_duplicates=tp + fn,
        flagged=tp + fp,
        precision=precision,
        recall=recall,
        f1=f1,
        recall_by_kind={k: hit / n for k, (hit, n) in sorted(by_kind.items())},
    )


def bench_dedup(base_count: int, runs: int = 1) -> dict[str, Any]:
    """Every detector over the same stream, ``runs`` times interleaved; median docs/s."""
    docs = labelled_set(base_count)
    bases = sum(1 for d in docs if d.kind == "original")
    words = median(len(d.text.split()) for d in docs)
    print(
        f"  labelled set: {len(docs)} pages = {bases} distinct real pages + "
        f"{len(docs) - bases} near-duplicates; median {words:.0f} words",
        flush=True,
    )
    scores: dict[str, list[DedupScore]] = {name: [] for name in DETECTORS}
    for r in range(runs):
        names = list(DETECTORS) if r % 2 == 0 else list(reversed(DETECTORS))
        for name in names:
            s = score(name, DETECTORS[name], docs)
            scores[name].append(s)
            print(
                f"  run {r + 1}: {name:<38} {s.docs_per_second:8.0f} docs/s  F1 {s.f1:.3f}",
                flush=True,
            )
    out = {}
    for name, ss in scores.items():
        # The verdicts are deterministic; only the speed varies from run to run.
        row = asdict(ss[0])
        row["docs_per_second"] = median(s.docs_per_second for s in ss)
        row["docs_per_second_runs"] = [s.docs_per_second for s in ss]
        out[name] = row
    return {"docs": len(docs), "bases": bases, "median_words": words, "detectors": out}


# --------------------------------------------------------------------------- report


def report(results: dict[str, Any]) -> None:
    if "crawl" in results:
        crawl = results["crawl"]
        anchor = crawl.get("Scrapy (1 per host)", {}).get("pages_per_second") or 0.0
        rows = []
        for name, r in crawl.items():
            ratio = r["pages_per_second"] / anchor if anchor else 0.0
            rows.append(
                [
                    name,
                    f"{r['pages']:,.0f}",
                    f"{r['ok']:,.0f}",
                    f"{r['seconds']:.1f} s",
                    f"{r['pages_per_second']:,.1f}/s",
                    f"{ratio:.2f}×",
                    str(r["hosts"]),
                ]
            )
        print_table(
            "Crawl throughput on the sandbox web (delays 0; measured from the sandbox's log)",
            ["crawler", "pages", "2xx", "time", "pages/s", "vs Scrapy 1/host", "hosts"],
            rows,
        )  # fmt: skip
        ours = crawl.get("ours (1 per host, 1 per address)", {}).get("pages_per_second", 0.0)
        verdict = "met" if anchor and ours >= anchor else "NOT met"
        print(f"target ≥ Scrapy with one request per host: {verdict}\n")
    if "dedup" in results:
        d = results["dedup"]["detectors"]
        anchor = d.get("simhash package (SimhashIndex, k=3)", {}).get("docs_per_second") or 0.0
        rows = []
        for name, s in d.items():
            rows.append(
                [
                    name,
                    f"{s['docs_per_second']:,.0f}/s",
                    f"{s['docs_per_second'] / anchor:.1f}×" if anchor else "—",
                    f"{s['precision']:.3f}",
                    f"{s['recall']:.3f}",
                    f"{s['f1']:.3f}",
                ]
            )
        print_table(
            f"Near-duplicate detection ({results['dedup']['docs']:,} pages, "
            f"{next(iter(d.values()))['true_duplicates']:,} of them near-duplicates)",
            ["detector", "docs/s", "vs simhash pkg", "precision", "recall", "F1"],
            rows,
        )
        kinds = sorted({k for s in d.values() for k in s["recall_by_kind"]})
        print_table(
            "\nRecall by what was done to the page",
            ["detector", *kinds],
            [
                [name, *(f"{s['recall_by_kind'].get(k, 0):.2f}" for k in kinds)]
                for name, s in d.items()
            ],
        )
        full = d.get("ours: exact + SimHash + MinHash LSH", {}).get("f1", 0.0)
        verdict = "met" if full >= F1_TARGET else "NOT met"
        print(f"target near-duplicate F1 ≥ {F1_TARGET}: {verdict}")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["worker"]:
        return _worker_main(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=1000, help="pages per crawl (1000)")
    parser.add_argument("--runs", type=int, default=3, help="runs per crawler (3)")
    parser.add_argument("--docs", type=int, default=250, help="distinct real pages (250)")
    parser.add_argument("--quick", action="store_true", help="500 pages, 1 run, 120 pages")
    parser.add_argument("--only", default="crawl,dedup", help="subset of crawl,dedup")
    parser.add_argument(
        "--sandbox-size", choices=["small", "default", "large"], default="large",
        help="size of the sandbox web (large)",
    )  # fmt: skip
    parser.add_argument("--no-warm-up", action="store_true", help="skip the unmeasured first crawl")
    parser.add_argument("--json", type=Path, help="also write the raw results here")
    args = parser.parse_args(argv)
    if args.quick:
        args.pages, args.runs, args.docs = 500, 1, 120
    if args.pages < 1 or args.runs < 1 or args.docs < 2:
        parser.error("--pages and --runs must be at least 1, --docs at least 2")
    chosen = {s.strip() for s in args.only.split(",") if s.strip()}
    if chosen - {"crawl", "dedup"}:
        parser.error(f"unknown benchmark(s): {', '.join(sorted(chosen - {'crawl', 'dedup'}))}")
    print(f"{dt.datetime.now():%Y-%m-%d %H:%M} on {machine_summary()}\n")
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-crawler-") as tmp:
        if "crawl" in chosen:
            print(f"Crawl throughput: {args.pages} pages per crawl, median of {args.runs} run(s)")
            results["crawl"] = bench_crawl(
                args.pages, args.runs, Path(tmp), size=args.sandbox_size,
                warm_up=not args.no_warm_up,
            )  # fmt: skip
        if "dedup" in chosen:
            print(f"Near-duplicate detection, median docs/s of {args.runs} run(s):")
            results["dedup"] = bench_dedup(args.docs, args.runs)
    print()
    report(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))
    return 0


def _worker_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench_crawler.py worker")
    parser.add_argument("kind", choices=["ours", "scrapy"])
    parser.add_argument("--sandbox", required=True)
    parser.add_argument("--pages", type=int, required=True)
    parser.add_argument("--per-host", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.kind == "ours":
        out = args.out or Path(tempfile.mkdtemp(prefix="bench-ours-"))
        return _worker_ours(args.sandbox, args.pages, out)
    return _worker_scrapy(args.sandbox, args.pages, args.per_host)


if __name__ == "__main__":
    sys.exit(main())
