"""A streaming read replica of a throw-away PostgreSQL, and how far behind any replica is.

:class:`PostgresStandby` copies a running :class:`~lookup.kit.engines.pgserver.PostgresServer`
with ``pg_basebackup -R -X stream`` (the copy carries ``standby.signal`` and the
``primary_conninfo`` to stream from), then starts it like any throw-away cluster: its own
free loopback port, as the ``postgres`` user when this process is root, a lost port race
started again on a fresh port. The copy takes a physical replication slot on the primary,
so the primary keeps the WAL the standby has not received yet (a standby that fell behind
catches up instead of failing); :meth:`PostgresStandby.close` drops the slot again. The
standby serves reads (``hot_standby``) and refuses every write.

Its :func:`replication_lag` reads how far a replica is behind its primary: **bytes** of WAL
the primary has written that the replica has not replayed (``pg_current_wal_insert_lsn()``
on the primary against ``pg_last_wal_replay_lsn()`` on the replica), and **seconds** since
the last transaction it replayed was committed (``now() - pg_last_xact_replay_timestamp()``).

That second figure alone misleads on an idle primary: nothing new to replay means no new
replayed transaction, so its age grows for ever on a replica that is perfectly current.
Hence a replica that has replayed everything the primary had written when asked is *caught
up* and lags 0 bytes and 0 seconds whatever its last transaction's age; only a replica
still behind reports that age (then an upper bound: the oldest unreplayed change is at
most that old). The primary is read first, so a write racing the check can only make the
replica look more current than the primary's answer, never invent lag.

Two details make "caught up" exact. The primary's side is its WAL *insert* position, not
the written one: with asynchronous commit (the throw-away clusters' default) a committed
transaction can sit in WAL buffers for a moment, and a replica "caught up" to the written
position would still miss it. And when the last record ends exactly at a WAL page's end,
the insert position points past the next page's header, which no record will ever end
at: :func:`wal_end` moves it back to the page boundary (:func:`replication_lag` reads the
page and segment sizes from the primary).
"""

from __future__ import annotations

import re
import shutil
import time
import uuid
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg

from lookup.errors import Unavailable
from lookup.kit.engines.pgserver import PostgresServer
from lookup.kit.engines.postgres import connect, unavailable

__all__ = [
    "PostgresStandby",
    "ReplicationLag",
    "format_lsn",
    "lag_between",
    "parse_lsn",
    "replication_lag",
    "wait_caught_up",
    "wal_end",
]

_LSN = re.compile(r"([0-9A-Fa-f]{1,8})/([0-9A-Fa-f]{1,8})")
#: The line ``initdb`` writes that lets loopback clients stream WAL (``trust`` here).
_REPLICATION_HBA = "host    replication     all             127.0.0.1/32            trust\n"


def parse_lsn(text: str) -> int:
    """A WAL position as PostgreSQL prints it (``16/B374D848``) as a byte offset."""
    match = _LSN.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"not a WAL position (LSN): {text!r}")
    return (int(match.group(1), 16) << 32) | int(match.group(2), 16)


def format_lsn(position: int) -> str:
    """A byte offset in the WAL as PostgreSQL prints it (the inverse of :func:`parse_lsn`)."""
    return f"{position >> 32:X}/{position & 0xFFFFFFFF:X}"


#: WAL page header sizes (``SizeOfXLogShortPHD``, and ``SizeOfXLogLongPHD`` on a segment's
#: first page), on the 64-bit builds PostgreSQL ships for.
SHORT_PAGE_HEADER = 24
LONG_PAGE_HEADER = 40


def wal_end(insert: int, page: int = 8192, segment: int = 16 * 1024 * 1024) -> int:
    """Where the WAL written so far ends, from the insert position ``insert``: the same,
    except right after a page header (nothing inserted on that page yet), where it ends
    at the page boundary — the position a replica that replayed it all reports."""
    offset = insert % page
    start = insert - offset
    header = LONG_PAGE_HEADER if start % segment == 0 else SHORT_PAGE_HEADER
    return start if offset == header else insert


