"""A streaming read replica of the throw-away PostgreSQL (``pg_basebackup -R``): what the
primary commits the standby serves soon after, the standby refuses writes, and its lag
(bytes of WAL not yet replayed, seconds behind) reads 0 when it has caught up with an
idle primary — not the ever-growing age of its last replayed transaction."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lookup.kit.engines.pgserver import PostgresServer
from lookup.kit.engines.pgstandby import (
    PostgresStandby,
    format_lsn,
    lag_between,
    parse_lsn,
    replication_lag,
    wait_caught_up,
    wal_end,
)

DEADLINE_S = 30.0


@pytest.fixture(scope="module")
def pair(postgres_server: Any) -> Iterator[tuple[Any, PostgresStandby]]:
    """The session's cluster as the primary, and one standby of it for this module."""
    with PostgresStandby(postgres_server) as standby:
        yield postgres_server, standby


def _wait_for(check: Any, what: str, deadline_s: float = DEADLINE_S) -> Any:
    """Poll ``check()`` until it answers something truthy; fail after ``deadline_s``."""
    end = time.monotonic() + deadline_s
    while True:
        answer = check()
        if answer:
            return answer
        if time.monotonic() > end:
            pytest.fail(f"{what} not within {deadline_s:g} s")
        time.sleep(0.05)


def test_a_write_on_the_primary_is_read_on_the_standby(pair: Any) -> None:
    primary, standby = pair
    with psycopg.connect(primary.url, autocommit=True) as c:
        c.execute("CREATE TABLE IF NOT EXISTS standby_t (x int)")
        c.execute("INSERT INTO standby_t VALUES (42)")

    def seen() -> bool:
        with psycopg.connect(standby.url, autocommit=True) as c:
            exists = c.execute("SELECT to_regclass('standby_t') IS NOT NULL").fetchone()
            if not exists or not exists[0]:
                return False
            return bool(c.execute("SELECT 1 FROM standby_t WHERE x = 42").fetchone())

    _wait_for(seen, "the primary's row on the standby")


def test_the_standby_refuses_writes(pair: Any) -> None:
    _, standby = pair
    with psycopg.connect(standby.url, autocommit=True) as c:
        assert c.execute("SELECT pg_is_in_recovery()").fetchone() == (True,)
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            c.execute("CREATE TABLE refused (x int)")


def test_a_caught_up_standby_of_an_idle_primary_lags_zero(pair: Any) -> None:
    primary, standby = pair
    with psycopg.connect(primary.url, autocommit=True) as c:
        c.execute("CREATE TABLE IF NOT EXISTS idle_t (x int)")
        c.execute("INSERT INTO idle_t VALUES (1)")
    lag = wait_caught_up(standby.url, primary.url, DEADLINE_S)
    assert lag.caught_up and lag.bytes == 0 and lag.seconds == 0.0
    # the naive "now() - pg_last_xact_replay_timestamp()" is not 0 here: it only grows
    assert lag.replayed_at is not None and lag.replayed_at < datetime.now(UTC)
    assert lag.standby is True
    assert standby.lag().as_json()["lagBytes"] == 0


def test_a_paused_standby_lags_in_bytes_and_seconds_then_catches_up(pair: Any) -> None:
    primary, standby = pair
    wait_caught_up(standby.url, primary.url, DEADLINE_S)
    with psycopg.connect(standby.url, autocommit=True) as s:
        s.execute("SELECT pg_wal_replay_pause()")
        try:
            _wait_for(
                lambda: (
                    s.execute("SELECT pg_get_wal_replay_pause_state()").fetchone() == ("paused",)
                ),
                "replay paused",
            )
            with psycopg.connect(primary.url, autocommit=True) as c:
                c.execute("CREATE TABLE IF NOT EXISTS paused_t (x int)")
                c.execute("INSERT INTO paused_t SELECT generate_series(1, 1000)")
                current = c.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()
            lag = replication_lag(standby.url, primary.url)
            assert not lag.caught_up and lag.bytes > 0
            assert lag.seconds is not None and lag.seconds > 0
            # oracle: the server's own pg_wal_lsn_diff over the two positions read
            with psycopg.connect(primary.url) as c:
                diff = c.execute(
                    "SELECT pg_wal_lsn_diff(%s::pg_lsn, %s::pg_lsn)::bigint",
                    (lag.primary_lsn, lag.replay_lsn),
                ).fetchone()
            assert diff is not None and lag.bytes == diff[0]
            assert current is not None and parse_lsn(lag.primary_lsn or "0/0") >= parse_lsn(
                current[0]
            )
        finally:
            s.execute("SELECT pg_wal_replay_resume()")
    assert wait_caught_up(standby.url, primary.url, DEADLINE_S).bytes == 0


def test_a_stores_schema_set_up_on_a_replica_is_left_to_its_primary(pair: Any) -> None:
    """A store opened on the replica (its reads) runs the same ``ensure_schema`` as on the
    primary: on a server in recovery it changes nothing (it could not) and succeeds."""
    from lookup.kit.engines.postgres import ensure_schema

    primary, standby = pair
    ddl = "CREATE TABLE IF NOT EXISTS schema_t (x int)"
    ensure_schema(primary.url, "test.schema", ddl)
    wait_caught_up(standby.url, primary.url, DEADLINE_S)
    ensure_schema(standby.url, "test.schema", ddl)
    with psycopg.connect(standby.url) as c:
        assert c.execute("SELECT count(*) FROM schema_t").fetchone() == (0,)


