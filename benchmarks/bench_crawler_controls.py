"""What the operator's controls cost the crawl loop, against the plain frontier in the same run.

Every lease asks the frontier's ``held`` predicate for the host and ``refuses`` for the
URL, every completion ``delay_floor``, and every admitted link ``check_url``
(:mod:`lookup.crawler.steering`). This drives a :class:`~lookup.crawler.frontier.Frontier`
through lease → complete cycles over many hosts (a clock the benchmark moves, so no real
waiting) three ways, each in the same run:

- **plain** (the anchor): no controls installed;
- **no controls issued**: a :class:`~lookup.crawler.controls.ControlState` installed, empty;
- **busy controls**: 20 blocked hosts, 20 URL patterns, 20 delays, 20 paused hosts.

It reports leases per second and the ratio to the anchor, and the admission check per URL
in microseconds. The polling itself (one ``SELECT … WHERE version > ?`` every 0.5 s)
is not per fetch and is left out.

    python benchmarks/bench_crawler_controls.py [--hosts 200] [--urls 20] [--runs 7]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import machine_summary, median
from lookup.crawler.controls import ControlRecord, ControlState
from lookup.crawler.frontier import Frontier, FrontierEntry, PolitenessPolicy


class _Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def _frontier(hosts: int, urls: int, state: ControlState | None) -> tuple[Frontier, _Clock]:
    clock = _Clock()
    f = Frontier(PolitenessPolicy(min_delay=1.0, delay_factor=0.0), clock=clock)
    if state is not None:
        f.held = state.holds
        f.delay_floor = state.delay_for
        f.refuses = lambda e: state.url_blocked(e.url) is not None
    for h in range(hosts):
        host = f"h{h}.bench.test"
        for u in range(urls):
            f.add(
                FrontierEntry(f"http://{host}/p{u}", f"{h}-{u}", host), f"10.0.{h // 250}.{h % 250}"
            )
        f.robots_known(host, crawl_delay=None)
    return f, clock


def _busy_state() -> ControlState:
    recs = []
    for i in range(20):
        recs += [
            ("block-host", f"blocked{i}.other.test", None),
            ("block-pattern", f"http://x{i}.other.test/*private*", None),
            ("set-delay", f"slow{i}.other.test", 2.0),
            ("pause-host", f"paused{i}.other.test", None),
        ]
    return ControlState.of(
        ControlRecord(n + 1, 0.0, c, t, v, "") for n, (c, t, v) in enumerate(recs)
    )


def leases_per_second(hosts: int, urls: int, state: ControlState | None) -> float:
    """Lease → complete cycles per second until the frontier is empty."""
    f, clock = _frontier(hosts, urls, state)
    done = 0
    started = time.perf_counter()
    while len(f):
        clock.t += 1.0
        while (lease := f.lease()) is not None:
            f.complete(lease, 0.0)
            done += 1
    return done / (time.perf_counter() - started)


def admission_us(state: ControlState, n: int = 20_000) -> float:
    """The admission check (host blocks, then patterns) per URL, in microseconds."""
    urls = [f"http://h{i % 500}.bench.test/page/{i}" for i in range(n)]
    started = time.perf_counter()
    for url in urls:
        host = url.split("/", 3)[2]
        state.host_blocked(host) or state.url_blocked(url)
    return (time.perf_counter() - started) / n * 1e6


def run(hosts: int, urls: int, runs: int) -> dict[str, Any]:
    cases = {
        "plain frontier (anchor)": None,
        "controls installed, none issued": ControlState(),
        "80 controls in force": _busy_state(),
    }
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(runs):  # interleaved: the machine's drift hits every case alike
        for name, state in cases.items():
            samples[name].append(leases_per_second(hosts, urls, state))
    rates = {name: median(v) for name, v in samples.items()}
    anchor = rates["plain frontier (anchor)"]
    return {
        "hosts": hosts,
        "urls_per_host": urls,
        "leases_per_second": rates,
        "ratio_to_anchor": {k: v / anchor for k, v in rates.items()},
        "admission_check_us": {
            "none issued": admission_us(ControlState()),
            "80 in force": admission_us(_busy_state()),
        },
    }


def report(r: dict[str, Any]) -> None:
    print(f"{r['hosts']} hosts × {r['urls_per_host']} URLs, lease → complete until empty:")
    for name, rate in r["leases_per_second"].items():
        print(f"  {name:34s} {rate:>12,.0f} leases/s  {r['ratio_to_anchor'][name]:.2f}× anchor")
    print("admission check per URL:")
    for name, us in r["admission_check_us"].items():
        print(f"  {name:34s} {us:>8.2f} µs")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=200)
    parser.add_argument("--urls", type=int, default=20, help="URLs per host")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--json", type=Path, help="also write the raw results here")
    args = parser.parse_args(argv)
    if args.hosts < 1 or args.urls < 1 or args.runs < 1:
        parser.error("--hosts, --urls and --runs must be at least 1")
    print(f"on {machine_summary()}\n")
    results = run(args.hosts, args.urls, args.runs)
    report(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
