"""Key traces for the eviction curves (``lookup.blocks.cache.eviction``), from the systems'
own generators — a block may not import a system, this module may.

- :func:`shortener_clicks` — the redirect keys of the shortener's traffic simulator
  (``shortener/simulate.py:plan_visits``): Zipf-popular links clicked by people, bots
  crawling uniformly, link previews of the popular fifth, a scraper's random guesses, and
  the viral burst landing mid-trace;
- :func:`typeahead_queries` — the submitted queries of the typeahead query log
  (``typeahead/querylog.py:generate``), in time order: a real vocabulary's Zipf-like
  popularity, a daily rhythm, typos, bots and a trending spike;
- :func:`scan_polluted` — a trace with a one-off scan of never-repeated keys spliced into
  its middle (a batch job or a crawler reading everything once): the case that flushes an
  LRU and that W-TinyLFU's admission filter is built to survive.

Every trace is a list of small ints (one per distinct key), deterministic for its seed.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

__all__ = ["TRACES", "scan_polluted", "shortener_clicks", "trace", "typeahead_queries"]


def _ids(keys: Sequence[Hashable]) -> list[int]:
    index: dict[Hashable, int] = {}
    return [index.setdefault(k, len(index)) for k in keys]


def shortener_clicks(requests: int = 60_000, links: int = 1_000, seed: int = 7) -> list[int]:
    """The simulator's planned redirects (people, bots, previews, scraper; the viral burst
    in the middle), as key ids."""
    from lookup.shortener.simulate import TrafficPlan, plan_visits

    plan = TrafficPlan(requests=requests, links=links, seed=seed)
    keys = [f"k{i:06d}" for i in range(links)]
    regular, burst = plan_visits(plan, keys, "viral")
    middle = len(regular) // 2
    visits = regular[:middle] + burst + regular[middle:]
    return _ids([v.key for v in visits])


def typeahead_queries(events: int = 60_000, seed: int = 11) -> list[int]:
    """The query log's submitted queries in time order, as query ids."""
    import numpy as np

    from lookup.typeahead.querylog import generate

    log = generate(events, seed)
    order = np.argsort(log.events.ts, kind="stable")
    return _ids(log.events.query[order].tolist())


def scan_polluted(base: Sequence[int], scan: int = 5_000, at: float = 0.5) -> list[int]:
    """``base`` with ``scan`` distinct never-seen keys read once each at fraction ``at``."""
    if scan < 0 or not 0.0 <= at <= 1.0:
        raise ValueError("scan must be non-negative and at within [0, 1]")
    start = max(base, default=-1) + 1
    cut = int(len(base) * at)
    return [*base[:cut], *range(start, start + scan), *base[cut:]]


#: The named traces the notebook and the dashboard offer.
TRACES = ("shortener clicks (Zipf)", "typeahead query log", "shortener clicks + a scan")


def trace(name: str, length: int = 60_000) -> list[int]:
    """The named trace of about ``length`` accesses."""
    if name == TRACES[0]:
        return shortener_clicks(length)
    if name == TRACES[1]:
        return typeahead_queries(length)
    if name == TRACES[2]:
        return scan_polluted(shortener_clicks(length), scan=length // 10)
    raise ValueError(f"unknown trace {name!r}; known: {', '.join(TRACES)}")
