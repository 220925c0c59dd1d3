"""Shard servers: one process holding shard ``i`` of every market, over HTTP.

:mod:`~lookup.typeahead.sharding` plans the shards and writes one snapshot per shard
plus ``plan.json`` (boundaries and the head table). A **shard server**
(:class:`ShardServer`, ``lookup typeahead serve-shard``) is its own process that maps
only its own shard files — shard ``i`` of every market — and answers
``GET /v1/shard/suggest`` for prefixes in its range; a prefix outside its range is
refused with ``421 WRONG_SHARD`` rather than answered with a misleading empty list.

The shards serve the snapshots as built. The serve-time policy (hot blocklist,
trending) lives in the router in front of them (:mod:`~lookup.typeahead.router`), which
asks a shard for more than its stored top k (``fetch=N``), for scores and global ranks,
and for the scores of exact terms; :meth:`ShardServer.answer` documents that protocol.
:mod:`~lookup.typeahead.supervisor` starts one shard server process per shard.
"""

from __future__ import annotations

import base64
import heapq
import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from lookup.kit.http import ApiError, parse_query_string
from lookup.typeahead.fuzzy import TYPO, TypoPolicy, corrections
from lookup.typeahead.http import (
    NOT_GET,
    allows_get,
    count_param,
    encode_json,
    send_answer,
    send_refusal,
    suggest_params,
)
from lookup.typeahead.normalize import normalize_prefix
from lookup.typeahead.reload import SnapshotFollower
from lookup.typeahead.sharding import describe_range, in_range, shard_file, shard_snapshot
from lookup.typeahead.snapshot import Snapshot
from lookup.typeahead.trie import TrieReader

if TYPE_CHECKING:
    from lookup.kit.mounts import Mounts

#: The shard servers' endpoint (internal: the router calls it, clients call the router).
SHARD_PATH = "/v1/shard/suggest"
#: Response headers naming who answered: a shard number or ``head``, and the cut's version.
SHARD_HEADER = b"x-lookup-shard"
VERSION_HEADER = b"x-lookup-version"
#: The most completions a router may over-fetch from one shard for one prefix.
MAX_FETCH = 4096
#: The most ``exact`` terms one shard request may ask scores for.
MAX_EXACT = 100


@dataclass
class ShardSlice:
    """One market's shard as a shard server holds it."""

    snapshot: Snapshot
    lo: str
    hi: str | None
    source_version: str
    ranks: np.ndarray | None = None  # local id -> global rank (None: an older cut)


def _ranked(reader: TrieReader, node: int) -> Iterator[int]:
    """Every completion id under ``node``, best first, deduplicated, read lazily.

    The stored list is the subtree's best k, so it is yielded without descending; only
    a reader that wants more merges the children's sequences (and the node's own key).
    """
    top = list(reader.top(node))
    yield from top
    if len(top) < reader.k:
        return  # the stored list already holds every completion
    sources: list[Iterator[int]] = [_ranked(reader, c) for c in reader.children(node)]
    own = reader.terminal(node)
    if own >= 0:
        sources.append(iter((own,)))
    last = top[-1] if top else -1
    for t in heapq.merge(*sources):
        if t > last:
            last = t
            yield t


def top_n(snap: Snapshot, prefix: str, n: int) -> list[int]:
    """The exact best ``n`` completion ids of a (normalised) prefix, beyond the stored k."""
    node = snap.reader.locate(prefix)
    if node < 0:
        return []
    stored = snap.reader.top(node)
    if n <= len(stored):
        return list(stored[:n])
    return list(islice(_ranked(snap.reader, node), n))


def _all_values(raw: bytes, name: str) -> list[str]:
    """Every value of a repeated parameter (``exact=a&exact=b``), decoded strictly."""
    out: list[str] = []
    for part in raw.split(b"&"):
        if part.split(b"=", 1)[0] == name.encode():
            out.extend(parse_query_string(part).values())
    return out


def _slice_of(path: Path) -> ShardSlice:
    """A shard file loaded as a :class:`ShardSlice`."""
    snap = Snapshot(path)
    lo, hi = snap.meta["range"]
    packed = snap.meta.get("ranks")
    ranks = np.frombuffer(base64.b64decode(packed), "<u4") if packed else None
    return ShardSlice(snap, lo, hi, str(snap.meta.get("source_version") or snap.version), ranks)


