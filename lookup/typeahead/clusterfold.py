"""The count aggregator's fold on Dask distributed: the same state, computed by workers.

:meth:`MarketScores.fold <lookup.typeahead.aggregate.MarketScores.fold>` runs in one
process. Here the driver keeps only the bookkeeping that must be global — which events
are new (the ``as_of`` watermark), which state id a new query gets, which decay periods
the market saw — and hands the work to Dask tasks, per market:

* **by query** (a stable hash of the query text, so the parts are disjoint): every
  query's decayed score and its distinct users (exact up to ``USER_CAP``). A query's
  events all land in one task, which replays the market's period sequence on its own
  slice of the score vector with the same operations as the single process: the scores
  come out bit for bit the same, not only to 1e-12.
* **by user** (a stable hash of the user id): the typo → retype pairs, which follow one
  user's consecutive searches. Each task returns its pairs with the position of their
  first occurrence, so the driver restores the single process's order of first
  appearance (it decides which of two learned keys wins) and its per-pair user cap.
* **the hour traffic** (24 sums, the trending baseline): one small task, so the sums
  run in the single process's order and the snapshot's metadata is identical too.

A worker that dies mid-build loses nothing but time: the tasks are pure functions of
their inputs, so the scheduler reruns them elsewhere. A scheduler that dies fails the
fold with :class:`ClusterFoldError`; the caller has changed nothing yet (the state is
folded into copies and written back only after every task answered).
"""

from __future__ import annotations

import itertools
import os
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lookup.typeahead.aggregate import (
    USER_CAP,
    EventBatch,
    FoldReport,
    MarketScores,
    ScoreBoard,
    user_hash,
)
from lookup.typeahead.spelling import retype_pairs

#: Tasks per market and cut when the caller does not say: a few per worker, so a lost
#: worker's share is small and progress moves in visible steps.
DEFAULT_PARTITIONS = 4
#: The default cluster on one machine: two single-threaded worker processes.
LOCAL_WORKERS = 2
#: Seconds the client waits to reach (or get back to) the scheduler before giving up.
CONNECT_TIMEOUT_S = 10.0
#: Seconds a build waits for a first worker to join a scheduler it was pointed at.
WORKER_WAIT_S = 60.0
#: The retype window of the single process's fold (``retype_pairs``'s default).
RETYPE_GAP_S = 120
HOURS_OFFSET_S = 19800  # Indian time, as the single-process fold counts its hour traffic


#: What the pipeline calls to fold a batch into the board: in this process or on Dask.
FoldFn = Callable[..., list[FoldReport]]


def local_fold(
    board: ScoreBoard, batch: EventBatch, *, bot_weight: float, picked_weight: float
) -> list[FoldReport]:
    """The single-process fold (the embedded default)."""
    return board.fold(batch, bot_weight=bot_weight, picked_weight=picked_weight)


class ClusterFoldError(RuntimeError):
    """The Dask cluster failed during the fold; the scores were left unchanged."""


@dataclass
class BuildProgress:
    """Where a fold on Dask stands: what the build's progress line and page show."""

    scheduler: str = ""
    tasks_done: int = 0
    tasks_total: int = 0
    workers_alive: int = 0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able form."""
        return asdict(self)

    def line(self) -> str:
        """One progress line."""
        return (
            f"dask: {self.tasks_done}/{self.tasks_total} fold tasks done, "
            f"{self.workers_alive} worker(s) alive at {self.scheduler}"
        )


# --------------------------------------------------------------------------- test gate


@dataclass(frozen=True)
class Gate:
    """A folder that holds every fold task at its start until the folder holds ``open``.

    What the drills use to stop a build mid-way without timing: each task leaves a file
    when it starts (so a test sees that the workers are busy), then waits for the gate.
    """

    folder: Path

    def arrive(self, name: str) -> None:
        """Mark that a task started (one file per start; a rerun task arrives again)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / f"arrived-{name}-{os.getpid()}-{time.monotonic_ns()}").touch()

    def arrivals(self) -> int:
        """How many task starts were marked so far."""
        if not self.folder.exists():
            return 0
        return sum(1 for p in self.folder.iterdir() if p.name.startswith("arrived-"))

    def open(self) -> None:
        """Let every held task go on."""
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / "open").touch()

    def wait_open(self, poll_s: float = 0.02) -> None:
        """Block until :meth:`open` was called (from any process)."""
        while not (self.folder / "open").exists():
            time.sleep(poll_s)


