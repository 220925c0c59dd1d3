"""The coordinator of one request: quorum writes with hinted handoff, quorum reads with repair.

A key's *home* replicas are the first N nodes of its preference list. A write is sent to
every home replica; one the node believes down (missed heartbeats) or that fails is
covered by a *hint* left on the next healthy node past the home ones (or kept here), and
delivered when it answers again. The write is acknowledged after W home replicas stored it
— a strict quorum: hints add durability but never count toward W, so R + W > N keeps its
promise (a read's R home replicas always overlap the write's W). A read asks the home
replicas, answers with the first R replies merged (concurrent versions are siblings), and
afterwards pushes the merged versions to every replica that answered out of date (read
repair).

Per-operation parameters (query string or body): ``n`` (1..cluster size), ``r``/``w``
(1..n), ``mode`` (``vclock`` or ``lww``), ``actor`` and ``counter`` (the writer's
vector-clock entry and its write counter, which it keeps increasing, so no two of its
writes share a clock — client-side clocks, as Riak's; without an actor the entry is this
node's, with a node-wide counter, and a blind write through one node supersedes an
earlier one through it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from starlette.responses import JSONResponse

from lookup.blocks.kv.store import merge_versions, versions_digest
from lookup.blocks.kv.vclock import increment, merge

if TYPE_CHECKING:
    from lookup.blocks.kv.node import Node

__all__ = ["MODES", "PeerUnreachable", "handle_get", "handle_put"]

MODES = ("vclock", "lww")


class PeerUnreachable(Exception):
    """A call to a peer failed: refused, timed out, or dropped by a partition."""


class BadRequest(ValueError):
    """A request parameter out of range; answered 400 with the message."""


def _int(params: Mapping[str, Any], name: str, default: int, low: int, high: int) -> int:
    raw = params.get(name, default)
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise BadRequest(f"{name} must be an integer, got {raw!r}") from None
    if isinstance(raw, bool) or not low <= value <= high:
        raise BadRequest(f"{name} must be in {low}..{high}, got {raw!r}")
    return value


def _quorum_params(node: Node, params: Mapping[str, Any], which: str) -> tuple[int, int, str]:
    n = _int(params, "n", node.n_default, 1, len(node.urls))
    q = _int(params, which, min(2, n) if n > 1 else 1, 1, n)
    mode = str(params.get("mode", "vclock"))
    if mode not in MODES:
        raise BadRequest(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    return n, q, mode


def _bad(message: str) -> JSONResponse:
    return JSONResponse({"error": "bad_request", "message": message}, status_code=400)


def _check_key(key: str) -> None:
    if not key or len(key.encode("utf-8")) > 1024:
        raise BadRequest("a key is 1..1024 bytes")


async def _replica_put(node: Node, replica: str, key: str, versions: list[dict]) -> None:
    if replica == node.name:
        node.store.put(key, versions)
    else:
        await node.call(replica, "POST", "/replica/put", {"key": key, "versions": versions})


async def _replica_get(node: Node, replica: str, key: str) -> list[dict]:
    if replica == node.name:
        return node.store.get(key)
    return (await node.call(replica, "GET", "/replica/get", params={"key": key}))["versions"]


async def _leave_hint(
    node: Node, target: str, key: str, versions: list[dict], fallbacks: list[str]
) -> None:
    """Hand ``target``'s copy to the first healthy fallback (else keep it here)."""
    for holder in fallbacks:
        if holder == node.name or not node.alive(holder):
            continue
        try:
            await node.call(
                holder,
                "POST",
                "/replica/hint",
                {"target": target, "key": key, "versions": versions},
            )
            node.stats["hints handed to a fallback"] += 1
            return
        except PeerUnreachable:
            continue
    node.store.add_hint(target, key, versions)
    node.stats["hints stored"] += 1