class ShardServer:
    """Shard ``shard`` of every market under a shard-set root, each from its own file only.

    With a snapshot ``store`` it also loads new versions without a restart
    (:meth:`load_version`, called by :meth:`follow`): it cuts its own shard of the new
    snapshot (into ``n_shards`` shards, as the router plans them) and switches to it,
    keeping the version before too, so a router still on that one is answered from it: a
    request may pin a version (``version=V``) and gets only that version's answer, or
    ``409 VERSION_NOT_HELD``.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        shard: int,
        *,
        store: Any = None,
        n_shards: int | None = None,
        size_weight: float = 0.5,
    ) -> None:
        self.root = Path(root)
        self.shard = shard
        self.slices: dict[str, ShardSlice] = {}
        self.held: dict[str, dict[str, ShardSlice]] = {}
        self.store = store
        self.n_shards = n_shards
        self.size_weight = size_weight
        self.follower: SnapshotFollower | None = None
        self._swap = threading.Lock()
        self.typo = TypoPolicy.from_settings()
        if not self.root.is_dir():
            if store is None:
                raise FileNotFoundError(f"no shard set at {self.root}")
            self.root.mkdir(parents=True)
        for market_dir in sorted(self.root.iterdir()):
            path = shard_file(market_dir, shard)
            if market_dir.name.startswith(".") or not path.is_file():
                continue  # a set being written, or a market with fewer shards
            part = _slice_of(path)
            self.slices[part.snapshot.market] = part
            self.held[part.snapshot.market] = {part.source_version: part}

    def version_of(self, market: str) -> str | None:
        """The version this server serves for ``market`` (None: none yet)."""
        part = self.slices.get(market)
        return part.source_version if part is not None else None

    def load_version(self, market: str, version: str) -> None:
        """Cut this server's shard of ``market``'s snapshot ``version`` from the store and
        switch to it; the version served before stays held for pinned requests."""
        if self.store is None or self.n_shards is None:
            raise RuntimeError("this shard server follows no snapshot store")
        snap = self.store.open(market, version)
        if snap is None:
            raise LookupError(f"no snapshot {version} for {market}")
        target = self.root / ".reload" / f"shard-{self.shard:02d}" / market / version
        if target.exists():
            shutil.rmtree(target)
        plan = shard_snapshot(
            snap, self.n_shards, target, size_weight=self.size_weight, only=(self.shard,)
        )
        with self._swap:
            held = dict(self.held.get(market, {}))
            if self.shard < plan.n:
                part = _slice_of(shard_file(target, self.shard))
                held.pop(version, None)  # newest last, also when a version comes back
                held[version] = part
                self.slices[market] = part
            else:  # the new cut has fewer shards: this server holds none of it
                self.slices.pop(market, None)
            while len(held) > 2:  # the new version and the one before it
                old = next(iter(held))
                del held[old]
                shutil.rmtree(target.parent / old, ignore_errors=True)
            self.held[market] = held

    def follow(self, poll_s: float) -> SnapshotFollower:
        """Start following the snapshot store (see :class:`~lookup.typeahead.reload.
        SnapshotFollower`): each new current version is loaded and switched to."""
        self.follower = SnapshotFollower(
            self.store, self.version_of, self.load_version, poll_s=poll_s,
            name=f"shard-{self.shard}-follower",
        ).start()  # fmt: skip
        return self.follower

    def answer(self, raw: bytes) -> tuple[bytes, str]:
        """``(body, source version)`` for a raw query string, or ``ApiError``.

        Besides ``q``, ``market`` and ``limit`` (the public contract), the router may send
        ``fetch=N`` (the exact best N completions instead of the first ``limit``, for
        over-fetching past blocked ones), ``scores=1`` and ``ranks=1`` (each suggestion's
        score and global rank), ``exact=term`` (repeatable: the score of the suggestion a
        term leads to as a key, for the trending baseline and blend) and ``scatter=1``
        (answer a prefix shorter than two characters from this shard's part of it), and
        ``typos=1``: this shard's best typo-tolerant matches of any prefix (``typos`` per
        suggestion, with scores and global ranks; the router asks every shard, since a
        typo may move a prefix into another range).
        """
        q, market, limit = suggest_params(raw)
        part = self.slices.get(market)
        if part is None:
            known = ", ".join(sorted(self.slices)) or "none"
            raise ApiError(
                400, "UNKNOWN_MARKET", f"shard {self.shard} holds no {market!r}; it holds: {known}"
            )
        if b"version=" in raw:
            part = self._pinned(market, part, raw)
        p = normalize_prefix(q)
        extended = any(x in raw for x in (b"fetch=", b"scores=", b"ranks=", b"exact=",
                                           b"scatter=", b"typos="))  # fmt: skip
        params = parse_query_string(raw) if extended else {}
        if params.get("typos") == "1":
            fetch_raw = params.get("fetch")
            n = limit if fetch_raw is None else count_param(fetch_raw, "fetch", MAX_FETCH)
            return self._corrections(part, market, p, n), part.source_version
        if len(p) < 2:
            if params.get("scatter") != "1":
                raise ApiError(
                    400, "NOT_SHARDED",
                    "prefixes shorter than two characters are answered from the router's "
                    "head table",
                )  # fmt: skip
        elif not in_range(p, part.lo, part.hi):
            raise ApiError(
                421, "WRONG_SHARD",
                f"{p[:2]!r} is outside shard {self.shard} of {market} "
                f"({describe_range(part.lo, part.hi)})",
            )  # fmt: skip
        snap = part.snapshot
        found = snap.find(p, limit)
        if not extended:
            body = {"q": p, "version": part.source_version, "complete": found.complete,
                    "suggestions": snap.texts(found.ids),
                    "scores": snap.scores_of(found.ids)}  # fmt: skip
            return encode_json(body), part.source_version
        fetch_raw = params.get("fetch")
        fetch = None if fetch_raw is None else count_param(fetch_raw, "fetch", MAX_FETCH)
        ids = found.ids if fetch is None else top_n(snap, p, fetch)
        out: dict[str, Any] = {
            "q": p,
            "version": part.source_version,
            "complete": found.complete,
            "suggestions": snap.texts(ids),
        }
        if params.get("scores") == "1":
            out["scores"] = [snap.score(i) for i in ids]
        if params.get("ranks") == "1":
            if part.ranks is None:
                raise ApiError(
                    409, "OLD_FORMAT",
                    f"shard {self.shard} of {market} was cut without global ranks; cut it again",
                )  # fmt: skip
            out["ranks"] = [int(part.ranks[i]) for i in ids]
        terms = _all_values(raw, "exact")
        if len(terms) > MAX_EXACT:
            raise ApiError(400, "TOO_MANY_TERMS", f"at most {MAX_EXACT} exact terms per request")
        if terms:
            exact: dict[str, list[Any]] = {}
            for term in terms:
                t = snap.exact(term)
                if t >= 0:
                    exact[term] = [snap.score(t), snap.string(t) == term]
            out["exact"] = exact
        return encode_json(out), part.source_version

    def _pinned(self, market: str, part: ShardSlice, raw: bytes) -> ShardSlice:
        """The slice of the version a request pins (``version=V``), or 409."""
        wanted = _all_values(raw, "version")
        if not wanted or wanted[-1] == part.source_version:
            return part
        held = self.held.get(market, {}).get(wanted[-1])
        if held is None:
            have = ", ".join(self.held.get(market, {})) or "none"
            raise ApiError(
                409, "VERSION_NOT_HELD",
                f"shard {self.shard} of {market} does not hold version {wanted[-1]!r} "
                f"(it holds: {have})",
            )  # fmt: skip
        return held

    def _corrections(self, part: ShardSlice, market: str, p: str, limit: int) -> bytes:
        """``typos=1``: the shard's best ``limit`` typo-tolerant matches of ``p`` (exact
        ones, which the owning shard answers, left out), with typos, scores and ranks."""
        if part.ranks is None:
            raise ApiError(
                409, "OLD_FORMAT",
                f"shard {self.shard} of {market} was cut without global ranks; cut it again",
            )  # fmt: skip
        snap = part.snapshot
        fixes, _ = corrections(snap, p, limit, frozenset(), self.typo)
        ids = [c.target for c in fixes]
        out = {"q": p, "version": part.source_version, "complete": False,
               "suggestions": snap.texts(ids), "scores": snap.scores_of(ids),
               "ranks": [int(part.ranks[i]) for i in ids],
               "typos": [c.cost / TYPO for c in fixes]}  # fmt: skip
        return encode_json(out)

    def status(self) -> dict[str, Any]:
        """What this server holds (for ``/healthz``)."""
        return {
            "status": "ok",
            "shard": self.shard,
            "pid": os.getpid(),
            "markets": {
                m: {
                    "range": [s.lo, s.hi],
                    "version": s.source_version,
                    "suggestions": s.snapshot.n_strings,
                    "file": s.snapshot.path.name,
                    "held": list(self.held.get(m, {})),
                }
                for m, s in self.slices.items()
            },  # fmt: skip
            "following": self.follower is not None,
            "followErrors": dict(self.follower.errors) if self.follower is not None else {},
        }


class ShardEndpoint:
    """``GET /v1/shard/suggest?q=&market=&limit=`` as a plain ASGI app."""

    def __init__(self, server: ShardServer) -> None:
        self.server = server
        self._shard = str(server.shard).encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not allows_get(scope):
            await send_refusal(scope, send, NOT_GET)
            return
        try:
            body, version = self.server.answer(scope.get("query_string", b""))
        except ApiError as exc:
            await send_refusal(scope, send, exc)
            return
        await send_answer(scope, send, body, [(SHARD_HEADER, self._shard),
                                            (VERSION_HEADER, version.encode())])  # fmt: skip


def install_shard(mounts: Mounts, server: ShardServer) -> ShardServer:
    """Mount a shard server's endpoint and health probe (a ``mount`` for ``create_app``)."""
    mounts.fast_routes.append(Route(SHARD_PATH, ShardEndpoint(server)))
    mounts.health["typeahead-shard"] = server.status
    return server