@dataclass(frozen=True)
class ReplicationLag:
    """How far a replica is behind: ``bytes`` and ``seconds`` are 0 when ``caught_up``;
    ``seconds`` is ``None`` while it has replayed no transaction since it started."""

    bytes: int
    seconds: float | None
    caught_up: bool
    standby: bool = True
    replay_lsn: str | None = None
    primary_lsn: str | None = None
    replayed_at: datetime | None = None

    def as_json(self) -> dict[str, Any]:
        """The JSON-ready form ``/healthz`` and the dashboard show."""
        return {
            "lagBytes": self.bytes,
            "lagSeconds": None if self.seconds is None else round(self.seconds, 3),
            "caughtUp": self.caught_up,
            "standby": self.standby,
            "replayLsn": self.replay_lsn,
            "primaryLsn": self.primary_lsn,
            "replayedAt": None if self.replayed_at is None else self.replayed_at.isoformat(),
        }


def lag_between(
    primary: int, replayed: int, now: datetime, replayed_at: datetime | None
) -> ReplicationLag:
    """The lag of a replica that has replayed up to ``replayed`` while its primary has
    written up to ``primary`` (byte offsets); ``replayed_at`` is the commit time of the
    last transaction it replayed, ``now`` the replica's clock."""
    if replayed >= primary:
        seconds: float | None = 0.0
    elif replayed_at is None:
        seconds = None
    else:
        seconds = max(0.0, (now - replayed_at).total_seconds())
    return ReplicationLag(
        bytes=max(0, primary - replayed),
        seconds=seconds,
        caught_up=replayed >= primary,
        replay_lsn=format_lsn(replayed),
        primary_lsn=format_lsn(primary),
        replayed_at=replayed_at,
    )


def replication_lag(standby_url: str, primary_url: str | None = None) -> ReplicationLag:
    """How far the replica at ``standby_url`` is behind the primary at ``primary_url``.

    Without ``primary_url`` the replica's own view stands in for the primary: what it has
    received but not replayed yet (WAL the primary wrote and never sent does not show).
    A server that is not in recovery (a primary named as the replica) lags nothing.
    Unreachable servers raise :class:`~lookup.errors.Unavailable`.
    """
    primary_lsn: int | None = None
    if primary_url is not None:
        try:
            with connect(primary_url, autocommit=True) as conn:
                row = conn.execute(
                    "SELECT CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() "
                    "ELSE pg_current_wal_insert_lsn() END::text, "
                    "current_setting('wal_block_size')::int, "
                    "(SELECT setting::bigint FROM pg_settings WHERE name = 'wal_segment_size')"
                ).fetchone()
        except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
            raise unavailable("the primary", primary_url, exc) from exc
        if row and row[0]:
            primary_lsn = wal_end(parse_lsn(row[0]), int(row[1]), int(row[2]))
    try:
        with connect(standby_url, autocommit=True) as conn:
            row = conn.execute(
                "SELECT pg_is_in_recovery(), pg_last_wal_receive_lsn()::text, "
                "pg_last_wal_replay_lsn()::text, pg_last_xact_replay_timestamp(), now()"
            ).fetchone()
    except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
        raise unavailable("the read replica", standby_url, exc) from exc
    assert row is not None  # a SELECT without FROM answers one row
    in_recovery, received, replayed, replayed_at, now = row
    if not in_recovery:
        return ReplicationLag(bytes=0, seconds=0.0, caught_up=True, standby=False)
    replay = parse_lsn(replayed) if replayed else 0
    target = primary_lsn if primary_lsn is not None else (parse_lsn(received) if received else 0)
    return lag_between(target, replay, now, replayed_at)


def wait_caught_up(
    standby_url: str, primary_url: str, timeout_s: float = 30.0, poll_s: float = 0.05
) -> ReplicationLag:
    """Wait until the replica has replayed everything the primary had written when this
    was called (read-your-writes); its lag then. :class:`~lookup.errors.Unavailable`
    after ``timeout_s``."""
    end = time.monotonic() + timeout_s
    while True:
        lag = replication_lag(standby_url, primary_url)
        if lag.caught_up:
            return lag
        if time.monotonic() > end:
            raise Unavailable(
                f"the read replica did not catch up within {timeout_s:g} s "
                f"({lag.bytes} bytes behind)"
            )
        time.sleep(poll_s)


