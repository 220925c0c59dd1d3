"""How the suggestions are used (issue 27 item 10): picked vs typed out, and zero hits.

Seed 000 warns of a feedback loop: suggestions shape what people search, which shapes
the suggestions. ``POST /v1/searches`` may say a search was picked from the list (its
rank, the prefix typed); the build then

* weighs a picked search ``typeahead_picked_weight`` (0.5) against a typed-out one's 1
  in the scores (:mod:`~lookup.typeahead.aggregate`), so a suggestion is not kept on top
  only because it is shown on top;
* reports the **pick rate per prefix** (:func:`pick_report`): at a prefix where someone
  picked, the picks over the picks plus the typed-out searches that passed through it
  (their query starts with it) — a prefix whose list is rarely picked lists the wrong
  things. Written to ``typeahead/picks.json`` by every build.

**Zero-hit prefixes** are counted where they happen: the suggest service counts, per
market, the prefixes it answered with an empty list (:class:`ZeroHits`, in memory since
the server started, at most :data:`MAX_ZERO_HIT_PREFIXES` distinct per market), a dict
update on an answer that had nothing to compute. ``GET /v1/typeahead/insights``
(:mod:`~lookup.typeahead.insightshttp`) shows both.
"""

from __future__ import annotations

import json
import os
from bisect import bisect_left, bisect_right
from collections import Counter
from pathlib import Path
from typing import Any

from lookup.typeahead.normalize import normalize_prefix, normalize_query

__all__ = [
    "MAX_ZERO_HIT_PREFIXES",
    "ZeroHits",
    "read_pick_report",
    "pick_report",
    "pick_rows",
    "picks_path",
    "write_pick_report",
]

#: Distinct zero-hit prefixes remembered per market (later new ones are only counted).
MAX_ZERO_HIT_PREFIXES = 10_000
#: Prefixes listed per market in a report.
TOP = 50


class ZeroHits:
    """Per market, how often each prefix got an empty answer since the server started."""

    def __init__(self, cap: int = MAX_ZERO_HIT_PREFIXES) -> None:
        self.cap = cap
        self._counts: dict[str, Counter[str]] = {}
        self.overflow: Counter[str] = Counter()

    def add(self, market: str, prefix: str) -> None:
        """Count one empty answer (an empty prefix is not a search; it is not counted)."""
        if not prefix.strip():
            return
        counts = self._counts.setdefault(market, Counter())
        if prefix in counts or len(counts) < self.cap:
            counts[prefix] += 1
        else:
            self.overflow[market] += 1

    def top(self, market: str, n: int = TOP) -> list[dict[str, Any]]:
        """The most frequent zero-hit prefixes of a market."""
        counts = self._counts.get(market, Counter())
        return [{"prefix": p, "count": c} for p, c in counts.most_common(n)]


def picks_path(data_dir: str | os.PathLike[str]) -> Path:
    """Where each build writes its pick-rate report."""
    return Path(data_dir) / "typeahead" / "picks.json"


def pick_report(
    rows: list[tuple[str, str, bool, int | None, str | None]], top: int = TOP
) -> dict[str, Any]:
    """Per market, the pick rate at each prefix someone picked at.

    ``rows`` are ``(market, query, picked, rank, prefix)`` of human searches; a picked
    row without a prefix counts at its query's first three characters."""
    by_market: dict[str, dict[str, Any]] = {}
    for market in sorted({r[0] for r in rows}):
        mine = [r for r in rows if r[0] == market]
        typed = sorted(normalize_query(q) for _, q, picked, _, _ in mine if not picked)
        picks: Counter[str] = Counter()
        ranks: dict[str, list[int]] = {}
        for _, q, picked, rank, prefix in mine:
            if not picked:
                continue
            p = normalize_prefix(prefix) if prefix else normalize_query(q)[:3]
            picks[p] += 1
            if rank is not None:
                ranks.setdefault(p, []).append(rank)
        prefixes: list[dict[str, Any]] = []
        for p, n in picks.items():
            lo = bisect_left(typed, p)
            size = len(p)
            through = bisect_right(typed, p, lo=lo, key=lambda w: w[:size]) - lo
            rs = ranks.get(p, [])
            prefixes.append(
                {
                    "prefix": p,
                    "picks": n,
                    "typedOut": through,
                    "pickRate": round(n / (n + through), 4),
                    "meanRank": round(sum(rs) / len(rs), 2) if rs else None,
                }
            )
        prefixes.sort(key=lambda x: (-(x["picks"] + x["typedOut"]), x["prefix"]))
        total_picks = sum(picks.values())
        by_market[market] = {
            "searches": len(mine),
            "picked": total_picks,
            "pickRate": round(total_picks / len(mine), 4) if mine else 0.0,
            "prefixes": prefixes[:top],
        }
    return by_market


def write_pick_report(data_dir: str | os.PathLike[str], report: dict[str, Any]) -> Path:
    """Save a build's report where ``GET /v1/typeahead/insights`` reads it."""
    path = picks_path(data_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(report, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)
    return path


def read_pick_report(data_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The last build's report (empty before the first build that had searches)."""
    try:
        loaded: dict[str, Any] = json.loads(picks_path(data_dir).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return loaded


def pick_rows(path: str | os.PathLike[str]) -> list[tuple[str, str, bool, int | None, str | None]]:
    """``(market, query, picked, rank, prefix)`` of the human searches in a search log (a
    log without the pick columns: every search typed out)."""
    from lookup.typeahead.aggregate import read_table

    table = read_table(path)
    names = set(table.column_names)
    n = table.num_rows

    def column(name: str) -> list[Any]:
        return table.column(name).to_pylist() if name in names else [None] * n

    rows = []
    for market, query, bot, picked, rank, prefix in zip(
        column("market"),
        column("query"),
        column("is_bot"),
        column("picked"),
        column("rank"),
        column("prefix"),
        strict=True,
    ):
        if str(bot).strip().lower() in ("1", "true") or not query:
            continue
        yes = str(picked).strip().lower() in ("1", "true")
        try:
            r = int(rank) if rank not in (None, "") else None
        except (TypeError, ValueError):
            r = None
        rows.append((str(market), str(query), yes, r, str(prefix) if prefix else None))
    return rows