def run_shard_server(
    root: str | os.PathLike[str],
    shard: int,
    *,
    fd: int | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    parent_pid: int | None = None,
    log_level: str = "warning",
    store_url: str | None = None,
    n_shards: int | None = None,
    size_weight: float = 0.5,
) -> None:
    """Serve one shard until stopped: on an inherited socket ``fd``, else on ``host:port``
    (port 0: a free one, printed).

    With ``store_url`` (a snapshot store) and ``n_shards`` it follows the store and
    switches to each new current snapshot without a restart (:meth:`ShardServer.follow`).

    With ``parent_pid`` the server also stops when that process is gone, so a
    supervisor that dies without cleaning up leaves no shard server behind.
    """
    import uvicorn

    from lookup import settings
    from lookup.kit.asgi import build_app as create_app
    from lookup.kit.serving import uvicorn_options
    from lookup.typeahead.snapshot import open_snapshot_store

    store = open_snapshot_store(store_url) if store_url else None
    server = ShardServer(root, shard, store=store, n_shards=n_shards, size_weight=size_weight)
    if store is not None and n_shards is not None:
        server.follow(settings.get("typeahead_reload_poll"))
    app = create_app(root, subsystems=[lambda m: install_shard(m, server)])
    config = uvicorn.Config(app, log_level=log_level, access_log=False, **uvicorn_options())
    uv = uvicorn.Server(config)
    if parent_pid is not None:

        def watch() -> None:
            while not uv.should_exit:
                if os.getppid() != parent_pid:
                    uv.should_exit = True
                    return
                time.sleep(0.5)

        threading.Thread(target=watch, name="parent-watch", daemon=True).start()
    if fd is not None:
        sock = socket.socket(fileno=fd)
    else:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(1024)
        bound = sock.getsockname()
        print(f"typeahead shard {shard} on http://{bound[0]}:{bound[1]}{SHARD_PATH}", flush=True)
    uv.run(sockets=[sock])


__all__ = [
    "MAX_EXACT",
    "MAX_FETCH",
    "SHARD_HEADER",
    "SHARD_PATH",
    "VERSION_HEADER",
    "ShardEndpoint",
    "ShardServer",
    "ShardSlice",
    "install_shard",
    "run_shard_server",
    "top_n",
]
