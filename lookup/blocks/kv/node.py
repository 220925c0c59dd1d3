"""One storage node: an HTTP server with a local store, a coordinator, and repair loops.

Run as ``python -m lookup.blocks.kv.node --name n1 --cluster cluster.json``. The cluster
file names every member and its URL (membership is static, as the ring is: a node that
is down is still on the ring, which is what makes hinted handoff and repair possible).
With ``--fd N`` the node serves on a listening socket it inherited instead of binding its
URL's port itself: :class:`~lookup.blocks.kv.cluster.KvCluster` binds every node's port
before it writes the cluster file, so no other process can take one in between.

Endpoints (JSON):

- client: ``GET/PUT/DELETE /kv/{key}`` — this node coordinates (:mod:`.coordinator`);
- replica: ``/replica/get``, ``/replica/put``, ``/replica/hint``, ``/replica/merkle``,
  ``/replica/sync`` — what coordinators and peers call;
- ``/ping`` (the heartbeat), ``/stats``;
- admin (``Authorization: Bearer <token>``): ``POST /admin/partition`` (drop all traffic
  to and from the named peers in this node's transport), ``POST /admin/skew`` (offset this
  node's wall clock, for the last-write-wins demonstration).

Three loops run beside the server: heartbeats (a peer missing them for
``kv_down_after_s`` is treated as down), hinted handoff (hints held for a peer are pushed
once it answers again) and anti-entropy (Merkle trees compared with each peer over the
keys both replicate; differing buckets exchanged both ways).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from lookup import settings
from lookup.blocks.kv import coordinator
from lookup.blocks.kv.coordinator import PeerUnreachable
from lookup.blocks.kv.merkle import MerkleTree, diff_buckets
from lookup.blocks.kv.store import NodeStore, open_node_store, versions_digest
from lookup.kit.admin import is_admin
from lookup.kit.engines.storeurl import sqlite_url
from lookup.kit.ring import HashRing

__all__ = ["Node", "PeerUnreachable", "build_app", "main"]

FROM_HEADER = "X-Kv-From"
T = TypeVar("T")


class Node:
    """A storage node's state: its store, the ring, peers' liveness, counters."""

    def __init__(self, name: str, cluster: dict[str, Any], data_dir: Path, token: str) -> None:
        self.name = name
        self.urls: dict[str, str] = dict(cluster["nodes"])
        if name not in self.urls:
            raise ValueError(f"{name!r} is not a member of the cluster {sorted(self.urls)}")
        self.n_default = int(cluster.get("n", 3))
        self.ring = HashRing(self.urls, vnodes=int(cluster.get("vnodes", 64)))
        self.store: NodeStore = open_node_store(sqlite_url(data_dir / f"{name}.sqlite3"))
        self.token = token
        self.timeout_s = float(cluster.get("timeout_s", settings.get("kv_replica_timeout_s")))
        self.heartbeat_s = float(cluster.get("heartbeat_s", settings.get("kv_heartbeat_s")))
        self.down_after_s = float(cluster.get("down_after_s", settings.get("kv_down_after_s")))
        self.anti_entropy_s = float(
            cluster.get("anti_entropy_s", settings.get("kv_anti_entropy_s"))
        )
        self.merkle_depth = int(cluster.get("merkle_depth", 8))
        self.blocked: set[str] = set()
        self.skew_s = 0.0
        self.started = time.monotonic()
        self.last_ok: dict[str, float] = {}
        self.stats: Counter[str] = Counter()
        self._counter = 0
        self._running: set[asyncio.Task[Any]] = set()
        self._homes: dict[str, tuple[str, ...]] = {}
        self.session: aiohttp.ClientSession | None = None
        self.tasks: list[asyncio.Task[None]] = []

    def spawn(self, coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        """Run ``coro`` as a task this node keeps a reference to until it ends (the event
        loop holds tasks only weakly; a write's slower replicas outlive the request)."""
        task = asyncio.ensure_future(coro)
        self._running.add(task)
        task.add_done_callback(self._running.discard)
        return task

    def next_counter(self) -> int:
        """A node-wide write counter for this node's own clock entry: milliseconds since
        the epoch, at least one more than the last, so a restart never reuses one."""
        self._counter = max(self._counter + 1, time.time_ns() // 1_000_000)
        return self._counter

    # -- time, liveness, transport ---------------------------------------------------------
    def now(self) -> float:
        """This node's wall clock, with any injected skew (versions' LWW timestamps)."""
        return time.time() + self.skew_s

    def alive(self, peer: str) -> bool:
        """Whether ``peer`` answered a heartbeat recently (self: always; at start: assumed)."""
        if peer == self.name:
            return True
        if peer in self.blocked:
            return False
        seen = self.last_ok.get(peer)
        if seen is None:
            return time.monotonic() - self.started < self.down_after_s
        return time.monotonic() - seen < self.down_after_s

    async def call(
        self,
        peer: str,
        method: str,
        path: str,
        body: Any = None,
        params: dict[str, str] | None = None,
    ) -> Any:
        """One request to ``peer``; :class:`PeerUnreachable` on any failure or a partition."""
        if peer in self.blocked:
            self.stats["dropped by partition"] += 1
            raise PeerUnreachable(f"{peer}: partitioned from {self.name}")
        assert self.session is not None
        try:
            async with self.session.request(
                method,
                self.urls[peer] + path,
                json=body,
                params=params,
                headers={FROM_HEADER: self.name},
                timeout=aiohttp.ClientTimeout(total=self.timeout_s),
            ) as resp:
                if resp.status != 200:
                    raise PeerUnreachable(f"{peer}: HTTP {resp.status}")
                data = await resp.json()
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise PeerUnreachable(f"{peer}: {type(exc).__name__}") from exc
        self.last_ok[peer] = time.monotonic()
        return data

    # -- replica operations (local) --------------------------------------------------------
    def shared_keys(self, peer: str):  # noqa: ANN201 - a predicate
        """Keys whose home replicas (default N) include both this node and ``peer``."""

        def keep(key: str) -> bool:
            home = self.home(key)
            return self.name in home and peer in home

        return keep

    def home(self, key: str) -> tuple[str, ...]:
        """The key's home replicas at the default N (cached: membership is static)."""
        home = self._homes.get(key)
        if home is None:
            home = self._homes[key] = tuple(self.ring.preference_list(key, self.n_default))
        return home

    # -- loops -------------------------------------------------------------------------
    async def _forever(
        self, name: str, round_: Callable[[], Awaitable[None]], pause_s: float
    ) -> None:
        """Run ``round_`` every ``pause_s``; a failing round is counted, the loop goes on."""
        while True:
            await asyncio.sleep(pause_s)
            try:
                await round_()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - shown in /stats, never kills the loop
                self.stats[f"{name} rounds failed"] += 1

    def loops(self) -> list[Coroutine[Any, Any, None]]:
        """The heartbeat, hinted-handoff and anti-entropy loops, to run beside the server."""
        return [
            self._forever("heartbeat", self.heartbeat_round, self.heartbeat_s),
            self._forever("handoff", self.handoff_round, self.heartbeat_s),
            self._forever("anti-entropy", self.anti_entropy_round, self.anti_entropy_s),
        ]

    async def heartbeat_round(self) -> None:
        await asyncio.gather(*(self._ping(p) for p in self.urls if p != self.name))

    async def _ping(self, peer: str) -> None:
        try:
            await self.call(peer, "GET", "/ping")
        except PeerUnreachable:
            self.stats["heartbeats missed"] += 1

    async def handoff_round(self) -> None:
        """Push the hints held for every peer that answers again; drop each once stored."""
        for target in list(self.store.hint_targets()):
            if target == self.name or not self.alive(target):
                continue
            for hint_id, key, versions in self.store.hints_for(target):
                try:
                    await self.call(
                        target, "POST", "/replica/put", {"key": key, "versions": versions}
                    )
                except PeerUnreachable:
                    break
                self.store.drop_hint(hint_id)
                self.stats["hints delivered"] += 1

    async def anti_entropy_round(self) -> None:
        for peer in self.urls:
            if peer != self.name and self.alive(peer):
                try:
                    await self.sync_with(peer)
                except PeerUnreachable:
                    pass

    async def sync_with(self, peer: str) -> int:
        """One anti-entropy exchange with ``peer``; the number of keys that changed here."""
        keep = self.shared_keys(peer)
        depth = self.merkle_depth
        theirs = MerkleTree.from_json(
            (
                await self.call(
                    peer, "GET", "/replica/merkle", params={"peer": self.name, "depth": str(depth)}
                )
            )["levels"]
        )
        mine = MerkleTree.build(self.store.digests(keep), depth)
        buckets, compared = diff_buckets(mine, theirs)
        self.stats["anti-entropy rounds"] += 1
        self.stats["merkle hashes compared"] += compared
        if not buckets:
            return 0
        ours = self.store.in_buckets(set(buckets), depth, keep)
        answer = await self.call(
            peer,
            "POST",
            "/replica/sync",
            {"peer": self.name, "depth": depth, "buckets": buckets, "versions": ours},
        )
        changed = sum(self.store.put(k, v) for k, v in answer["versions"].items())
        self.stats["anti-entropy keys repaired"] += changed + int(answer["changed"])
        return changed

    def status(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "keys": self.store.count(),
            "hints pending": self.store.hint_targets(),
            "down (as seen here)": sorted(p for p in self.urls if not self.alive(p)),
            "partitioned from": sorted(self.blocked),
            "skew s": self.skew_s,
            **{k: v for k, v in sorted(self.stats.items())},
        }


def _error(status: int, code: str, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": code, "message": message, **extra}, status_code=status)


def build_app(node: Node) -> Starlette:
    """The node's HTTP app: client, replica and admin routes over ``node``."""

    def refused(request: Request) -> JSONResponse | None:
        sender = request.headers.get(FROM_HEADER, "")
        if sender and sender in node.blocked:
            node.stats["dropped by partition"] += 1
            return _error(503, "partitioned", f"{node.name} drops traffic from {sender}")
        return None

    async def body_of(request: Request) -> Any:
        try:
            return json.loads(await request.body() or b"null")
        except ValueError:
            return None

    async def ping(request: Request) -> JSONResponse:
        return refused(request) or JSONResponse({"name": node.name})

    async def stats(request: Request) -> JSONResponse:
        return JSONResponse(node.status())

    async def replica_get(request: Request) -> JSONResponse:
        if (r := refused(request)) is not None:
            return r
        key = request.query_params.get("key", "")
        return JSONResponse({"versions": node.store.get(key)})

    async def replica_put(request: Request) -> JSONResponse:
        if (r := refused(request)) is not None:
            return r
        body = await body_of(request)
        if not isinstance(body, dict) or not isinstance(body.get("versions"), list):
            return _error(400, "bad_request", "expected {key, versions}")
        return JSONResponse({"changed": node.store.put(str(body["key"]), body["versions"])})

    async def replica_hint(request: Request) -> JSONResponse:
        if (r := refused(request)) is not None:
            return r
        body = await body_of(request)
        if not isinstance(body, dict) or body.get("target") not in node.urls:
            return _error(400, "bad_request", "expected {target, key, versions}")
        node.store.add_hint(body["target"], str(body["key"]), body["versions"])
        node.stats["hints stored"] += 1
        return JSONResponse({"ok": True})

    async def replica_dump(request: Request) -> JSONResponse:
        """Every key's digest and values here (what convergence and loss checks compare)."""
        if (r := refused(request)) is not None:
            return r
        return JSONResponse(
            {
                k: {"digest": versions_digest(v), "values": [x["value"] for x in v]}
                for k, v in node.store.in_buckets({0}, 0).items()
            }
        )

    async def replica_merkle(request: Request) -> JSONResponse:
        if (r := refused(request)) is not None:
            return r
        peer = request.query_params.get("peer", "")
        depth = int(request.query_params.get("depth", node.merkle_depth))
        tree = MerkleTree.build(node.store.digests(node.shared_keys(peer)), depth)
        return JSONResponse({"levels": tree.to_json()})

    async def replica_sync(request: Request) -> JSONResponse:
        if (r := refused(request)) is not None:
            return r
        body = await body_of(request)
        keep = node.shared_keys(body["peer"])
        mine = node.store.in_buckets(set(body["buckets"]), int(body["depth"]), keep)
        changed = sum(node.store.put(k, v) for k, v in body["versions"].items())
        node.stats["anti-entropy keys repaired"] += changed
        return JSONResponse({"versions": mine, "changed": changed})

    def admin_refusal(request: Request) -> JSONResponse | None:
        auth = request.headers.get("authorization")
        if not auth:
            return _error(401, "unauthorized", "admin token required (Authorization: Bearer)")
        if not is_admin(auth, node.token):
            return _error(403, "forbidden", "not the admin token")
        return None

    async def admin_partition(request: Request) -> JSONResponse:
        if (r := admin_refusal(request)) is not None:
            return r
        body = await body_of(request)
        peers = body.get("block") if isinstance(body, dict) else None
        if not isinstance(peers, list) or any(p not in node.urls for p in peers):
            return _error(
                400, "bad_request", f"expected {{block: [names among {sorted(node.urls)}]}}"
            )
        node.blocked = set(peers) - {node.name}
        return JSONResponse({"partitioned from": sorted(node.blocked)})

    async def admin_skew(request: Request) -> JSONResponse:
        if (r := admin_refusal(request)) is not None:
            return r
        body = await body_of(request)
        skew = body.get("skew_s") if isinstance(body, dict) else None
        if not isinstance(skew, int | float) or isinstance(skew, bool):
            return _error(400, "bad_request", "expected {skew_s: seconds}")
        node.skew_s = float(skew)
        return JSONResponse({"skew s": node.skew_s})

    async def kv_route(request: Request) -> JSONResponse:
        key = request.path_params["key"]
        if request.method == "GET":
            return await coordinator.handle_get(node, key, request.query_params)
        body = await body_of(request)
        if request.method == "DELETE" and body is None:
            body = {}
        return await coordinator.handle_put(
            node, key, body, request.query_params, delete=request.method == "DELETE"
        )

    @asynccontextmanager
    async def lifespan(app: Starlette):  # noqa: ANN202
        node.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=200))
        node.tasks = [asyncio.create_task(loop) for loop in node.loops()]
        try:
            yield
        finally:
            for task in node.tasks:
                task.cancel()
            await node.session.close()
            node.store.close()

    return Starlette(
        routes=[
            Route("/ping", ping),
            Route("/stats", stats),
            Route("/replica/get", replica_get),
            Route("/replica/put", replica_put, methods=["POST"]),
            Route("/replica/hint", replica_hint, methods=["POST"]),
            Route("/replica/merkle", replica_merkle),
            Route("/replica/dump", replica_dump),
            Route("/replica/sync", replica_sync, methods=["POST"]),
            Route("/admin/partition", admin_partition, methods=["POST"]),
            Route("/admin/skew", admin_skew, methods=["POST"]),
            Route("/kv/{key:path}", kv_route, methods=["GET", "PUT", "DELETE"]),
        ],
        lifespan=lifespan,
    )


def main(argv: list[str] | None = None) -> int:
    """Serve one node until SIGTERM/SIGINT (on the inherited socket ``--fd`` when given)."""
    import uvicorn
    from uvicorn.config import STARTUP_FAILURE

    parser = argparse.ArgumentParser(prog="python -m lookup.blocks.kv.node")
    parser.add_argument("--name", required=True)
    parser.add_argument("--cluster", required=True, type=Path, help="the cluster JSON file")
    parser.add_argument(
        "--fd", type=int, default=None,
        help="serve on this inherited listening socket (bound to the node's URL by the "
        "cluster) instead of binding the URL's port here",
    )  # fmt: skip
    args = parser.parse_args(argv)
    try:
        cluster = json.loads(args.cluster.read_text())
        url = cluster["nodes"][args.name]
    except (OSError, ValueError, KeyError) as exc:
        parser.exit(2, f"cannot read node {args.name!r} from {args.cluster}: {exc}\n")
    data_dir = Path(cluster["data_dir"])
    token = Path(cluster["token_file"]).read_text().strip()
    node = Node(args.name, cluster, data_dir, token)
    host, port = url.removeprefix("http://").rsplit(":", 1)
    config = uvicorn.Config(
        build_app(node),
        host=host,
        port=int(port),
        log_level="warning",
        access_log=False,
        lifespan="on",
    )
    server = uvicorn.Server(config)
    # socket(fileno=) reads the family and protocol from the descriptor (TCP: no Nagle delay)
    sockets = None if args.fd is None else [socket.socket(fileno=args.fd)]
    try:
        server.run(sockets=sockets)
    except KeyboardInterrupt:
        pass
    return 0 if server.started else STARTUP_FAILURE  # as uvicorn.run exits


if __name__ == "__main__":
    raise SystemExit(main())
