"""The crawl controls log in PostgreSQL: the same database as the fleet's crawl store.

Same contract as :class:`lookup.crawler.controls.sqlite.SqliteCrawlControls`: a ``BIGSERIAL``
version gives the commands their order (a poller asks ``version > v``; a command whose
transaction commits late could be passed over, so each append takes a transaction-scoped
advisory lock — versions become visible in order), and every worker upserts the version
it has applied.
"""

from __future__ import annotations

import time

from lookup.crawler.controls import Ack, ControlCommand, ControlRecord, validate
from lookup.kit.engines.postgres import PgPool, describe_url, ensure_schema
from lookup.kit.engines.storeurl import StoreUrl

__all__ = ["PostgresCrawlControls"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS crawl_controls (
    version BIGSERIAL PRIMARY KEY,
    at      DOUBLE PRECISION NOT NULL,
    command TEXT NOT NULL,
    target  TEXT NOT NULL,
    value   DOUBLE PRECISION,
    note    TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS crawl_control_acks (
    worker  TEXT PRIMARY KEY,
    version BIGINT NOT NULL,
    at      DOUBLE PRECISION NOT NULL
);
"""


class PostgresCrawlControls:
    """The controls log in the tables ``crawl_controls`` and ``crawl_control_acks``."""

    def __init__(self, url: str) -> None:
        self.url = url
        ensure_schema(url, "lookup.crawler.controls", _SCHEMA, "the crawl controls")
        self._pool = PgPool(url, what="the crawl controls", max_size=2)

    @classmethod
    def from_url(cls, url: StoreUrl) -> PostgresCrawlControls:
        """The controls in the database ``url`` names."""
        return cls(url.url)

    def describe(self) -> str:
        return describe_url(self.url)

    def issue(self, cmd: ControlCommand) -> ControlRecord:
        cmd = validate(cmd)
        at = time.time()
        with self._pool.transaction() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('crawl_controls', 0))")
            row = conn.execute(
                "INSERT INTO crawl_controls (at, command, target, value, note)"
                " VALUES (%s, %s, %s, %s, %s) RETURNING version",
                (at, cmd.command, cmd.target, cmd.value, cmd.note),
            ).fetchone()
        assert row is not None
        return ControlRecord(int(row[0]), at, cmd.command, cmd.target, cmd.value, cmd.note)

    def since(self, version: int) -> list[ControlRecord]:
        with self._pool.connection() as conn:
            rows = conn.execute(
                "SELECT version, at, command, target, value, note FROM crawl_controls"
                " WHERE version > %s ORDER BY version",
                (int(version),),
            ).fetchall()
        return [ControlRecord(int(v), float(a), c, t, val, n) for v, a, c, t, val, n in rows]

    def acknowledge(self, worker: str, version: int) -> None:
        with self._pool.connection() as conn:
            conn.execute(
                "INSERT INTO crawl_control_acks (worker, version, at) VALUES (%s, %s, %s)"
                " ON CONFLICT (worker) DO UPDATE SET"
                " version = GREATEST(crawl_control_acks.version, excluded.version),"
                " at = excluded.at",
                (worker, int(version), time.time()),
            )

    def acks(self) -> list[Ack]:
        with self._pool.connection() as conn:
            rows = conn.execute(
                "SELECT worker, version, at FROM crawl_control_acks ORDER BY worker"
            ).fetchall()
        return [Ack(w, int(v), float(a)) for w, v, a in rows]

    def close(self) -> None:
        self._pool.close()