def test_a_primary_read_as_a_replica_reports_no_lag(postgres_server: Any) -> None:
    lag = replication_lag(postgres_server.url, postgres_server.url)
    assert lag.standby is False and lag.bytes == 0 and lag.seconds == 0.0


def test_an_unreachable_standby_is_unavailable() -> None:
    from lookup.errors import Unavailable
    from lookup.kit.engines.ports import free_port

    with pytest.raises(Unavailable, match="read replica"):
        replication_lag(f"postgresql://postgres@127.0.0.1:{free_port()}/postgres")


def test_a_standby_that_lost_its_port_starts_on_another(
    postgres_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lookup.kit.engines import pgserver
    from lookup.kit.engines.ports import free_port

    with socket.socket() as taker:  # another process's server holds the first port drawn
        taker.bind(("127.0.0.1", 0))
        taker.listen()
        taken = taker.getsockname()[1]
        drawn = iter([taken])
        monkeypatch.setattr(pgserver, "free_port", lambda: next(drawn, None) or free_port())
        with PostgresStandby(postgres_server) as standby:
            assert standby.port != taken and standby.running()
            log = (standby.root / "server.log").read_text(errors="replace")
            assert "Address already in use" in log
            slot = standby.slot
    with psycopg.connect(postgres_server.url) as c:  # close() gave the primary its WAL back
        left = c.execute("SELECT 1 FROM pg_replication_slots WHERE slot_name = %s", (slot,))
        assert left.fetchone() is None


def test_a_primary_that_refuses_replication_is_opened_to_its_standby() -> None:
    with PostgresServer() as primary:
        hba = primary.data / "pg_hba.conf"
        kept = [line for line in hba.read_text().splitlines() if "replication" not in line]
        hba.write_text("\n".join(kept) + "\n")
        with psycopg.connect(primary.url, autocommit=True) as c:
            c.execute("SELECT pg_reload_conf()")
            c.execute("CREATE TABLE opened (x int)")
        with PostgresStandby(primary) as standby:
            wait_caught_up(standby.url, primary.url, DEADLINE_S)
            with psycopg.connect(standby.url) as c:
                assert c.execute("SELECT count(*) FROM opened").fetchone() == (0,)
        assert "host    replication     all             127.0.0.1/32" in hba.read_text()


# ------------------------------------------------------------------ pure parts


@given(st.integers(min_value=0, max_value=2**64 - 1))
def test_lsn_text_round_trips(n: int) -> None:
    text = format_lsn(n)
    assert parse_lsn(text) == n and text == text.upper()


@pytest.mark.parametrize("bad", ["", "0", "x/1", "1/", "/1", "1/2/3", "-1/0", "1/100000000"])
def test_malformed_lsns_are_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_lsn(bad)


PAGE, SEGMENT = 8192, 16 * 1024 * 1024


@pytest.mark.parametrize(
    ("insert", "end"),
    [
        (3 * PAGE + 24, 3 * PAGE),  # nothing on this page yet: the WAL ends at its start
        (SEGMENT + 40, SEGMENT),  # a segment's first page has the long header
        (SEGMENT + 24, SEGMENT + 24),  # (inside the long header: not after it)
        (3 * PAGE + 40, 3 * PAGE + 40),  # the end of a record continued onto this page
        (3 * PAGE + 48, 3 * PAGE + 48),
        (3 * PAGE, 3 * PAGE),
    ],
)
def test_the_wal_ends_before_a_page_header_nothing_follows(insert: int, end: int) -> None:
    assert wal_end(insert, PAGE, SEGMENT) == end


@given(st.integers(min_value=0, max_value=2**48))
def test_wal_end_moves_back_at_most_one_header_to_a_page_boundary(insert: int) -> None:
    end = wal_end(insert, PAGE, SEGMENT)
    assert end == insert or (end % PAGE == 0 and insert - end in (24, 40))
    assert wal_end(end, PAGE, SEGMENT) == end


moments = st.datetimes(
    min_value=datetime(2020, 1, 1), max_value=datetime(2030, 1, 1), timezones=st.just(UTC)
)


@given(
    primary=st.integers(min_value=0, max_value=2**40),
    replay=st.integers(min_value=0, max_value=2**40),
    now=moments,
    ago=st.one_of(st.none(), st.floats(min_value=0, max_value=1e6)),
)
def test_lag_is_never_negative_and_zero_exactly_when_caught_up(
    primary: int, replay: int, now: datetime, ago: float | None
) -> None:
    replayed_at = None if ago is None else now - timedelta(seconds=ago)
    lag = lag_between(primary, replay, now, replayed_at)
    assert lag.bytes == max(0, primary - replay)
    assert lag.caught_up == (replay >= primary)
    if lag.caught_up:
        assert lag.seconds == 0.0
    elif ago is None:
        assert lag.seconds is None
    else:
        assert lag.seconds is not None and lag.seconds >= 0
        assert lag.seconds == pytest.approx(ago, abs=1e-6)