# --------------------------------------------------------------------------- tasks


@dataclass
class QueryPart:
    """One market's new events for the queries of one hash partition, and their state.

    ``owned`` are the state ids of the partition's queries; the event columns index
    them locally (``query``) and index ``user_ids`` locally (``user``)."""

    owned: np.ndarray
    periods: list[int]  # the market's distinct new periods, ascending
    start_period: int | None
    factor: float
    score: np.ndarray
    users: np.ndarray
    user_sets: dict[int, set[int]]
    query: np.ndarray
    period: np.ndarray
    weight: np.ndarray
    bot: np.ndarray
    user: np.ndarray
    user_ids: list[str]


@dataclass
class QueryPartResult:
    """A partition's folded scores and distinct users."""

    owned: np.ndarray
    score: np.ndarray
    users: np.ndarray
    user_sets: dict[int, set[int]]


def fold_query_part(part: QueryPart, gate: Gate | None = None) -> QueryPartResult:
    """Fold one query partition: decay and add per period, then count distinct users.

    The loop is the single process's, restricted to the partition's slice: decay by
    ``factor ** (p - last)`` at every period of the market, then add the partition's
    counts of that period, so every score sees the same operations in the same order."""
    if gate is not None:
        gate.arrive("query")
        gate.wait_open()
    score = _decay_and_add(
        part.score, part.start_period, part.factor, part.periods, part.period, part.query,
        part.weight,
    )  # fmt: skip
    # Distinct users: the single process's own routine over the partition's slice.
    sub = MarketScores(
        "part",
        queries=[str(i) for i in range(len(part.owned))],
        score=score,
        users=part.users.copy(),
        user_sets={k: set(v) for k, v in part.user_sets.items()},
    )
    human = ~part.bot
    sub._fold_users(part.query[human], part.user[human], part.user_ids)
    return QueryPartResult(part.owned, score, sub.users, sub.user_sets)


def _decay_and_add(
    start: np.ndarray,
    start_period: int | None,
    factor: float,
    periods: list[int],
    period: np.ndarray,
    bins: np.ndarray,
    weight: np.ndarray,
) -> np.ndarray:
    """``start`` decayed to every period in ``periods`` in turn, plus that period's
    weighted counts per bin: the single process's loop, operation for operation."""
    out = start.copy()
    order = np.argsort(period, kind="stable")
    period, bins, weight = period[order], bins[order], weight[order]
    bounds = np.searchsorted(period, periods, side="left").tolist() + [len(period)]
    last = start_period
    for k, p in enumerate(periods):
        if last is None:
            last = p
        if p > last:
            out *= factor ** (p - last)
            last = p
        a, b = bounds[k], bounds[k + 1]
        if b > a:
            out += np.bincount(bins[a:b], weights=weight[a:b], minlength=len(out))
    return out


@dataclass
class HourPart:
    """One market's new events as (period, hour of the day, weight), in log order."""

    traffic: np.ndarray
    start_period: int | None
    factor: float
    periods: list[int]
    period: np.ndarray
    hour: np.ndarray
    weight: np.ndarray


def fold_hours(part: HourPart, gate: Gate | None = None) -> np.ndarray:
    """The market's decayed traffic per hour of the day (the trending baseline): one
    small task per market, so the sums run in the single process's order."""
    if gate is not None:
        gate.arrive("hours")
        gate.wait_open()
    return _decay_and_add(
        part.traffic, part.start_period, part.factor, part.periods, part.period, part.hour,
        part.weight,
    )  # fmt: skip


@dataclass
class UserPart:
    """One market's new human events of the users of one hash partition.

    ``query`` indexes ``strings`` (the partition's distinct queries; ``qids`` their state
    ids), ``user`` holds the market batch's user codes (their order decides the single
    process's), ``pos`` each event's position among the market's new human events."""

    ts: np.ndarray
    user: np.ndarray
    query: np.ndarray
    pos: np.ndarray
    strings: list[str]
    qids: np.ndarray
    user_codes: np.ndarray  # sorted distinct user codes of the partition
    user_ids: list[str]  # their ids, aligned