class PostgresStandby(PostgresServer):
    """A hot standby of ``primary`` streaming its WAL; ``url`` reads from it.

    ``root``: where its copy lives (a new temporary directory when ``None``). The primary
    must be running when the standby first starts; later starts reuse the copy.
    """

    def __init__(
        self, primary: PostgresServer, root: str | Path | None = None, *, port: int = 0,
        durable: bool = False,
    ) -> None:  # fmt: skip
        super().__init__(root, durable=durable, port=port, bindir=primary.bindir)
        self.primary = primary
        self.slot = f"lookup_standby_{uuid.uuid4().hex[:12]}"

    def start(self, timeout: float = 60.0) -> PostgresStandby:
        """Copy the primary the first time (``pg_basebackup -R``), then start the standby."""
        if not (self.data / "PG_VERSION").is_file():
            self._copy_primary(timeout)
        super().start(timeout)
        return self

    def _copy_primary(self, timeout: float) -> None:
        """``pg_basebackup`` the running primary into this standby's data directory."""
        if not self.primary.port or not self.primary.running():
            raise Unavailable("the primary must be running to copy it into a standby")
        self._allow_replication()
        self.root.mkdir(parents=True, exist_ok=True)
        self.root.chmod(0o755)
        if self.as_postgres:
            shutil.chown(self.root, "postgres")
        args = [
            str(self.bindir / "pg_basebackup"),
            "-D", str(self.data),
            "-R",  # standby.signal + primary_conninfo: start as a streaming standby
            "-X", "stream",
            "-C", "-S", self.slot,  # a slot: the primary keeps WAL until we received it
            "-c", "fast",
            "-h", "127.0.0.1",
            "-p", str(self.primary.port),
            "-U", "postgres",
        ]  # fmt: skip
        if not self.durable:
            args.append("--no-sync")
        done = self._run(*args, timeout=timeout)
        if done.returncode != 0:
            raise Unavailable(
                f"pg_basebackup failed: {done.stderr.decode(errors='replace')[-400:]}"
            )

    def _allow_replication(self) -> None:
        """Make sure the primary lets loopback clients stream WAL (``initdb`` writes that
        line; a primary whose ``pg_hba.conf`` lost it gets it back and reloads)."""
        hba = self.primary.data / "pg_hba.conf"
        lines = hba.read_text(encoding="utf-8").splitlines()
        allowed = any(
            line.split()[:2] == ["host", "replication"] and "127.0.0.1/32" in line.split()
            for line in lines
            if line.strip() and not line.lstrip().startswith("#")
        )
        if not allowed:
            with hba.open("a", encoding="utf-8") as f:
                f.write(_REPLICATION_HBA)
            self._run(str(self.bindir / "pg_ctl"), "-D", str(self.primary.data), "reload")

    def lag(self) -> ReplicationLag:
        """How far this standby is behind its primary now."""
        return replication_lag(self.url, self.primary.url)

    def close(self) -> None:
        """Stop the standby, drop its slot on the primary (when reachable), remove its copy."""
        super().close()
        try:
            with connect(self.primary.url, autocommit=True) as conn:
                # the primary's WAL sender may not have seen the standby go yet: end it
                end = time.monotonic() + 10.0
                while time.monotonic() < end:
                    conn.execute(
                        "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots "
                        "WHERE slot_name = %s AND active",
                        (self.slot,),
                    )
                    left = conn.execute(
                        "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                        "WHERE slot_name = %s AND NOT active",
                        (self.slot,),
                    ).fetchall()
                    gone = conn.execute(
                        "SELECT 1 FROM pg_replication_slots WHERE slot_name = %s", (self.slot,)
                    ).fetchone()
                    if left or gone is None:
                        break
                    time.sleep(0.05)
        except psycopg.Error:
            pass  # the primary is gone too: its slots went with it

    def __enter__(self) -> PostgresStandby:
        return self.start()
