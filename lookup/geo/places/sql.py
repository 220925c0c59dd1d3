"""The places store in SQL, written once for every engine: the statements and the operations
the SQLite and the PostgreSQL backends share.

Both keep the same ``places`` and ``changes`` tables and ask them the same questions; what
differs is said by a :class:`PlaceDialect` (the placeholder, the name of the key-value
table) and by the few methods a backend gives: how a write transaction takes the store's
one write lock (:meth:`SqlPlaceStore._writing`), the connection it runs on
(:meth:`SqlPlaceStore._tx`), a short read (:meth:`SqlPlaceStore._reading`), a long scan
(:meth:`SqlPlaceStore._scanning`) and one consistent read of the whole table
(:meth:`SqlPlaceStore.snapshot`).

Every write holds the store's write lock from its first read to its commit: the next place
number, the row an edit builds on and a review's totals are read under it, so two writers
(threads or processes) never take one number or lose an edit, and the ``changes`` rows
are numbered in commit order — a tailer reading ``seq > last`` never skips a change that
committed late.

This module imports no driver: a connection is anything with ``execute`` (sqlite3's and
psycopg's both fit), a row anything ``tuple()`` reads in column order.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from lookup.geo import geohash
from lookup.geo.places import COLUMNS, Change, PlaceError, row_dict
from lookup.geo.places.fields import check_review_totals, set_zone, validate
from lookup.geo.reviewstore import SqlReviews
from lookup.geo.zones import UNSET_ZONES, zone_at
from lookup.kit.engines.dialects import Connection, SqlDialect

__all__ = ["PlaceDialect", "SqlPlaceStore", "changes_of", "insert_statement"]


@dataclass(frozen=True)
class PlaceDialect(SqlDialect):
    """How one engine spells the places statements: its placeholder (``name``) and the
    names of the key-value and change-stream tables (``meta`` and ``changes`` in a SQLite
    file of its own, ``places_meta`` and ``place_changes`` in a database other systems
    share)."""

    meta: str = "meta"
    changes: str = "changes"


def insert_statement(table: str = "places") -> str:
    """``INSERT`` of a whole place row in :data:`COLUMNS` order, ``?`` placeholders."""
    return f"INSERT INTO {table}({', '.join(COLUMNS)}) VALUES ({', '.join('?' for _ in COLUMNS)})"


def changes_of(rows: list[Any]) -> list[Change]:
    """``changes`` rows (seq, place_id, op, before, after, at) as :class:`Change` records."""
    return [
        Change(
            seq=int(r[0]),
            place_id=r[1],
            op=r[2],
            before=json.loads(r[3]) if r[3] else None,
            after=json.loads(r[4]) if r[4] else None,
            at=float(r[5]),
        )
        for r in rows
    ]


class SqlPlaceStore(SqlReviews, ABC):
    """Every read and write of :class:`~lookup.geo.places.PlaceStore` over SQL; a backend
    gives its connections, its write lock and its consistent snapshot."""

    dialect: PlaceDialect
    _clock: Callable[[], float]

    def _q(self, statement: str) -> str:
        """``statement`` (``?`` placeholders, ``{meta}`` and ``{changes}`` for the tables) for this
        engine."""
        named = statement.replace("{meta}", self.dialect.meta)
        return self.dialect.bind(named.replace("{changes}", self.dialect.changes))

    @abstractmethod
    def _tx(self) -> Connection:
        """The connection of the write transaction this thread is inside."""

    @abstractmethod
    def _writing(self) -> AbstractContextManager[None]:
        """One write transaction holding the store's write lock: committed when the block
        ends, rolled back if it raises."""

    @abstractmethod
    def _reading(self) -> AbstractContextManager[Connection]:
        """A connection for a short read."""

    @abstractmethod
    def _scanning(self) -> AbstractContextManager[Connection]:
        """A connection for a long read (a whole-table scan) that holds up no short one."""

    @abstractmethod
    def snapshot(self) -> tuple[int, list[tuple[Any, ...]]]:
        """Every row plus the change sequence it is consistent with (one read transaction)."""

    # ------------------------------------------------------------------ reads

    def get(self, place_id: str) -> dict[str, Any] | None:
        """The place row with ``place_id``, or ``None``."""
        with self._reading() as conn:
            row = conn.execute(
                self._q(f"SELECT {', '.join(COLUMNS)} FROM places WHERE id = ?"), (place_id,)
            ).fetchone()
        return row_dict(row) if row else None

    def count(self) -> int:
        """How many places the database holds."""
        with self._reading() as conn:
            return int(conn.execute("SELECT COUNT(*) FROM places").fetchone()[0])

    def profiles(self, nums: list[int], columns: tuple[str, ...]) -> list[dict[str, Any]]:
        """Rows (as dicts of ``columns``) for the given place numbers — hydrating a page."""
        bad = set(columns) - set(COLUMNS)
        if bad:
            raise ValueError(f"unknown columns {sorted(bad)}")
        out: list[dict[str, Any]] = []
        with self._reading() as conn:
            for start in range(0, len(nums), 500):
                chunk = [int(n) for n in nums[start : start + 500]]
                rows = conn.execute(
                    self._q(
                        f"SELECT {', '.join(columns)} FROM places "
                        f"WHERE num IN ({', '.join('?' for _ in chunk)})"
                    ),
                    chunk,
                ).fetchall()
                out.extend(dict(zip(columns, tuple(r), strict=True)) for r in rows)
        return out

    def last_seq(self) -> int:
        """The sequence number of the newest change (0 when there is none)."""
        with self._reading() as conn:
            row = conn.execute(self._q("SELECT MAX(seq) FROM {changes}")).fetchone()
        return int(row[0] or 0)

    def changes_since(self, seq: int, limit: int = 10_000) -> list[Change]:
        """Changes with a sequence number above ``seq``, oldest first."""
        with self._reading() as conn:
            rows = conn.execute(
                self._q(
                    "SELECT seq, place_id, op, before, after, at FROM {changes} WHERE seq > ? "
                    "ORDER BY seq LIMIT ?"
                ),
                (int(seq), int(limit)),
            ).fetchall()
        return changes_of(rows)

    def iter_rows(self) -> Iterator[dict[str, Any]]:
        """Every place row as a dict (for tests and exports)."""
        _, rows = self.snapshot()
        for row in rows:
            yield row_dict(row)

    def rows_of_kinds(
        self, kinds: tuple[str, ...], columns: tuple[str, ...]
    ) -> list[dict[str, Any]]:
        """The rows (as dicts of ``columns``) whose ``kind`` is one of ``kinds``."""
        bad = set(columns) - set(COLUMNS)
        if bad or not kinds:
            raise ValueError(f"unknown columns {sorted(bad)}" if bad else "no kinds given")
        with self._scanning() as conn:
            rows = conn.execute(
                self._q(
                    f"SELECT {', '.join(columns)} FROM places "
                    f"WHERE kind IN ({', '.join('?' for _ in kinds)}) ORDER BY num"
                ),
                list(kinds),
            ).fetchall()
        return [dict(zip(columns, tuple(r), strict=True)) for r in rows]

    def meta(self) -> dict[str, str]:
        """The database's key-value facts (the build's seed and counts, ``next_num``, …)."""
        with self._reading() as conn:
            rows = conn.execute(self._q("SELECT key, value FROM {meta}")).fetchall()
        return {str(r[0]): str(r[1]) for r in rows}

    def loaded(self) -> bool:
        """True when the data set's load finished (``meta.complete``)."""
        with self._reading() as conn:
            row = conn.execute(
                self._q("SELECT value FROM {meta} WHERE key = 'complete'")
            ).fetchone()
        return bool(row and row[0] == "1")

    # ----------------------------------------------------------------- writes

    def add(self, fields: dict[str, Any], *, place_id: str | None = None) -> dict[str, Any]:
        """Create a business; returns the stored row. ``PlaceError`` for bad fields, a taken id."""
        clean = validate(fields, partial=False)
        with self._writing():
            conn = self._tx()
            num = self._next_num()
            pid = place_id or f"biz:u{num}"
            if conn.execute(self._q("SELECT 1 FROM places WHERE id = ?"), (pid,)).fetchone():
                raise PlaceError("ALREADY_EXISTS", f"a place with id {pid!r} already exists")
            row: dict[str, Any] = {
                "id": pid,
                "num": num,
                "kind": "business",
                "population": None,
                "generated": 0,
                "near_city": None,
                "country": None,
                "tags": "[]",
                "hours": None,
                "price": None,
                "review_count": 0,
                "review_stars": 0,
            }
            row.update(clean)
            if "timezone" not in clean:  # the zone of its point: openNow reads local hours
                row["timezone"] = zone_at(row["lat"], row["lng"])
            row["geohash"] = geohash.encode(row["lat"], row["lng"])
            row["updated_at"] = self._clock()
            # A plain INSERT: a clash on its number fails loudly instead of replacing the
            # place that holds it.
            conn.execute(self._q(insert_statement()), tuple(row[c] for c in COLUMNS))
            self._append(pid, "upsert", None, row)
        return row

    def edit(self, place_id: str, fields: dict[str, Any]) -> dict[str, Any]:
        """Change some fields of a place (a new lat/lng is a move); returns the new row."""
        clean = validate(fields, partial=True)

        def change(before: dict[str, Any]) -> dict[str, Any]:
            moved = ("lat" in clean or "lng" in clean) and "timezone" not in clean
            if not moved:
                return clean
            lat, lng = clean.get("lat", before["lat"]), clean.get("lng", before["lng"])
            return {**clean, "timezone": zone_at(lat, lng)}  # a moved place keeps local time

        with self._writing():
            return self._edit_locked(place_id, change)

    def assign_zones(self) -> int:
        """Give every place stored without a zone (or with the old default, UTC) the zone of
        its point, each as an edit on the change stream; returns how many changed."""
        with self._writing():
            unset = [z for z in UNSET_ZONES if z is not None]
            rows = (
                self._tx()
                .execute(
                    self._q(
                        "SELECT id, lat, lng FROM places WHERE timezone IS NULL OR timezone IN "
                        f"({', '.join('?' * len(unset))})"
                    ),
                    unset,
                )
                .fetchall()
            )
            for pid, lat, lng in rows:
                self._edit_locked(pid, set_zone(zone_at(lat, lng)))
        return len(rows)

    def _edit_locked(
        self, place_id: str, change: Callable[[dict[str, Any]], dict[str, Any]]
    ) -> dict[str, Any]:
        """Apply ``change(row before)``'s fields inside the caller's write transaction."""
        before = self._get_locked(place_id)
        if before is None:
            raise PlaceError("NOT_FOUND", f"no place with id {place_id!r}")
        after = dict(before)
        after.update(change(before))
        check_review_totals(after)
        after["geohash"] = geohash.encode(after["lat"], after["lng"])
        after["updated_at"] = self._clock()
        rest = [c for c in COLUMNS if c != "id"]
        self._tx().execute(
            self._q(f"UPDATE places SET {', '.join(f'{c} = ?' for c in rest)} WHERE id = ?"),
            (*(after[c] for c in rest), place_id),
        )
        self._append(place_id, "upsert", before, after)
        return after

    def move(self, place_id: str, lat: float, lng: float) -> dict[str, Any]:
        """Move a place: for the index, a delete from the old cell and an insert into the new."""
        return self.edit(place_id, {"lat": lat, "lng": lng})

    def add_review(self, place_id: str, stars: int) -> dict[str, Any]:
        """Record one 1–5 star review on the place's totals (the rating aggregator's job)."""
        if isinstance(stars, bool) or not isinstance(stars, int) or not 1 <= stars <= 5:
            raise PlaceError("INVALID_PARAMETER", "stars must be an integer from 1 to 5")
        with self._writing():  # the totals are read under the write lock: no review is lost
            return self._edit_locked(place_id, lambda row: {
                "review_count": row["review_count"] + 1,
                "review_stars": row["review_stars"] + stars,
            })  # fmt: skip

    def delete(self, place_id: str) -> dict[str, Any]:
        """Remove a place; returns the row it had."""
        with self._writing():
            before = self._get_locked(place_id)
            if before is None:
                raise PlaceError("NOT_FOUND", f"no place with id {place_id!r}")
            self._tx().execute(self._q("DELETE FROM places WHERE id = ?"), (place_id,))
            self._forget_reviews(place_id)
            self._append(place_id, "delete", before, None)
        return before

    def _next_num(self) -> int:
        # Numbers are never reused, so a late change for a deleted place cannot hit a new one.
        conn = self._tx()
        row = conn.execute(self._q("SELECT value FROM {meta} WHERE key = 'next_num'")).fetchone()
        top = int(conn.execute("SELECT COALESCE(MAX(num), -1) + 1 FROM places").fetchone()[0])
        num = max(int(row[0]) if row else 0, top)
        self._set_meta(conn, "next_num", str(num + 1))
        return num

    def _set_meta(self, conn: Connection, key: str, value: str) -> None:
        conn.execute(
            self._q(
                "INSERT INTO {meta}(key, value) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
            ),
            (key, value),
        )

    def _get_locked(self, place_id: str) -> dict[str, Any] | None:
        row = (
            self._tx()
            .execute(self._q(f"SELECT {', '.join(COLUMNS)} FROM places WHERE id = ?"), (place_id,))
            .fetchone()
        )
        return row_dict(row) if row else None

    def _append(
        self, place_id: str, op: str, before: dict[str, Any] | None, after: dict[str, Any] | None
    ) -> None:
        self._tx().execute(
            self._q(
                "INSERT INTO {changes}(place_id, op, before, after, at) VALUES (?, ?, ?, ?, ?)"
            ),
            (
                place_id,
                op,
                json.dumps(before) if before else None,
                json.dumps(after) if after else None,
                self._clock(),
            ),
        )