@dataclass
class RetypePair:
    """A learned typo → retype pair from one user partition."""

    typo: int  # state id
    retyped: int  # state id
    first: tuple[int, int, int]  # (user code, ts, position) of its first occurrence
    who: list[tuple[int, int]]  # (user code, user hash), ascending by code


def retypes_of_part(part: UserPart, gate: Gate | None = None) -> list[RetypePair]:
    """The retype pairs of one user partition, each with where it first occurred."""
    if gate is not None:
        gate.arrive("user")
        gate.wait_open()
    pairs = retype_pairs(part.user, part.ts, part.query, part.strings, max_gap_s=RETYPE_GAP_S)
    if not pairs:
        return []
    order = np.lexsort((part.ts, part.user))  # retype_pairs's own order of the events
    u, t, q, pos = part.user[order], part.ts[order], part.query[order], part.pos[order]
    nxt = (u[1:] == u[:-1]) & (t[1:] - t[:-1] <= RETYPE_GAP_S) & (q[1:] != q[:-1])
    first: dict[tuple[int, int], tuple[int, int, int]] = {}
    for i in np.flatnonzero(nxt).tolist():
        key = (int(q[i]), int(q[i + 1]))
        if key in pairs and key not in first:
            first[key] = (int(u[i]), int(t[i]), int(pos[i]))
    hash_of = dict(zip(part.user_codes.tolist(), part.user_ids, strict=True))
    return [
        RetypePair(
            int(part.qids[x]),
            int(part.qids[y]),
            first[(x, y)],
            [(w, user_hash(hash_of[w])) for w in sorted(who)],
        )
        for (x, y), who in pairs.items()
    ]


# --------------------------------------------------------------------------- driver


def _stable_hash(text: str) -> int:
    """A partition key that every process computes alike (``hash`` is salted per process)."""
    return zlib.crc32(text.encode())


@dataclass
class _MarketPlan:
    """What the driver decided for one market before the tasks run."""

    state: MarketScores
    report: FoldReport
    periods: list[int] = field(default_factory=list)
    ts_max: int = 0
    events: int = 0
    traffic: np.ndarray | None = None
    query_results: list[QueryPartResult] = field(default_factory=list)
    retypes: list[RetypePair] = field(default_factory=list)

    def take(self, answer: Any) -> None:
        """Keep one task's answer."""
        if isinstance(answer, QueryPartResult):
            self.query_results.append(answer)
        elif isinstance(answer, np.ndarray):
            self.traffic = answer
        else:
            self.retypes.extend(answer)


