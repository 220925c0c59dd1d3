"""Places read from a streaming read replica (issue 26, "Read replica").

With ``LOOKUP_PLACES_READ_URL`` naming a standby of the PostgreSQL places database, an API
process loads its index from the replica (only once the replica holds the finished data
set) and tails the change stream there; a write goes to the primary, and the process that
wrote applies it from the primary at once. ``/healthz`` reports the replica's lag in bytes
and seconds — checked over a real ``lookup serve`` with the replica's replay paused.
Each test pauses replay on the standby (``pg_wal_replay_pause``) to hold it behind: that
makes "read from the replica, not the primary" observable without timing.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from lookup.errors import Unavailable
from lookup.geo import geohash
from lookup.geo.places import open_place_store, open_place_writer
from lookup.geo.replica import PlacesReplica
from lookup.geo.service import PlacesService
from lookup.kit.admin import admin_token_path
from lookup.kit.engines.pgstandby import PostgresStandby, wait_caught_up
from lookup.kit.engines.ports import free_port
from tests.conftest import running_lookup

DEADLINE_S = 30.0
TOKEN = "replica-test-admin-token-0123456789abcdef"


def _row(i: int) -> dict[str, Any]:
    lat, lng = 12.90 + i * 0.001, 77.60
    return {
        "id": f"biz:{i:07d}", "num": i, "name": f"Cafe {i}", "lat": lat, "lng": lng,
        "category": "cafe", "kind": "business", "geohash": geohash.encode(lat, lng),
        "country": "IN", "timezone": "Asia/Kolkata", "population": None, "tags": "[]",
        "hours": None, "price": 2, "review_count": 0, "review_stars": 0, "generated": 1,
        "near_city": None, "updated_at": 0.0,
    }  # fmt: skip


ROWS = [_row(i) for i in range(20)]


def _load(url: str) -> None:
    with open_place_writer(url) as db:
        db.insert_dicts(ROWS)
        db.finish({"next_num": str(len(ROWS))})


@pytest.fixture(scope="module")
def standby(postgres_server: Any) -> Iterator[PostgresStandby]:
    """One streaming standby of the session's cluster for this module."""
    with PostgresStandby(postgres_server) as server:
        yield server


