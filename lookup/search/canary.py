"""Validation of a new search index version before it goes live, and its canary queries.

The indexer writes a candidate version's segments and manifest but points ``CURRENT`` at
it only if :func:`validate` passes; otherwise the live version keeps serving and the
candidate is kept aside with the reasons (``rejected/``, :func:`lookup.search.manifest.reject`).
The checks, each a :class:`Check` in a :class:`ValidationReport` (the typeahead's release
pipeline has the same shape):

* ``shards`` — no empty shard. Documents go to shards by a hash of their URL, so with
  ``n`` documents over ``s`` shards a shard is empty by chance with probability at most
  ``s·(1−1/s)^n``; the check applies once the version averages
  :data:`EMPTY_SHARD_MIN_AVERAGE` documents per shard (then that chance is below
  ``s·e^-16`` ≈ 10⁻⁷·s), so an empty shard means lost segments, not bad luck.
* ``docs`` — the live document count within ``[min_ratio, max_ratio]`` of the live
  version's (settings ``search_min_docs_ratio``, ``search_max_docs_ratio``).
* ``canaries`` — the live version's canary queries still find their pages: each stored
  ``(query, url)`` passes when ``url`` is among the candidate's top ``depth`` results;
  at least ``min_found`` of those whose page the candidate still holds must pass (a page
  deleted since is no failure of the index). ``search_canary_depth``,
  ``search_canary_min_found``.

Canary queries are chosen from a version as it goes live (:func:`choose_canaries`): the
titles of its most-linked pages, as known-item queries, each stored with the page its
top result was. They travel in that version's manifest, so the *next* candidate is held
to what the live index answers today. ``force`` (``lookup index --force``) skips the
comparisons with the live version (``docs``, ``canaries``) for a deliberate change of data
set, never the ``shards`` check.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from lookup import settings
from lookup.search.coordinator import Coordinator, QueryError
from lookup.search.manifest import Manifest
from lookup.search.shard import IndexVersion

__all__ = [
    "DOCS_SLACK",
    "EMPTY_SHARD_MIN_AVERAGE",
    "Check",
    "ReleasePolicy",
    "ValidationReport",
    "choose_canaries",
    "run_canaries",
    "validate",
]

#: Average documents per shard from which an empty shard fails validation (see above).
EMPTY_SHARD_MIN_AVERAGE = 16
#: A change of at most this many documents passes the ``docs`` check whatever the ratio:
#: on a small crawl one page gone is a third of it, not a broken build.
DOCS_SLACK = 10
#: Words of a title a canary query keeps (a person types a few, not a headline).
QUERY_WORDS = 8
#: Deadline for a canary query's shards: generous, a miss must mean the index, not a busy CPU.
CANARY_DEADLINE_MS = 60_000.0
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class ReleasePolicy:
    """How strict validation is (defaults: the settings)."""

    min_docs_ratio: float = 0.7
    max_docs_ratio: float = 5.0
    queries: int = 20
    depth: int = 10
    min_found: float = 0.8

    @classmethod
    def from_settings(cls) -> ReleasePolicy:
        """The policy the settings name (``search_min_docs_ratio`` …)."""
        return cls(
            min_docs_ratio=settings.get("search_min_docs_ratio"),
            max_docs_ratio=settings.get("search_max_docs_ratio"),
            queries=settings.get("search_canary_queries"),
            depth=settings.get("search_canary_depth"),
            min_found=settings.get("search_canary_min_found"),
        )


@dataclass
class Check:
    """One validation check and its outcome."""

    name: str
    ok: bool
    detail: str


@dataclass
class ValidationReport:
    """All checks run on a candidate version; ``ok`` only if every one passed."""

    version: int
    live: int | None
    checks: list[Check] = field(default_factory=list)
    #: Per canary query: ``{"query", "url", "found": rank (1-based) | None, "gone": bool}``.
    canaries: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True if every check passed."""
        return all(c.ok for c in self.checks)

    def failures(self) -> list[Check]:
        """The checks that failed."""
        return [c for c in self.checks if not c.ok]

    def reason(self) -> str:
        """The failed checks in one line (empty when it passed)."""
        return "; ".join(f"{c.name}: {c.detail}" for c in self.failures())

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able form."""
        return {
            "version": self.version,
            "live": self.live,
            "ok": self.ok,
            "reason": self.reason(),
            "checks": [asdict(c) for c in self.checks],
            "canaries": self.canaries,
        }


def shard_docs(manifest: Manifest) -> list[int]:
    """Live documents per shard of a manifest (no file read)."""
    return [sum(e.docs - e.deleted for e in shard) for shard in manifest.segments]


def check_shards(manifest: Manifest) -> Check:
    """``shards``: no shard empty once the version averages enough documents per shard."""
    counts = shard_docs(manifest)
    empty = [s for s, n in enumerate(counts) if n == 0]
    average = sum(counts) / max(1, len(counts))
    applies = average >= EMPTY_SHARD_MIN_AVERAGE
    ok = not (empty and applies)
    detail = f"documents per shard {counts}"
    if empty and applies:
        detail += f"; shard(s) {empty} empty with {average:.0f} documents per shard on average"
    elif empty:
        detail += f" (fewer than {EMPTY_SHARD_MIN_AVERAGE} per shard: an empty one is chance)"
    return Check("shards", ok, detail)


def check_docs(manifest: Manifest, live: Manifest, policy: ReleasePolicy) -> Check:
    """``docs``: the document count within the policy's bounds of the live version's."""
    new, old = manifest.live_docs, live.live_docs
    if old == 0:
        return Check("docs", True, f"{new:,} documents (the live version has none)")
    ratio = new / old
    ok = policy.min_docs_ratio <= ratio <= policy.max_docs_ratio or abs(new - old) <= DOCS_SLACK
    return Check(
        "docs",
        ok,
        f"{new:,} documents vs {old:,} live ({ratio:.2f}×, allowed "
        f"{policy.min_docs_ratio:g}×–{policy.max_docs_ratio:g}×, or a change of at most "
        f"{DOCS_SLACK})",
    )


def query_of(title: str) -> str:
    """A known-item query from a title: its first words, lower case (so no word is read as
    an operator or a field), nothing else."""
    return " ".join(w.lower() for w in _WORD.findall(title)[:QUERY_WORDS])


def _coordinator() -> Coordinator:
    return Coordinator(
        replicas=1,
        workers_per_replica=1,
        deadline_ms=CANARY_DEADLINE_MS,
        hedge=False,
        track_total_hits=0,
    )


def _top_urls(
    coord: Coordinator, version: IndexVersion, query: str, depth: int, now: float
) -> list[str]:
    try:
        body = coord.search(version, query, 1, depth, now=now, suggest=False)
    except QueryError:
        return []
    return [str(r["url"]) for r in body.get("results", ())]


def _now_of(version: IndexVersion) -> float:
    """The clock queries are scored at: the version's newest fetch (freshness alike for the
    live version and a candidate built a minute later)."""
    return version.manifest.source.max_fetched_at or time.time()


def _most_linked(version: IndexVersion, n: int) -> Iterable[tuple[int, int, int]]:
    """``(shard, segment, doc)`` of live documents, most in-links first (URL key breaks ties)."""
    rows: list[tuple[float, int, int, int, int]] = []
    for s, shard in enumerate(version.shards):
        for si, view in enumerate(shard.segments):
            live = np.flatnonzero(view.live)
            if live.size == 0:
                continue
            links = np.asarray(view.inlinks, dtype=np.float64)[live]
            take = live[np.argsort(-links, kind="stable")[:n]]
            for d in take.tolist():
                rows.append((-float(view.inlinks[d]), int(view.url_keys[d]), s, si, d))
    rows.sort()
    return [(s, si, d) for _, _, s, si, d in rows]


def choose_canaries(version: IndexVersion, n: int, depth: int = 10) -> list[dict[str, str]]:
    """Up to ``n`` canary queries from a version: the titles of its most-linked pages (a
    title shared by another chosen page is skipped), each with the URL of the top result
    it gets on this version — kept only when that result is the page itself, so a canary
    is a query this version answers the way a person expects."""
    if n <= 0:
        return []
    coord = _coordinator()
    coord.ensure_shards(len(version.shards))
    now = _now_of(version)
    out: list[dict[str, str]] = []
    seen: set[str] = set()
    try:
        for s, si, d in _most_linked(version, 4 * n):
            reader = version.shards[s].segments[si].reader
            stored = reader.stored(d)
            query = query_of(str(stored.get("title") or ""))
            if not query or query in seen:
                continue
            seen.add(query)
            top = _top_urls(coord, version, query, 1, now)
            if top and top[0] == stored.get("url"):
                out.append({"query": query, "url": top[0], "urlHash": reader.url_hashes[d]})
            if len(out) >= n:
                break
    finally:
        coord.close()
    return out


def run_canaries(
    candidate: IndexVersion, canaries: list[dict[str, str]], policy: ReleasePolicy
) -> tuple[Check, list[dict[str, Any]]]:
    """``canaries``: run the live version's canary queries on the candidate."""
    coord = _coordinator()
    coord.ensure_shards(len(candidate.shards))
    now = _now_of(candidate)
    rows: list[dict[str, Any]] = []
    try:
        for c in canaries:
            absent = c.get("urlHash", "") not in candidate.locations
            top = [] if absent else _top_urls(coord, candidate, c["query"], policy.depth, now)
            rank = top.index(c["url"]) + 1 if c["url"] in top else None
            rows.append({"query": c["query"], "url": c["url"], "found": rank, "gone": absent})
    finally:
        coord.close()
    asked = [r for r in rows if not r["gone"]]
    found = sum(1 for r in asked if r["found"] is not None)
    share = found / len(asked) if asked else 1.0
    ok = share >= policy.min_found
    gone = len(rows) - len(asked)
    detail = (
        f"{found} of {len(asked)} canary queries found their page in the top "
        f"{policy.depth} ({share:.0%}, need {policy.min_found:.0%})"
    )
    if gone:
        detail += f"; {gone} page(s) no longer indexed, not counted"
    missed = [r["query"] for r in asked if r["found"] is None]
    if missed and not ok:
        detail += f"; missed e.g. {missed[:3]!r}"
    return Check("canaries", ok, detail), rows


def validate(
    candidate: Manifest,
    opened: IndexVersion | None,
    live: Manifest | None,
    policy: ReleasePolicy,
    *,
    force: bool = False,
) -> ValidationReport:
    """Decide whether ``candidate`` may replace ``live`` (see the module docstring).

    ``opened`` is the candidate mapped for queries (needed only for canary queries);
    ``force`` skips the comparisons with the live version."""
    report = ValidationReport(candidate.version, live.version if live else None)
    report.checks.append(check_shards(candidate))
    if live is None or force:
        return report
    report.checks.append(check_docs(candidate, live, policy))
    if live.canaries and opened is not None:
        check, rows = run_canaries(opened, live.canaries, policy)
        report.checks.append(check)
        report.canaries = rows
    return report
