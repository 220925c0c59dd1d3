"""Why sortable ids matter, measured: one B-tree primary key per id kind in SQLite.

Each kind's keys go into a clustered B-tree (``WITHOUT ROWID``: the table *is* the
primary-key index, as in InnoDB), in the order they were made, in batched
transactions. Time-sortable keys always land on the right-most leaf, which fills and
splits cleanly; random keys (UUIDv4) land anywhere, split half-full pages all over the
tree and leave it larger and emptier. The "newest 100" query is a primary-key walk from
the end for a sortable kind, and a scan plus sort of a ``created`` column for UUIDv4
(which has nothing better). Leaf density and page counts come from SQLite's ``dbstat``.

This is a store module: the one place in ``lookup/blocks`` that opens a database.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from lookup.blocks.ids.kinds import ID_KINDS, make_kind
from lookup.kit.engines.sqlite import connect

__all__ = ["ANCHOR", "LocalityRow", "make_keys", "ratios", "sqlite_locality"]

#: What every figure is divided by: the database's own auto-increment order.
ANCHOR = "sequential int"


@dataclass(frozen=True)
class LocalityRow:
    """One id kind's B-tree after ``rows`` inserts."""

    kind: str
    rows: int
    insert_s: float
    pages: int
    leaf_pages: int
    leaf_density: float
    bytes: int
    newest_ms: float
    newest_correct: bool

    def as_dict(self) -> dict[str, Any]:
        """The row as plain values (for tables and JSON)."""
        return asdict(self)


def make_keys(kind: str, n: int, workdir: str | Path) -> list[int | bytes]:
    """``n`` keys of ``kind`` in the order they were made."""
    make = make_kind(kind, workdir=workdir)
    return [make() for _ in range(n)]


def _insert(conn: Any, keys: Sequence[int | bytes], batch: int, payload: bytes) -> float:
    started = time.perf_counter()
    for lo in range(0, len(keys), batch):
        conn.execute("BEGIN")
        conn.executemany(
            "INSERT INTO t(id, created, payload) VALUES (?, ?, ?)",
            ((k, lo + i, payload) for i, k in enumerate(keys[lo : lo + batch])),
        )
        conn.execute("COMMIT")
    return time.perf_counter() - started


def _newest(conn: Any, sortable: bool) -> list[Any]:
    sql = (
        "SELECT id FROM t ORDER BY id DESC LIMIT 100"
        if sortable
        else "SELECT id FROM t ORDER BY created DESC LIMIT 100"
    )
    return [r[0] for r in conn.execute(sql)]


def sqlite_locality(
    kinds: Sequence[str],
    rows: int,
    workdir: str | Path,
    *,
    batch: int = 1_000,
    payload_bytes: int = 32,
    scans: int = 9,
    keys_for: Callable[[str, int, Path], Sequence[int | bytes]] | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[LocalityRow]:
    """Insert ``rows`` keys of each kind into its own SQLite B-tree; measure each tree."""
    work = Path(workdir)
    work.mkdir(parents=True, exist_ok=True)
    payload = os.urandom(payload_bytes)
    out = []
    for kind in kinds:
        if progress:
            progress(f"{kind}: making {rows:,} keys")
        keys = (keys_for or make_keys)(kind, rows, work)
        path = work / f"locality-{kind.replace(' ', '-')}.db"
        path.unlink(missing_ok=True)
        conn = connect(path, synchronous="OFF")
        try:
            key_type = "INTEGER" if isinstance(keys[0], int) else "BLOB"
            conn.execute(
                f"CREATE TABLE t(id {key_type} PRIMARY KEY, created INTEGER NOT NULL,"
                " payload BLOB) WITHOUT ROWID"
            )
            if progress:
                progress(f"{kind}: inserting")
            insert_s = _insert(conn, keys, batch, payload)
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            pages, leaves, used = conn.execute(
                "SELECT count(*), sum(pagetype = 'leaf'),"
                " sum(CASE WHEN pagetype = 'leaf' THEN pgsize - unused END) * 1.0"
                "   / sum(CASE WHEN pagetype = 'leaf' THEN pgsize END)"
                " FROM dbstat WHERE name = 't'"
            ).fetchone()
            sortable = ID_KINDS[kind].sortable
            truth = list(reversed(keys[-100:]))
            timings = []
            found: list[Any] = []
            for _ in range(scans):
                started = time.perf_counter()
                found = _newest(conn, sortable)
                timings.append((time.perf_counter() - started) * 1000)
        finally:
            conn.close()
        out.append(
            LocalityRow(
                kind,
                rows,
                insert_s,
                int(pages),
                int(leaves),
                float(used),
                path.stat().st_size,
                statistics.median(timings),
                found == truth,
            )
        )
        path.unlink(missing_ok=True)
    return out


def ratios(rows: Sequence[LocalityRow], anchor: str = ANCHOR) -> list[dict[str, Any]]:
    """Each kind's figures divided by the anchor's (sequential int), measured in one run."""
    base = next(r for r in rows if r.kind == anchor)
    return [
        {
            "kind": r.kind,
            "insert time ×": r.insert_s / base.insert_s,
            "pages ×": r.pages / base.pages,
            "leaf density": r.leaf_density,
            "newest 100 ×": r.newest_ms / base.newest_ms if base.newest_ms else float("nan"),
            "newest 100 right": r.newest_correct,
        }
        for r in rows
    ]
