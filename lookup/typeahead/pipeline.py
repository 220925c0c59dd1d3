"""The offline pipeline: log → decayed scores → filtered queries → trie → validated snapshot.

``run`` is what ``lookup typeahead build`` does: fold the new events of a log into
the saved :class:`~lookup.typeahead.aggregate.ScoreBoard` (old logs are never
re-read), then for every market filter the queries, add the extra keys (learned
misspellings, other spellings of Hindi phrases), build the radix trie with its top
10 per node, write a snapshot, validate it against the current one and publish it.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lookup import settings
from lookup.typeahead.aggregate import PERIODS, FoldReport, MarketScores, ScoreBoard, read_query_log
from lookup.typeahead.blocklist import open_hot_term_source
from lookup.typeahead.clusterfold import BuildProgress, ClusterFolder, FoldFn, local_fold
from lookup.typeahead.filters import (
    DEFAULT_BLOCKLIST,
    FilterConfig,
    FilterReport,
    HotBlocklist,
    TermBlocklist,
    select_queries,
)
from lookup.typeahead.insights import pick_report, pick_rows, write_pick_report
from lookup.typeahead.normalize import script_of
from lookup.typeahead.snapshot import (
    ValidationPolicy,
    ValidationReport,
    open_snapshot_store,
    publish_validated,
    write_snapshot,
)
from lookup.typeahead.translit import group_variants
from lookup.typeahead.trie import K, RadixTrie, TrieArrays, common_prefix_len

#: A learned misspelling must keep this many leading characters of the right query, so
#: that it only answers prefixes that have already left the right query's path late.
MIN_TYPO_SHARED_PREFIX = 2
#: Markets whose Latin spellings of Hindi are grouped into one suggestion.
TRANSLIT_MARKETS = ("hi-IN",)


def typeahead_dir(data_dir: str | os.PathLike[str]) -> Path:
    """``DATA_DIR/typeahead``: the query log, the aggregator state, snapshots, blocklist."""
    return Path(data_dir) / "typeahead"


def searches_path(data_dir: str | os.PathLike[str]) -> Path:
    """Where ``POST /v1/searches`` appends the searches the next build folds in."""
    return typeahead_dir(data_dir) / "searches.csv"


def state_path(data_dir: str | os.PathLike[str]) -> Path:
    """Where the count aggregator keeps its running state."""
    return typeahead_dir(data_dir) / "state.npz"


def snapshot_root(data_dir: str | os.PathLike[str]) -> Path:
    """Where published snapshots live (one folder per market)."""
    return typeahead_dir(data_dir) / "snapshots"


def snapshot_store_url(data_dir: str | os.PathLike[str]) -> str:
    """The snapshot store builds publish to and servers serve from: setting
    ``typeahead_snapshot_store`` (``postgresql://…``, a fleet's shared version store),
    else the directory :func:`snapshot_root` names."""
    return str(settings.get("typeahead_snapshot_store") or snapshot_root(data_dir))


def blocklist_path(data_dir: str | os.PathLike[str]) -> Path:
    """The hot blocklist file (one phrase per line) of the embedded default."""
    return typeahead_dir(data_dir) / "blocklist.txt"


def open_hot_blocklist(data_dir: str | os.PathLike[str]) -> HotBlocklist:
    """The hot blocklist where setting ``typeahead_blocklist`` says (a fleet's PostgreSQL),
    else the file :func:`blocklist_path` names; close it when done."""
    url = settings.get("typeahead_blocklist") or str(blocklist_path(data_dir))
    return HotBlocklist(source=open_hot_term_source(url))


@dataclass(frozen=True)
class BuildConfig:
    """Knobs of the pipeline (defaults suit the generated two-week log)."""

    min_users: int = 5
    bot_weight: float = 0.0
    period: str = "day"
    drop_private: bool = True
    min_typo_users: int = 2
    translit_markets: tuple[str, ...] = TRANSLIT_MARKETS
    k: int = K
    #: What a search picked from the suggestions counts (setting typeahead_picked_weight).
    picked_weight: float = field(default_factory=lambda: settings.get("typeahead_picked_weight"))

    def filter_config(self) -> FilterConfig:
        """The filter thresholds."""
        return FilterConfig(self.min_users, self.drop_private, self.min_typo_users)


@dataclass
class MarketBuild:
    """One market compiled in memory: suggestions by rank, every key, the trie."""

    market: str
    strings: list[str]  # id → suggestion, best first
    scores: np.ndarray  # id → score (float64, non-increasing)
    keys: list[tuple[str, int, bool]]  # (key, id, is_alias)
    trie: TrieArrays
    filters: FilterReport
    typo_keys: int = 0
    variant_keys: int = 0
    groups: int = 0

    def entries(self) -> list[tuple[str, str]]:
        """``(key, suggestion)`` pairs: what the trie must answer (the oracle's input)."""
        return [(k, self.strings[t]) for k, t, _ in self.keys]


def compile_market(
    state: MarketScores, blocklist: TermBlocklist, config: BuildConfig = BuildConfig()
) -> MarketBuild:
    """Filter one market's queries, group variants, add learned keys, rank, build the trie."""
    queries, scores = state.queries, state.score
    kept, freport = select_queries(queries, scores, state.users, blocklist, config.filter_config())
    kept_q = [queries[i] for i in kept]
    kept_s = [float(scores[i]) for i in kept]
    # display[q] = the suggestion a key q leads to; score_of[display] = its ranking score
    display: dict[str, str] = {q: q for q in kept_q}
    score_of: dict[str, float] = dict(zip(kept_q, kept_s, strict=True))
    alias_keys: dict[str, str] = {}
    n_groups = 0
    if state.market in config.translit_markets:
        for g in group_variants(kept_q, kept_s):
            total = sum(score_of[m] for m in g.members)
            n_groups += 1
            for m in g.members:
                display[m] = g.display[script_of(m)]
            for shown in g.display.values():
                score_of[shown] = total
            for m in g.members:
                if m != display[m]:
                    score_of.pop(m, None)
    typo_keys = 0
    kept_set = set(kept_q)
    for typo, right, support in state.typo_support():
        if support < config.min_typo_users or typo in kept_set or right not in display:
            continue
        if blocklist.blocks(typo) or typo in alias_keys:
            continue
        if common_prefix_len(typo, right) < MIN_TYPO_SHARED_PREFIX:
            continue  # a slip in the first characters would pollute the shortest prefixes
        alias_keys[typo] = display[right]
        typo_keys += 1
    ranked = sorted(score_of, key=lambda s: (-score_of[s], s))
    ids = {s: i for i, s in enumerate(ranked)}
    trie = RadixTrie(config.k)
    keys: list[tuple[str, int, bool]] = []
    for q, shown in display.items():
        keys.append((q, ids[shown], q != shown))
    for key, shown in alias_keys.items():
        keys.append((key, ids[shown], True))
    for key, t, alias in keys:
        trie.add(key, t, alias=alias)
    return MarketBuild(
        market=state.market,
        strings=ranked,
        scores=np.array([score_of[s] for s in ranked], dtype=np.float64),
        keys=keys,
        trie=trie.build(),
        filters=freport,
        typo_keys=typo_keys,
        variant_keys=len(alias_keys) - typo_keys + sum(1 for q, s in display.items() if q != s),
        groups=n_groups,
    )


def write_market(build: MarketBuild, path: str | os.PathLike[str], meta: dict[str, Any]) -> Path:
    """Write a compiled market as a snapshot file (or into a directory)."""
    return write_snapshot(path, build.market, build.trie, build.strings, build.scores, meta)


@dataclass
class MarketResult:
    """What happened to one market in a build."""

    market: str
    version: str
    published: bool
    suggestions: int
    keys: int
    nodes: int
    plain_trie_nodes: int
    snapshot_bytes: int
    filters: dict[str, int]
    typo_keys: int
    variant_keys: int
    validation: dict[str, Any]
    seconds: float


@dataclass
class BuildResult:
    """The outcome of ``lookup typeahead build``."""

    log: str | None
    folded: list[FoldReport] = field(default_factory=list)
    markets: list[MarketResult] = field(default_factory=list)
    #: Per market, the pick rate per prefix of the submitted searches (``picks.json``).
    picks: dict[str, Any] = field(default_factory=dict)
    #: The fold on Dask, when it ran there: tasks done / total, workers alive, scheduler.
    cluster: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        """True if every market's snapshot was published."""
        return bool(self.markets) and all(m.published for m in self.markets)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able form."""
        return {
            "log": self.log,
            "ok": self.ok,
            "folded": [asdict(f) for f in self.folded],
            "markets": [asdict(m) for m in self.markets],
            "picks": self.picks,
            "cluster": self.cluster,
        }


def run(
    data_dir: str | os.PathLike[str],
    log: str | os.PathLike[str] | None = None,
    *,
    config: BuildConfig = BuildConfig(),
    policy: ValidationPolicy = ValidationPolicy(),
    fresh: bool = False,
    force: bool = False,
    progress: Callable[[str], None] | None = None,
    clock: Callable[[], float] = time.time,
    dask: str | None = None,
    fold: FoldFn | None = None,
    on_cluster: Callable[[BuildProgress], None] | None = None,
    on_published: Callable[[MarketBuild, Any, Any], str] | None = None,
) -> BuildResult:
    """Fold a log into the saved scores and publish a validated snapshot per market.

    ``log`` defaults to the built query log; ``fresh`` starts the scores from zero
    (otherwise events older than what was folded before are skipped); ``force``
    publishes even if the comparison with the previous snapshot fails (integrity and
    blocklist checks still apply).

    The searches submitted over HTTP (:func:`searches_path`) are folded in after the
    log, through the same filters (distinct users, bot weight, blocklist) — all of them
    but those of the current second, which the server may still be appending to (the
    next build folds them; the watermark of what was folded then skips the rest).

    The fold runs in this process unless ``dask`` (default: setting
    ``typeahead_dask_scheduler``) names a Dask scheduler (``tcp://HOST:PORT``) or
    ``local`` (a local cluster); ``on_cluster`` then sees its progress, and ``fold``
    replaces the fold function outright (a :class:`ClusterFolder` set up by the caller).
    If the cluster fails the build raises :class:`ClusterFoldError` before anything is
    saved or published.

    ``on_published(build, snapshot, map)`` runs after each market's snapshot is
    published, with the cluster's ``map`` when the fold ran on Dask (else None), and
    returns a progress line: how ``lookup typeahead build --shards N`` builds the shard
    sets side by side (:func:`~lookup.typeahead.shardbuild.precut_hook`).
    """
    say = progress or (lambda _msg: None)
    target = settings.get("typeahead_dask_scheduler") if dask is None else dask
    if fold is None and target:

        def seen(status: BuildProgress) -> None:
            say(status.line())
            if on_cluster is not None:
                on_cluster(status)

        with ClusterFolder(None if target == "local" else target, on_progress=seen) as folder:
            result = run(
                data_dir, log, config=config, policy=policy, fresh=fresh, force=force,
                progress=progress, clock=clock, fold=folder,
                on_published=on_published,
            )  # fmt: skip
            return result
    fold_fn: FoldFn = fold or local_fold
    if config.period not in PERIODS:
        raise ValueError(f"period must be one of {', '.join(PERIODS)}")
    base = typeahead_dir(data_dir)
    sp = state_path(data_dir)
    board = None if fresh or not sp.exists() else ScoreBoard.load(sp)
    if board is not None and board.period_s != PERIODS[config.period]:
        raise ValueError(
            f"the saved scores use {board.period_s}s periods; rerun with --fresh to change period"
        )
    board = board or ScoreBoard(period_s=PERIODS[config.period])
    result = BuildResult(str(log) if log else None)
    if log is not None:
        t0 = time.perf_counter()
        batch = read_query_log(log)
        say(
            f"read {len(batch):,} events ({len(batch.queries):,} distinct queries) "
            f"in {time.perf_counter() - t0:.1f}s"
        )
        result.folded = fold_fn(
            board, batch, bot_weight=config.bot_weight, picked_weight=config.picked_weight
        )
        for f in result.folded:
            say(
                f"{f.market}: folded {f.events:,} events ({f.bot_events:,} bot, "
                f"{f.skipped_old:,} already folded), {f.new_queries:,} new queries"
            )
        board.save(sp)
    searches = searches_path(data_dir)
    if searches.exists():
        submitted = read_query_log(searches).before(int(clock()))
        folded = fold_fn(
            board, submitted, bot_weight=config.bot_weight, picked_weight=config.picked_weight
        )
        result.folded += folded
        for f in folded:
            say(
                f"{f.market}: folded {f.events:,} submitted searches ({f.bot_events:,} bot, "
                f"{f.skipped_old:,} already folded)"
            )
        board.save(sp)
        result.picks = pick_report(pick_rows(searches))
        write_pick_report(data_dir, result.picks)
    if not board.markets:
        raise ValueError("no events folded yet: give a log with --log or build the query log")
    hot = open_hot_blocklist(data_dir)
    blocklist = hot.effective
    hot.close()
    store = open_snapshot_store(snapshot_store_url(data_dir))
    staging = base / "staging"
    for market, state in sorted(board.markets.items()):
        t0 = time.perf_counter()
        mb = compile_market(state, blocklist, config)
        meta = {
            "hour_share": state.hour_share(),
            "decay": {
                "period_s": state.period_s,
                "half_life_s": state.half_life_s,
                "factor": state.factor,
            },
            "as_of": state.as_of,
            "events_folded": state.events,
            "filters": asdict(mb.filters),
            "config": asdict(config),
            "typo_keys": mb.typo_keys,
            "variant_keys": mb.variant_keys,
            "blocklist_terms": len(blocklist),
        }
        path = write_market(mb, staging, meta)
        size = path.stat().st_size
        report: ValidationReport = publish_validated(store, path, blocklist, policy, force=force)
        secs = time.perf_counter() - t0
        say(
            f"{market}: {len(mb.strings):,} suggestions, {len(mb.keys):,} keys, "
            f"{mb.trie.n_nodes:,} nodes, {size / 1e6:.1f} MB → "
            f"{'published' if report.ok else 'REFUSED'} {report.version} ({secs:.1f}s)"
        )
        for c in report.failures():
            say(f"  check {c.name} failed: {c.detail}")
        if on_published is not None and report.ok:
            say(on_published(mb, store.open(market, report.version), getattr(fold_fn, "map", None)))
        result.markets.append(
            MarketResult(
                market=market,
                version=report.version,
                published=report.ok,
                suggestions=len(mb.strings),
                keys=len(mb.keys),
                nodes=mb.trie.n_nodes,
                plain_trie_nodes=mb.trie.plain_nodes,
                snapshot_bytes=size,
                filters=asdict(mb.filters),
                typo_keys=mb.typo_keys,
                variant_keys=mb.variant_keys,
                validation=report.to_dict(),
                seconds=round(secs, 3),
            )
        )
    if isinstance(fold_fn, ClusterFolder):
        result.cluster = fold_fn.progress.to_dict()
    return result


def stderr_progress(msg: str) -> None:
    """Progress lines for the command line."""
    print(f"typeahead: {msg}", file=sys.stderr, flush=True)


__all__ = [
    "DEFAULT_BLOCKLIST",
    "BuildConfig",
    "BuildProgress",
    "BuildResult",
    "MarketBuild",
    "MarketResult",
    "blocklist_path",
    "compile_market",
    "open_hot_blocklist",
    "run",
    "snapshot_root",
    "snapshot_store_url",
    "state_path",
    "stderr_progress",
    "searches_path",
    "typeahead_dir",
    "write_market",
]
