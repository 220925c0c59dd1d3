"""A coordinator over shard servers: the same fan-out, hedging and deadlines, over HTTP.

:class:`RemoteReplica` has the interface of :class:`~lookup.search.coordinator.Replica`
(``submit(snapshot, plan, hedge, inbox)``, ``stats``, ``fault``, ``close``) but sends the
plan to a shard server process (:mod:`.shard_server`) over a pooled HTTP client and puts
the decoded answer — or the error — into the inbox, so the coordinator's hedging,
tied requests and deadline code run unchanged over real processes. Every request is
pinned to the coordinator's index version (``?version=V``): a shard server answers from
V — the version it serves or the one before it, which it keeps for this — or refuses
with ``409 VERSION_NOT_HELD``; a refusal, or an answer from another version, is an
error like any other (the coordinator hedges it to the other replica), so no query
merges two versions, also while the replicas switch one by one.

**What the coordinator still reads itself.** The query phase — posting lists, scoring,
top k, facet counts, the real-time tier's slice — runs in the shard processes. The
coordinator opens the same index version read-only (through its
:class:`~lookup.search.location.IndexLocation`) for what is global or per page:

* corpus statistics for the plan (document frequencies, document count, total length):
  **global at build time**, taken from the version as the in-process engine takes them,
  not a DFS round — one round trip fewer per query, and the scores are those of the
  in-process engine to the last bit, which a per-query DFS round would also give but
  only at twice the fan-out;
* the term dictionary (prefix expansion, typo tolerance, "did you mean");
* stored fields and term positions for the final page's snippets, and in-links for
  ``explain``: read for the ten results of a page from the version's files rather than
  fetched from the owning shard (no query-then-fetch round yet: the coordinator and
  the shard servers read one published version from one location).

Members are an input — ``[{address, shard, replica, version}]`` — and
:meth:`RemoteShards.set_members` replaces them at run time (a membership watcher feeds
it); a shard with no member answers nothing and the response says so in
``shardsAnswered``.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from queue import SimpleQueue
from typing import Any

import httpx

from lookup.search.coordinator import Coordinator, FaultSwitch, ReplicaStats
from lookup.search.shard import IndexVersion
from lookup.search.shard_server import QUERY_PATH
from lookup.search.wire import WireError, decode_answer, encode_plan


class ShardUnavailable(RuntimeError):
    """A shard request that got no usable answer (refused, timed out, another version)."""


@dataclass(frozen=True)
class Member:
    """One shard server: where it listens, which replica of which shard it is."""

    address: str
    shard: int
    replica: int
    version: str | None = None

    @classmethod
    def of(cls, value: Member | Mapping[str, Any]) -> Member:
        """A member from itself or a ``{address, shard, replica, version}`` mapping."""
        if isinstance(value, Member):
            return value
        address = str(value["address"]).rstrip("/")
        if not address.startswith(("http://", "https://")):
            raise ValueError(f"a member address is a URL, not {address!r}")
        shard, replica = int(value["shard"]), int(value["replica"])
        if shard < 0 or replica < 0:
            raise ValueError("shard and replica are numbers from 0")
        version = value.get("version")
        return cls(address, shard, replica, None if version is None else str(version))


class RemoteReplica:
    """One replica of a shard in another process, asked over HTTP.

    Requests run on ``workers`` threads sharing one pooled client. A request not sent
    within ``timeout_s`` of being submitted is dropped unsent (its answer would come
    after the deadline anyway), so a stopped process does not pile up work that runs
    when it continues. The fault switch still works (the in-process panel's drills).
    """

    def __init__(self, member: Member, *, timeout_s: float, workers: int = 4) -> None:
        self.member = member
        self.shard = member.shard
        self.replica = member.replica
        self.address = member.address
        self.timeout_s = timeout_s
        self.fault = FaultSwitch()
        self.stats = ReplicaStats()
        self.errors = 0
        self._workers = workers
        self._client: httpx.Client | None = None  # made on the first request (see _http)
        self._client_lock = threading.Lock()
        self._closed = False
        self._pool = ThreadPoolExecutor(
            workers, thread_name_prefix=f"remote{self.shard}r{self.replica}"
        )

    def submit(self, snapshot: IndexVersion, plan: Any, hedge: bool, inbox: SimpleQueue) -> None:
        """Send a plan to the shard server; its answer (or error) is put into ``inbox``."""
        self.stats.requests += 1
        if hedge:
            self.stats.hedge_requests += 1
        fault = self.fault
        if fault.mode == "dead":
            self.stats.dropped += 1
            return
        delay = 0.0
        if fault.mode == "slow" and random.random() < fault.probability:
            delay = fault.delay_ms / 1000.0
            self.stats.slowed += 1
        submitted = time.perf_counter()
        body = encode_plan(plan)
        version = str(snapshot.version)

        def run() -> None:
            if delay:
                time.sleep(delay)
            if time.perf_counter() - submitted > self.timeout_s:
                return  # queued behind a stuck request past any deadline: not worth sending
            inbox.put((self.shard, self._ask(body, version)))

        self._pool.submit(run)

    def run_inline(self, snapshot: IndexVersion, plan: Any, inbox: SimpleQueue) -> None:
        """Ask on the calling thread (a coordinator over processes runs with inline off)."""
        self.stats.requests += 1
        inbox.put((self.shard, self._ask(encode_plan(plan), str(snapshot.version))))

    def _http(self) -> httpx.Client:
        """The pooled client, made once when first needed (a member list can change often,
        and a client costs a TLS context even for plain HTTP)."""
        with self._client_lock:
            if self._closed:
                raise ShardUnavailable(f"replica {self.replica} of shard {self.shard} is closed")
            if self._client is None:
                self._client = httpx.Client(
                    base_url=self.address,
                    timeout=self.timeout_s,
                    trust_env=False,
                    limits=httpx.Limits(
                        max_connections=self._workers, max_keepalive_connections=self._workers
                    ),
                )
            return self._client

    def _ask(self, body: bytes, version: str) -> Any:
        try:
            reply = self._http().post(  # pinned: the server answers from V or refuses (409)
                QUERY_PATH,
                content=body,
                params={"version": version},
                headers={"content-type": "application/json"},
            )
            if reply.status_code != 200:
                raise ShardUnavailable(
                    f"shard {self.shard} replica {self.replica} answered {reply.status_code}: "
                    f"{reply.text[:200]}"
                )
            answer, served = decode_answer(reply.content)
            if served != version:
                raise ShardUnavailable(
                    f"shard {self.shard} replica {self.replica} serves version {served}, "
                    f"not {version}"
                )
            if answer.shard != self.shard:
                raise ShardUnavailable(f"{self.address} answered for shard {answer.shard}")
        except (httpx.HTTPError, WireError, ShardUnavailable) as exc:
            self.errors += 1
            return exc if isinstance(exc, ShardUnavailable) else ShardUnavailable(str(exc))
        answer.replica = self.replica
        answer.done_at = time.perf_counter()
        return answer

    def close(self) -> None:
        """Stop the worker threads and the client's connections."""
        self._pool.shutdown(wait=False, cancel_futures=True)
        with self._client_lock:
            self._closed = True
            client, self._client = self._client, None
        if client is not None:
            client.close()


class VacantReplica:
    """The stand-in for a shard no member serves: every request fails at once."""

    def __init__(self, shard: int, replica: int) -> None:
        self.shard = shard
        self.replica = replica
        self.fault = FaultSwitch()
        self.stats = ReplicaStats()

    def submit(self, snapshot: IndexVersion, plan: Any, hedge: bool, inbox: SimpleQueue) -> None:
        """Answer with an error: no server holds this shard."""
        self.stats.requests += 1
        inbox.put((self.shard, ShardUnavailable(f"no shard server for shard {self.shard}")))

    def run_inline(self, snapshot: IndexVersion, plan: Any, inbox: SimpleQueue) -> None:
        """The same as :meth:`submit`."""
        self.submit(snapshot, plan, False, inbox)

    def close(self) -> None:
        """Nothing to stop."""


class RemoteShards:
    """The member set of a coordinator over shard servers, replaceable while it serves."""

    def __init__(self, coordinator: Coordinator, *, timeout_s: float, workers: int = 4) -> None:
        self.coordinator = coordinator
        self.timeout_s = timeout_s
        self.workers = workers
        self._replicas: dict[Member, RemoteReplica] = {}
        self._lock = threading.Lock()
        coordinator.make_replica = VacantReplica

    def set_members(self, members: Iterable[Member | Mapping[str, Any]]) -> None:
        """Serve each shard from these members, replica order by replica number.

        A member already known keeps its client and counters; one no longer listed is
        closed; a shard left with no member answers with an error (a partial answer).
        """
        wanted = sorted({Member.of(m) for m in members}, key=lambda m: (m.shard, m.replica))
        with self._lock:
            keep = {m: self._replicas.get(m) for m in wanted}
            for m in wanted:
                if keep[m] is None:
                    keep[m] = RemoteReplica(m, timeout_s=self.timeout_s, workers=self.workers)
            shards = max([m.shard + 1 for m in wanted] + [len(self.coordinator.groups)])
            retired: list[Any] = []
            for s in range(shards):
                mine = [keep[m] for m in wanted if m.shard == s]
                retired += self.coordinator.set_replicas(s, mine or [VacantReplica(s, 0)])
            gone = [r for m, r in self._replicas.items() if m not in keep]
            self._replicas = {m: r for m, r in keep.items() if r is not None}
        for r in {id(x): x for x in retired + gone}.values():
            r.close()

    def members(self) -> list[dict[str, Any]]:
        """The current members with their request counters."""
        with self._lock:
            return [
                {
                    "address": m.address,
                    "shard": m.shard,
                    "replica": m.replica,
                    "version": m.version,
                    "requests": r.stats.requests,
                    "errors": r.errors,
                }
                for m, r in self._replicas.items()
            ]


def remote_coordinator(
    members: Iterable[Member | Mapping[str, Any]],
    *,
    timeout_s: float | None = None,
    workers: int = 4,
    **options: Any,
) -> tuple[Coordinator, RemoteShards]:
    """A coordinator whose shards are the shard servers in ``members``.

    ``options`` are :class:`Coordinator`'s (deadline, hedging, …); the caller-runs-one-
    shard shortcut is off (every shard is a request to a process). ``timeout_s`` bounds
    one shard request (default: the deadline). Returns the coordinator and its member
    set (:meth:`RemoteShards.set_members` replaces the members at run time).
    """
    options.setdefault("inline", False)
    coordinator = Coordinator(**options)
    limit = coordinator.deadline_ms / 1000.0 if timeout_s is None else timeout_s
    shards = RemoteShards(coordinator, timeout_s=limit, workers=workers)
    shards.set_members(members)
    return coordinator, shards


__all__ = [
    "Member",
    "RemoteReplica",
    "RemoteShards",
    "ShardUnavailable",
    "VacantReplica",
    "remote_coordinator",
]
