"""The reviews tables of the places database: the review store of seed 000, in SQL.

A review and its place's new totals are written in one transaction, the place's own write
transaction (:meth:`SqlReviews.put_review` runs inside ``SqlPlaceStore._edit_locked``):
the ``reviews`` row, the ``review_totals`` aggregate, the place row's ``review_count`` and
``review_stars``, and the ``changes`` entry that carries them to every serving index. So a
worker tailing the stream sees a review's effect on the rating within its next poll, and a
crash never leaves a review without its aggregate or the other way round.

The statements are written once for both engines of :mod:`lookup.geo.places` (SQLite and
PostgreSQL spell ``ON CONFLICT`` alike). In a SQLite file the tables are created when a
store opens an older database (``CREATE TABLE IF NOT EXISTS``): that is the whole
migration, since no existing table changes; PostgreSQL's are made with the rest of its
schema (:mod:`lookup.geo.places.postgres`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from lookup.geo.reviews import ReviewPage, ReviewPolicy, Totals, is_new_account
from lookup.kit.engines.dialects import Connection

REVIEW_SCHEMA = """
CREATE TABLE IF NOT EXISTS reviews (
    place_id    TEXT NOT NULL,
    user_id     TEXT NOT NULL,
    rating      INTEGER NOT NULL CHECK (rating BETWEEN 1 AND 5),
    text        TEXT NOT NULL DEFAULT '',
    new_account INTEGER NOT NULL,          -- 1: written while the account was new
    created_at  REAL NOT NULL,             -- the user's first review of this place
    updated_at  REAL NOT NULL,             -- the latest version (a replacement moves it)
    PRIMARY KEY (place_id, user_id)
);
CREATE INDEX IF NOT EXISTS reviews_newest ON reviews(place_id, updated_at, user_id);
CREATE TABLE IF NOT EXISTS review_users (
    user_id  TEXT PRIMARY KEY,
    first_at REAL NOT NULL                 -- the account's first review anywhere
);
CREATE TABLE IF NOT EXISTS review_totals (
    place_id   TEXT PRIMARY KEY,
    base_count INTEGER NOT NULL,           -- the place's totals before its first API review
    base_stars INTEGER NOT NULL,
    est_count  INTEGER NOT NULL,           -- reviews of established accounts
    est_stars  INTEGER NOT NULL,
    new_count  INTEGER NOT NULL,           -- new-account reviews
    new_stars  INTEGER NOT NULL
);
"""

_TOTALS = "base_count, base_stars, est_count, est_stars, new_count, new_stars"
_REVIEW = "user_id, rating, text, new_account, created_at, updated_at"


def create_review_schema(conn: sqlite3.Connection) -> None:
    """Create the reviews tables if they do not exist (new and older databases alike)."""
    conn.executescript(REVIEW_SCHEMA)


def _review(row: Any) -> dict[str, Any]:
    return {
        "userId": row[0],
        "rating": int(row[1]),
        "text": row[2],
        "newAccount": bool(row[3]),
        "createdAt": float(row[4]),
        "updatedAt": float(row[5]),
    }


class SqlReviews:
    """The reviews half of a SQL place store (mixed in): it writes through the store's
    write transaction (``_tx``) and reads through its connections, each statement spelled
    for the store's engine by ``_q``."""

    _clock: Callable[[], float]
    _q: Callable[[str], str]
    _tx: Callable[[], Connection]
    _writing: Callable[[], AbstractContextManager[None]]
    _reading: Callable[[], AbstractContextManager[Connection]]
    _edit_locked: Callable[[str, Callable[[dict[str, Any]], dict[str, Any]]], dict[str, Any]]

    def put_review(
        self, place_id: str, user_id: str, rating: int, text: str, policy: ReviewPolicy
    ) -> tuple[dict[str, Any], bool, dict[str, Any]]:
        """Store (or replace) ``user_id``'s review of the place and update its totals, the
        place row and the change stream in one transaction; ``(review, replaced, row)``.
        A missing place raises the store's ``NOT_FOUND`` before anything is written."""
        q = self._q
        now = self._clock()
        done: dict[str, Any] = {}

        def change(before: dict[str, Any]) -> dict[str, Any]:
            conn = self._tx()
            found = conn.execute(
                q(f"SELECT {_TOTALS} FROM review_totals WHERE place_id = ?"), (place_id,)
            ).fetchone()
            if found is not None:
                totals = Totals(*(int(v) for v in found))
            else:  # the first API review: the imported totals become the base
                totals = Totals(
                    base_count=int(before.get("review_count") or 0),
                    base_stars=int(before.get("review_stars") or 0),
                )
            conn.execute(
                q(
                    "INSERT INTO review_users(user_id, first_at) VALUES (?, ?) "
                    "ON CONFLICT (user_id) DO NOTHING"
                ),
                (user_id, now),
            )
            first_at = conn.execute(
                q("SELECT first_at FROM review_users WHERE user_id = ?"), (user_id,)
            ).fetchone()[0]
            new = is_new_account(float(first_at), now, policy)
            old = conn.execute(
                q(
                    "SELECT rating, new_account, created_at FROM reviews "
                    "WHERE place_id = ? AND user_id = ?"
                ),
                (place_id, user_id),
            ).fetchone()
            if old is not None:  # one review per user per place: the new one replaces it
                totals = totals.add(int(old[0]), bool(old[1]), sign=-1)
            totals = totals.add(rating, new)
            created = float(old[2]) if old is not None else now
            conn.execute(
                q(
                    f"INSERT INTO reviews(place_id, {_REVIEW}) VALUES (?, ?, ?, ?, ?, ?, ?) "
                    f"ON CONFLICT (place_id, user_id) DO UPDATE SET {_excluded(_REVIEW)}"
                ),
                (place_id, user_id, rating, text, int(new), created, now),
            )
            conn.execute(
                q(
                    f"INSERT INTO review_totals(place_id, {_TOTALS}) VALUES (?, ?, ?, ?, ?, ?, ?) "
                    f"ON CONFLICT (place_id) DO UPDATE SET {_excluded(_TOTALS)}"
                ),
                (place_id, *_values(totals)),
            )
            done["review"] = _review((user_id, rating, text, new, created, now))
            done["replaced"] = old is not None
            return totals.place_fields(policy)

        with self._writing():
            row = self._edit_locked(place_id, change)
        return done["review"], done["replaced"], row

    def review_page(
        self, place_id: str, limit: int, after: tuple[float, str] | None = None
    ) -> ReviewPage:
        """Reviews of the place, newest first (ties by user id), after the key ``after``."""
        where = "place_id = ?"
        args: list[Any] = [place_id]
        if after is not None:
            where += " AND (updated_at < ? OR (updated_at = ? AND user_id < ?))"
            args += [after[0], after[0], after[1]]
        with self._reading() as conn:
            rows = conn.execute(
                self._q(
                    f"SELECT {_REVIEW} FROM reviews WHERE {where} "
                    "ORDER BY updated_at DESC, user_id DESC LIMIT ?"
                ),
                (*args, limit + 1),
            ).fetchall()
        page = [_review(r) for r in rows[:limit]]
        more = len(rows) > limit and page
        return ReviewPage(page, (page[-1]["updatedAt"], page[-1]["userId"]) if more else None)

    def review_totals(self, place_id: str) -> Totals | None:
        """The stored aggregate of the place (None before its first review)."""
        with self._reading() as conn:
            found = conn.execute(
                self._q(f"SELECT {_TOTALS} FROM review_totals WHERE place_id = ?"), (place_id,)
            ).fetchone()
        return Totals(*(int(v) for v in found)) if found is not None else None

    def _forget_reviews(self, place_id: str) -> None:
        """Drop a deleted place's reviews and totals (inside the delete's transaction)."""
        conn = self._tx()
        conn.execute(self._q("DELETE FROM reviews WHERE place_id = ?"), (place_id,))
        conn.execute(self._q("DELETE FROM review_totals WHERE place_id = ?"), (place_id,))


#: The old name of :class:`SqlReviews` (it served SQLite alone), kept for one release.
SqliteReviews = SqlReviews


def _excluded(columns: str) -> str:
    """``col = excluded.col, …`` for a comma-separated column list (an upsert's SET)."""
    return ", ".join(f"{c} = excluded.{c}" for c in (x.strip() for x in columns.split(",")))


def _values(totals: Totals) -> tuple[int, ...]:
    return (
        totals.base_count,
        totals.base_stars,
        totals.est_count,
        totals.est_stars,
        totals.new_count,
        totals.new_stars,
    )