@pytest.fixture
def urls(postgres_server: Any, standby: PostgresStandby) -> Iterator[tuple[str, str]]:
    """A new database on the primary, its tables made; (primary URL, replica URL) of it
    once the replica has it too."""
    name = f"t_replica_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(postgres_server.url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    primary = postgres_server.url.rsplit("/", 1)[0] + f"/{name}"
    replica = standby.url.rsplit("/", 1)[0] + f"/{name}"
    open_place_store(primary).close()  # the tables (schema set-up needs the primary)
    wait_caught_up(standby.url, postgres_server.url, DEADLINE_S)
    yield primary, replica
    with psycopg.connect(postgres_server.url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def replay_paused(standby: PostgresStandby) -> Iterator[None]:
    """The standby receives WAL but replays none of it until the block ends."""
    with psycopg.connect(standby.url, autocommit=True) as conn:
        conn.execute("SELECT pg_wal_replay_pause()")
        _wait_for(
            lambda: (
                conn.execute("SELECT pg_get_wal_replay_pause_state()").fetchone() == ("paused",)
            ),
            "replay paused",
        )
        try:
            yield
        finally:
            conn.execute("SELECT pg_wal_replay_resume()")


def _wait_for(check: Callable[[], Any], what: str, deadline_s: float = DEADLINE_S) -> Any:
    end = time.monotonic() + deadline_s
    while True:
        answer = check()
        if answer:
            return answer
        if time.monotonic() > end:
            pytest.fail(f"{what} not within {deadline_s:g} s")
        time.sleep(0.05)


def _service(tmp_path: Path, primary: str, replica: str) -> PlacesService:
    return PlacesService(tmp_path / "data", store_url=primary, read_url=replica)


def test_the_index_loads_from_the_replica_once_it_holds_the_data_set(
    tmp_path: Path, urls: tuple[str, str], standby: PostgresStandby, postgres_server: Any
) -> None:
    primary, replica = urls
    service = _service(tmp_path, primary, replica)
    try:
        with replay_paused(standby):
            _load(primary)  # the primary holds it; the replica has not replayed it
            with pytest.raises(Unavailable, match="does not hold the loaded data set yet"):
                service.ready()
            assert service.status()["replica"]["lagBytes"] > 0
        wait_caught_up(standby.url, postgres_server.url, DEADLINE_S)
        assert service.ready() and service.index is not None
        assert len(service.index) == len(ROWS)
        replica_report = service.status()["replica"]
        assert replica_report["status"] == "ok" and replica_report["url"].endswith(
            replica.rsplit("/", 1)[1]
        )
    finally:
        service.close()


def test_the_tailer_reads_the_replica_and_the_writer_reads_the_primary(
    tmp_path: Path, urls: tuple[str, str], standby: PostgresStandby, postgres_server: Any
) -> None:
    primary, replica = urls
    _load(primary)
    wait_caught_up(standby.url, postgres_server.url, DEADLINE_S)
    service = _service(tmp_path, primary, replica)
    other = open_place_store(primary)  # another API process's writes
    try:
        assert service.ready() and service.index is not None
        with replay_paused(standby):
            other.add({"name": "Elsewhere", "lat": 12.95, "lng": 77.6, "category": "cafe"})
            assert service.tail() == 0  # the replica has not replayed it
            assert service.index.seq == 0
        wait_caught_up(standby.url, postgres_server.url, DEADLINE_S)
        assert service.tail() == 1 and service.index.seq == other.last_seq()
        with replay_paused(standby):
            assert service.store is not None
            service.store.add({"name": "Mine", "lat": 12.96, "lng": 77.6, "category": "cafe"})
            assert service.sync() == 1  # what the write route calls: from the primary
            assert service.index.seq == other.last_seq() and len(service.index) == len(ROWS) + 2
    finally:
        other.close()
        service.close()


def test_a_replica_needs_a_primary_on_postgres() -> None:
    with pytest.raises(ValueError, match="LOOKUP_PLACES_STORE_URL=postgresql://"):
        PlacesReplica("postgresql://postgres@127.0.0.1:1/x", "sqlite:///tmp/places.sqlite")
    with pytest.raises(ValueError, match="LOOKUP_PLACES_STORE_URL=postgresql://"):
        PlacesService(Path("/nonexistent"), read_url="postgresql://postgres@127.0.0.1:1/x")


def test_an_unreachable_replica_is_reported_and_read_at_most_once_a_ttl() -> None:
    now = [100.0]
    dead = f"postgresql://postgres@127.0.0.1:{free_port()}/places"
    replica = PlacesReplica(dead, dead, ttl_s=1.0, clock=lambda: now[0])
    first = replica.status()
    assert first["status"] == "UNAVAILABLE" and "unavailable" in first["message"]
    assert "postgres@" not in first["url"]  # never the user or a password
    now[0] += 0.5
    assert replica.status() is first
    now[0] += 1.0
    assert replica.status() is not first


def test_healthz_reports_the_replica_lag_over_a_real_server(
    tmp_path: Path, urls: tuple[str, str], standby: PostgresStandby, postgres_server: Any
) -> None:
    primary, replica = urls
    _load(primary)
    wait_caught_up(standby.url, postgres_server.url, DEADLINE_S)
    data = tmp_path / "data"
    admin_token_path(data).parent.mkdir(parents=True, exist_ok=True)
    admin_token_path(data).write_text(TOKEN + "\n")
    env = {"LOOKUP_PLACES_STORE_URL": primary, "LOOKUP_PLACES_READ_URL": replica}
    with running_lookup(data, env) as api, httpx.Client(base_url=api, timeout=30) as http:

        def replica_report() -> dict[str, Any]:
            places = http.get("/healthz").json()["systems"]["places"]
            return places.get("replica") or {} if places.get("status") == "ok" else {}

        report = _wait_for(lambda: replica_report().get("lagBytes") == 0 and replica_report(),
                           "a caught-up replica in /healthz")  # fmt: skip
        assert report["status"] == "ok" and report["lagSeconds"] == 0 and report["caughtUp"]
        with replay_paused(standby):
            added = http.post(
                "/v1/places",
                json={"name": "Replica Test Cafe", "lat": 12.97, "lng": 77.6, "category": "cafe"},
                headers={"Authorization": f"Bearer {TOKEN}"},
            )
            assert added.status_code == 201, added.text  # to the primary: a standby refuses
            behind = _wait_for(
                lambda: (r := replica_report()).get("lagBytes", 0) > 0 and r, "lag in /healthz"
            )
            assert behind["lagSeconds"] is not None and behind["lagSeconds"] > 0
            assert behind["caughtUp"] is False
            found = http.get(
                "/v1/search", params={"lat": 12.97, "lng": 77.6, "radius": 50, "q": "replica"}
            )
            assert added.json()["id"] in [r["id"] for r in found.json()["results"]]
        _wait_for(lambda: replica_report().get("lagBytes") == 0, "the replica caught up again")
