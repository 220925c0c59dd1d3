"""A storage node's local engine: versions (siblings) per key and hints, in one SQLite file.

Why SQLite rather than a hand-written LSM: the subject here is replication and repair,
not the local engine; SQLite in WAL mode gives atomic read-merge-write of a key's
siblings in one transaction, and what a committed transaction wrote survives a
``kill -9`` of the process (the WAL is in the OS's page cache; ``synchronous=NORMAL``
only risks the last transactions on a power loss, which a loopback drill cannot cause).

A version is ``{"clock": {actor: n}, "value": str | None, "ts": float, "lww": bool}``;
``value`` ``None`` is a tombstone (a delete). A key holds the concurrent versions left
after :func:`.vclock.reconcile` — or, for last-write-wins versions, the one with the
highest timestamp.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol

from lookup.blocks.kv.merkle import bucket_of
from lookup.blocks.kv.vclock import reconcile
from lookup.kit.engines import sqlite
from lookup.kit.engines.storeurl import parse_store_url

__all__ = ["NodeStore", "SqliteNodeStore", "merge_versions", "open_node_store", "versions_digest"]

Version = dict[str, Any]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS versions (
    key TEXT PRIMARY KEY,
    versions TEXT NOT NULL,
    digest TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS hints (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    target TEXT NOT NULL,
    key TEXT NOT NULL,
    versions TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS hints_target ON hints (target, id);
"""


def merge_versions(existing: Iterable[Version], incoming: Iterable[Version]) -> list[Version]:
    """What a replica keeps after seeing ``incoming``: siblings by vector clock, or — as soon
    as any version is last-write-wins — the single one with the highest ``(ts, value)``."""
    allv = list(existing) + list(incoming)
    if not allv:
        return []
    if any(v.get("lww") for v in allv):
        best = max(allv, key=lambda v: (float(v["ts"]), v["value"] or ""))
        return [dict(best)]
    return reconcile(allv)


def versions_digest(versions: list[Version]) -> str:
    """A stable digest of a key's versions (what Merkle leaves hash)."""
    text = json.dumps(versions, sort_keys=True, separators=(",", ":"))
    return hashlib.sha1(text.encode("utf-8"), usedforsecurity=False).hexdigest()


class NodeStore(Protocol):
    """What a storage node keeps: each key's versions, and hints held for other nodes."""

    def get(self, key: str) -> list[Version]: ...
    def put(self, key: str, versions: list[Version]) -> bool: ...
    def digests(self, keep: Callable[[str], bool] | None = None) -> dict[str, str]: ...
    def in_buckets(
        self, buckets: set[int], depth: int, keep: Callable[[str], bool] | None = None
    ) -> dict[str, list[Version]]: ...
    def add_hint(self, target: str, key: str, versions: list[Version]) -> None: ...
    def hints_for(self, target: str, limit: int = 100) -> list[tuple[int, str, list[Version]]]: ...
    def drop_hint(self, hint_id: int) -> None: ...
    def hint_targets(self) -> dict[str, int]: ...
    def count(self) -> int: ...
    def close(self) -> None: ...


class SqliteNodeStore:
    """:class:`NodeStore` in one SQLite file (WAL); every write is one transaction."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite.connect(self.path)
        self._conn.executescript(_SCHEMA)
        self._lock = threading.Lock()

    def get(self, key: str) -> list[Version]:
        row = self._conn.execute("SELECT versions FROM versions WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else []

    def put(self, key: str, versions: list[Version]) -> bool:
        """Merge ``versions`` into the key's; whether anything changed."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                row = self._conn.execute(
                    "SELECT versions, digest FROM versions WHERE key = ?", (key,)
                ).fetchone()
                old = json.loads(row[0]) if row else []
                merged = merge_versions(old, versions)
                digest = versions_digest(merged)
                changed = row is None or digest != row[1]
                if changed:
                    self._conn.execute(
                        "INSERT INTO versions (key, versions, digest) VALUES (?, ?, ?) "
                        "ON CONFLICT (key) DO UPDATE SET versions = excluded.versions, "
                        "digest = excluded.digest",
                        (key, json.dumps(merged, sort_keys=True), digest),
                    )
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
        return changed

    def digests(self, keep: Callable[[str], bool] | None = None) -> dict[str, str]:
        rows = self._conn.execute("SELECT key, digest FROM versions").fetchall()
        return {k: d for k, d in rows if keep is None or keep(k)}

    def in_buckets(
        self, buckets: set[int], depth: int, keep: Callable[[str], bool] | None = None
    ) -> dict[str, list[Version]]:
        out = {}
        for key, text in self._conn.execute("SELECT key, versions FROM versions"):
            if bucket_of(key, depth) in buckets and (keep is None or keep(key)):
                out[key] = json.loads(text)
        return out

    def add_hint(self, target: str, key: str, versions: list[Version]) -> None:
        with self._lock:
            self._conn.execute(
                "INSERT INTO hints (target, key, versions) VALUES (?, ?, ?)",
                (target, key, json.dumps(versions, sort_keys=True)),
            )

    def hints_for(self, target: str, limit: int = 100) -> list[tuple[int, str, list[Version]]]:
        rows = self._conn.execute(
            "SELECT id, key, versions FROM hints WHERE target = ? ORDER BY id LIMIT ?",
            (target, limit),
        ).fetchall()
        return [(i, k, json.loads(v)) for i, k, v in rows]

    def drop_hint(self, hint_id: int) -> None:
        with self._lock:
            self._conn.execute("DELETE FROM hints WHERE id = ?", (hint_id,))

    def hint_targets(self) -> dict[str, int]:
        rows = self._conn.execute("SELECT target, COUNT(*) FROM hints GROUP BY target")
        return {t: n for t, n in rows}

    def count(self) -> int:
        return int(self._conn.execute("SELECT COUNT(*) FROM versions").fetchone()[0])

    def close(self) -> None:
        self._conn.close()


def open_node_store(url: str) -> NodeStore:
    """The node store at ``url`` (``sqlite:///path``; the only backend a node needs)."""
    parsed = parse_store_url(url, accepted=("sqlite",))
    assert parsed.path is not None
    return SqliteNodeStore(parsed.path)