async def handle_put(
    node: Node, key: str, body: Any, query: Mapping[str, Any], *, delete: bool = False
) -> JSONResponse:
    """Coordinate a write (``PUT``) or a delete (a tombstone, ``DELETE``)."""
    try:
        _check_key(key)
        if not isinstance(body, dict):
            raise BadRequest("the body must be a JSON object {value, context}")
        params = {**query, **{k: body[k] for k in ("n", "w", "mode", "actor") if k in body}}
        n, w, mode = _quorum_params(node, params, "w")
        value = None if delete else body.get("value")
        if not delete and not isinstance(value, str):
            raise BadRequest("value must be a string")
        context = body.get("context") or {}
        if not isinstance(context, dict) or not all(
            isinstance(k, str) and isinstance(v, int) and v >= 0 for k, v in context.items()
        ):
            raise BadRequest("context must be a vector clock {actor: count}")
        actor = str(params.get("actor") or node.name)
        counter = body.get("counter", 0) if params.get("actor") else node.next_counter()
        if not isinstance(counter, int) or isinstance(counter, bool) or counter < 0:
            raise BadRequest("counter must be a non-negative integer")
    except BadRequest as exc:
        return _bad(str(exc))
    clock = increment(context, actor)
    clock[actor] = max(clock[actor], counter)
    version = {"clock": clock, "value": value, "ts": node.now(), "lww": mode == "lww"}
    preference = node.ring.preference_list(key, len(node.urls))
    home, fallbacks = preference[:n], preference[n:]
    node.stats["writes coordinated"] += 1

    async def send(replica: str) -> bool:
        if node.alive(replica):
            try:
                await _replica_put(node, replica, key, [version])
                return True
            except PeerUnreachable:
                pass
        await _leave_hint(node, replica, key, [version], fallbacks)
        return False

    tasks = [node.spawn(send(r)) for r in home]  # the slower ones finish after the reply
    acks = 0
    for done in asyncio.as_completed(tasks):
        if await done:
            acks += 1
            if acks >= w:
                break
    if acks < w:
        # the rest may still land: an unacknowledged write is indeterminate, not undone
        node.stats["writes refused (no quorum)"] += 1
        return JSONResponse(
            {
                "error": "unavailable",
                "message": f"{acks} of the {w} acknowledgements needed",
                "acks": acks,
            },
            status_code=503,
        )
    return JSONResponse(
        {
            "ok": True,
            "clock": version["clock"],
            "acks": acks,
            "coordinator": node.name,
            "ts": version["ts"],
        }
    )


async def handle_get(node: Node, key: str, query: Mapping[str, Any]) -> JSONResponse:
    """Coordinate a read: R home replicas' versions merged; read repair afterwards."""
    try:
        _check_key(key)
        n, r, mode = _quorum_params(node, query, "r")
    except BadRequest as exc:
        return _bad(str(exc))
    home = node.ring.preference_list(key, n)
    asked = [h for h in home if node.alive(h)]
    node.stats["reads coordinated"] += 1
    if len(asked) < r:
        node.stats["reads refused (no quorum)"] += 1
        return JSONResponse(
            {"error": "unavailable", "message": f"{len(asked)} of the {r} replicas needed are up"},
            status_code=503,
        )

    async def fetch(replica: str) -> tuple[str, list[dict] | None]:
        try:
            return replica, await _replica_get(node, replica, key)
        except PeerUnreachable:
            return replica, None

    tasks = [node.spawn(fetch(h)) for h in asked]
    replies: dict[str, list[dict]] = {}
    pending = set(tasks)
    while pending and len(replies) < r:
        done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        for t in done:
            replica, versions = t.result()
            if versions is not None:
                replies[replica] = versions
    if len(replies) < r:
        node.stats["reads refused (no quorum)"] += 1
        return JSONResponse(
            {"error": "unavailable", "message": f"{len(replies)} of the {r} replies needed"},
            status_code=503,
        )
    merged = merge_versions([], [v for vs in replies.values() for v in vs])
    node.spawn(_read_repair(node, key, dict(replies), pending))
    live = [v for v in merged if v["value"] is not None]
    body = {
        "key": key,
        "siblings": [v["value"] for v in live],
        "context": merge(v["clock"] for v in merged),
        "replies": sorted(replies),
        "coordinator": node.name,
    }
    if mode == "lww" and live:
        body["siblings"] = [max(live, key=lambda v: (v["ts"], v["value"]))["value"]]
    if not live:
        return JSONResponse(
            {**body, "error": "not_found", "message": "no such key"}, status_code=404
        )
    return JSONResponse(body)


async def _read_repair(
    node: Node,
    key: str,
    replies: dict[str, list[dict]],
    pending: set[asyncio.Task[tuple[str, list[dict] | None]]],
) -> None:
    """Wait for the slower replicas, then push the merged versions to every stale one."""
    if pending:
        done, _ = await asyncio.wait(pending, timeout=node.timeout_s)
        for t in done:
            replica, versions = t.result()
            if versions is not None:
                replies[replica] = versions
    merged = merge_versions([], [v for vs in replies.values() for v in vs])
    want = versions_digest(merged)
    for replica, versions in replies.items():
        if versions_digest(merge_versions([], versions)) != want:
            try:
                await _replica_put(node, replica, key, merged)
                node.stats["read repairs"] += 1
            except PeerUnreachable:
                pass