def _plan_market(
    state: MarketScores,
    batch: EventBatch,
    n_parts: int,
    bot_weight: float,
    picked_weight: float,
) -> tuple[_MarketPlan, list[HourPart | QueryPart], list[UserPart]]:
    """Split one market's new events into query and user partitions (no state changed
    but the new query ids, as the single process assigns them)."""
    report = FoldReport(state.market)
    fresh = batch.ts >= state.as_of
    report.skipped_old = int((~fresh).sum())
    plan = _MarketPlan(state, report)
    if not fresh.any():
        return plan, [], []
    ts, qc, uc, bot = batch.ts[fresh], batch.query[fresh], batch.user[fresh], batch.is_bot[fresh]
    ids, report.new_queries = state.ids_for(batch.queries, qc)
    weights = np.where(bot, bot_weight, np.where(batch.picks()[fresh], picked_weight, 1.0))
    periods = ts // state.period_s
    plan.periods = np.unique(periods).tolist()
    plan.ts_max = int(ts.max())
    plan.events = int(len(ts))
    report.periods = len(plan.periods)
    report.events = plan.events
    report.bot_events = int(bot.sum())
    hours = HourPart(
        state.hour_traffic,
        state.period,
        state.factor,
        plan.periods,
        periods,
        ((ts + HOURS_OFFSET_S) // 3600) % 24,
        weights,
    )
    qpart = np.array([_stable_hash(q) % n_parts for q in state.queries], np.int64)
    ev_qpart = qpart[ids]
    query_parts = []
    for k in range(n_parts):
        owned = np.flatnonzero(qpart == k)
        local = np.full(len(state.queries), -1, np.int64)
        local[owned] = np.arange(len(owned))
        sel = ev_qpart == k
        ucodes, uloc = np.unique(uc[sel], return_inverse=True)
        query_parts.append(
            QueryPart(
                owned=owned,
                periods=plan.periods,
                start_period=state.period,
                factor=state.factor,
                score=state.score[owned],
                users=state.users[owned],
                user_sets={
                    int(local[q]): set(s) for q, s in state.user_sets.items() if qpart[q] == k
                },
                query=local[ids[sel]],
                period=periods[sel],
                weight=weights[sel],
                bot=bot[sel],
                user=uloc.astype(np.int64),
                user_ids=[batch.users[c] for c in ucodes.tolist()],
            )
        )
    human = ~bot
    h_ts, h_user, h_ids = ts[human], uc[human], ids[human]
    pos = np.arange(len(h_ts), dtype=np.int64)
    upart = np.array([_stable_hash(u) % n_parts for u in batch.users], np.int64)
    ev_upart = upart[h_user] if len(h_user) else np.zeros(0, np.int64)
    user_parts = []
    for k in range(n_parts):
        sel = ev_upart == k
        if not sel.any():
            continue
        qids, qloc = np.unique(h_ids[sel], return_inverse=True)
        ucodes = np.unique(h_user[sel])
        user_parts.append(
            UserPart(
                ts=h_ts[sel],
                user=h_user[sel].astype(np.int64),
                query=qloc.astype(np.int64),
                pos=pos[sel],
                strings=[state.queries[i] for i in qids.tolist()],
                qids=qids,
                user_codes=ucodes,
                user_ids=[batch.users[c] for c in ucodes.tolist()],
            )
        )
    return plan, [hours, *query_parts], user_parts


def _apply(plan: _MarketPlan) -> None:
    """Write the tasks' answers into the market's state, as the single process would."""
    state = plan.state
    if not plan.events:
        return
    score = np.zeros(len(state.queries))
    users = np.zeros(len(state.queries), np.int32)
    user_sets: dict[int, set[int]] = {}
    for r in plan.query_results:
        score[r.owned] = r.score
        users[r.owned] = r.users
        for local, seen in r.user_sets.items():
            user_sets[int(r.owned[local])] = seen
    last = state.period
    for p in plan.periods:
        last = p if last is None else max(last, p)
    assert plan.traffic is not None  # every market with events has its hours task
    state.score, state.users, state.hour_traffic, state.period = score, users, plan.traffic, last
    state.user_sets = user_sets
    # One pair's users may sit in several user partitions: merge them, then replay the
    # single process: pairs by first appearance, each pair's users in the order its set
    # of user codes iterates (built as the single process builds it, ascending).
    first: dict[tuple[int, int], tuple[int, int, int]] = {}
    users_of: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for pair in plan.retypes:
        key = (pair.typo, pair.retyped)
        first[key] = min(first.get(key, pair.first), pair.first)
        users_of.setdefault(key, []).extend(pair.who)
    for key in sorted(first, key=first.__getitem__):
        known = state.typos.setdefault(key, set())
        who: set[int] = set()
        for code, _ in sorted(users_of[key]):
            who.add(code)
        hashes = dict(users_of[key])
        for code in who:
            if len(known) >= USER_CAP:
                break
            known.add(hashes[code])
    state.events += plan.events
    state.as_of = max(state.as_of, plan.ts_max + 1)


def _copy_market(state: MarketScores) -> MarketScores:
    """A deep copy of one market's state (the fold writes into it, then it replaces)."""
    return MarketScores(
        state.market,
        state.period_s,
        state.half_life_s,
        queries=list(state.queries),
        score=state.score.copy(),
        users=state.users.copy(),
        user_sets={k: set(v) for k, v in state.user_sets.items()},
        typos={k: set(v) for k, v in state.typos.items()},
        hour_traffic=state.hour_traffic.copy(),
        period=state.period,
        as_of=state.as_of,
        events=state.events,
    )


def local_cluster(workers: int = LOCAL_WORKERS) -> Any:
    """A ``distributed.LocalCluster`` on loopback: single-threaded worker processes, the
    scheduler and its status page on free ports of the project's (not Dask's 8786/8787)."""
    from distributed import LocalCluster

    from lookup.kit.engines.ports import free_port

    return LocalCluster(
        n_workers=workers,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        scheduler_port=free_port(),
        dashboard_address=f"127.0.0.1:{free_port()}",
        worker_dashboard_address=None,
    )


@contextmanager
def dask_client(scheduler: str | None = None) -> Iterator[Any]:
    """A client of ``scheduler`` (``tcp://HOST:PORT``), or of a small local cluster that
    lives as long as the block: two single-threaded worker processes."""
    from distributed import Client

    if scheduler:
        try:
            client = Client(scheduler, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise ClusterFoldError(
                f"cannot reach the Dask scheduler at {scheduler}: {exc}"
            ) from None
        try:
            client.wait_for_workers(1, timeout=WORKER_WAIT_S)
        except (OSError, TimeoutError) as exc:
            client.close(timeout=CONNECT_TIMEOUT_S)
            raise ClusterFoldError(
                f"no Dask worker joined the scheduler at {scheduler} within "
                f"{WORKER_WAIT_S:g}s: {exc}"
            ) from None
        try:
            yield client
        finally:
            client.close(timeout=CONNECT_TIMEOUT_S)
        return
    with local_cluster() as cluster:
        with Client(cluster, timeout=CONNECT_TIMEOUT_S, set_as_default=False) as client:
            yield client


def fold_on_dask(
    board: ScoreBoard,
    batch: EventBatch,
    client: Any,
    *,
    bot_weight: float = 0.0,
    picked_weight: float = 1.0,
    partitions: int = DEFAULT_PARTITIONS,
    progress: Callable[[BuildProgress], None] | None = None,
    gate: Gate | None = None,
) -> list[FoldReport]:
    """:meth:`ScoreBoard.fold` with the work done by the Dask cluster behind ``client``.

    Per market one task folds the hour traffic, ``partitions`` tasks the queries and up
    to ``partitions`` the users' retypes. The board changes only when every task
    answered; on a failure of the cluster it is as it was and :class:`ClusterFoldError`
    says what happened."""
    from distributed import as_completed

    if partitions < 1:
        raise ValueError("partitions must be at least 1")
    plans: list[_MarketPlan] = []
    futures: list[Any] = []
    owner: dict[str, _MarketPlan] = {}
    scheduler = str(client.scheduler.address)
    status = BuildProgress(scheduler=scheduler)
    for m in batch.markets:
        known = board.markets.get(m)
        state = (
            _copy_market(known)
            if known is not None
            else MarketScores(m, board.period_s, board.half_life_s)
        )
        plan, qparts, uparts = _plan_market(
            state, batch.for_market(m), partitions, bot_weight, picked_weight
        )
        plans.append(plan)
        for part in [*qparts, *uparts]:
            task = (
                fold_hours
                if isinstance(part, HourPart)
                else fold_query_part
                if isinstance(part, QueryPart)
                else retypes_of_part
            )
            fut = client.submit(task, part, gate, pure=False, key=_key(m, task.__name__))
            owner[fut.key] = plan
            futures.append(fut)
    status.tasks_total = len(futures)

    def report() -> None:
        try:
            status.workers_alive = len(client.scheduler_info().get("workers", {}))
        except (OSError, TimeoutError, RuntimeError):
            status.workers_alive = 0
        if progress is not None:
            progress(BuildProgress(**status.to_dict()))  # a copy: the caller may keep it

    try:
        report()
        for fut in as_completed(futures, loop=client.loop):
            owner[fut.key].take(fut.result())
            status.tasks_done += 1
            report()
    except Exception as exc:  # whatever the cluster raised, the fold did not happen
        raise ClusterFoldError(
            f"the typeahead fold on Dask ({scheduler}) failed after {status.tasks_done} of "
            f"{status.tasks_total} tasks ({type(exc).__name__}: {exc}); the scores were left "
            "unchanged and nothing was published"
        ) from exc
    for plan in plans:
        _apply(plan)
        board.markets[plan.state.market] = plan.state  # created empty, as board.market() does
    return [plan.report for plan in plans]


_counter = itertools.count()


def _key(market: str, task: str) -> str:
    """A unique task key that names what the task folds (shown by Dask's own tools)."""
    return f"typeahead-{task}-{market}-{time.time_ns()}-{next(_counter)}"


class ClusterFolder:
    """A fold function for the pipeline that runs on Dask: a client opened on first use
    (of ``scheduler``, or of a local cluster) and kept for the rest of the build.

    Use it as a context manager; :attr:`progress` holds the latest :class:`BuildProgress`
    (the dashboard's view of the build)."""

    def __init__(
        self,
        scheduler: str | None = None,
        *,
        partitions: int = DEFAULT_PARTITIONS,
        on_progress: Callable[[BuildProgress], None] | None = None,
        gate: Gate | None = None,
    ) -> None:
        self.scheduler = scheduler
        self.partitions = partitions
        self.on_progress = on_progress
        self.gate = gate
        self.progress = BuildProgress(scheduler=scheduler or "local cluster")
        self._stack = ExitStack()
        self._client: Any = None

    def __enter__(self) -> ClusterFolder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the client (and the local cluster, if this folder started one)."""
        self._client = None
        try:
            self._stack.close()
        except (OSError, TimeoutError, RuntimeError):
            pass  # a scheduler already gone cannot be said goodbye to

    def _open(self) -> Any:
        """The client, connected on first use."""
        if self._client is None:
            try:
                self._client = self._stack.enter_context(dask_client(self.scheduler))
            except (OSError, TimeoutError, RuntimeError) as exc:
                if isinstance(exc, ClusterFoldError):
                    raise
                raise ClusterFoldError(
                    f"cannot start the Dask cluster ({self.scheduler or 'local'}): {exc}"
                ) from exc
        return self._client

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
        """``fn`` over ``items`` on the cluster's workers, results in order (the build's
        per-shard tries, :func:`~lookup.typeahead.shardbuild.build_shards`)."""
        client = self._open()
        try:
            return list(client.gather(client.map(fn, list(items), pure=False)))
        except (OSError, TimeoutError, RuntimeError) as exc:
            raise ClusterFoldError(f"the shard builds failed on the cluster: {exc}") from exc

    def _seen(self, status: BuildProgress) -> None:
        self.progress = status
        if self.on_progress is not None:
            self.on_progress(self.progress)

    def __call__(
        self, board: ScoreBoard, batch: EventBatch, *, bot_weight: float, picked_weight: float
    ) -> list[FoldReport]:
        """Fold ``batch`` into ``board`` on the cluster (as :meth:`ScoreBoard.fold`)."""
        return fold_on_dask(
            board,
            batch,
            self._open(),
            bot_weight=bot_weight,
            picked_weight=picked_weight,
            partitions=self.partitions,
            progress=self._seen,
            gate=self.gate,
        )


def fold_board(
    board: ScoreBoard,
    batch: EventBatch,
    *,
    scheduler: str | None = None,
    bot_weight: float = 0.0,
    picked_weight: float = 1.0,
    partitions: int = DEFAULT_PARTITIONS,
    progress: Callable[[BuildProgress], None] | None = None,
    gate: Gate | None = None,
) -> list[FoldReport]:
    """Fold ``batch`` into ``board`` on the scheduler given (or a local cluster)."""
    with ClusterFolder(scheduler, partitions=partitions, on_progress=progress, gate=gate) as folder:
        return folder(board, batch, bot_weight=bot_weight, picked_weight=picked_weight)


__all__ = [
    "DEFAULT_PARTITIONS",
    "BuildProgress",
    "ClusterFoldError",
    "ClusterFolder",
    "FoldFn",
    "Gate",
    "dask_client",
    "fold_board",
    "fold_hours",
    "fold_on_dask",
    "fold_query_part",
    "local_cluster",
    "local_fold",
    "retypes_of_part",
]
