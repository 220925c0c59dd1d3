"""The Places page's backend panel, through ``streamlit.testing``: which database serves
places (the SQLite file, or PostgreSQL + PostGIS named without user or password) as
``/healthz`` reports it, the lag of the PostgreSQL standby the API reads places from (bytes
and seconds), a warning when the replica cannot be read, and no replica figures when the
API reads the primary.

The API here is a stand-in answering ``/healthz`` only (the real report is checked over a
real ``lookup serve`` in ``tests/geo/test_places_replica.py``): the page shows its status
line and the replica's lag before it asks the places index, so it draws them and then
stops with "the places search needs the API".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from dashboard_testing import metric_value, page_text
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

PLACES = "views/places.py"
REPLICA_URL = "postgresql://127.0.0.1:25432/places"
PRIMARY_URL = "postgresql://127.0.0.1:25431/places"
POSTGIS = {"engine": "postgresql", "name": "PostgreSQL + PostGIS", "where": PRIMARY_URL}


def _api(places: dict[str, Any]) -> Starlette:
    async def healthz(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "version": "test", "systems": {"places": places}})

    return Starlette(routes=[Route("/healthz", healthz)])


def _open(serve_asgi: Any, visit: Callable[[str, str], Any], places: dict[str, Any]) -> Any:
    from common import cached_health

    cached_health.clear()  # each test's API is new; the page remembers answers for 5 s
    return visit(PLACES, serve_asgi(_api(places)))


def test_the_page_shows_the_replicas_lag_in_bytes_and_seconds(
    serve_asgi: Any, visit: Callable[[str, str], Any]
) -> None:
    replica = {
        "status": "ok",
        "url": REPLICA_URL,
        "lagBytes": 3 * 1024 * 1024 + 1024 * 400,
        "lagSeconds": 2.5,
        "caughtUp": False,
        "replayLsn": "0/3000148",
    }
    at = _open(serve_asgi, visit, {"status": "ok", "replica": replica})
    assert metric_value(at, "Replica lag (bytes)") == "3.4 MiB"
    assert metric_value(at, "Replica lag (seconds)") == "2.50 s"
    assert metric_value(at, "Replayed up to") == "0/3000148"
    text = page_text(at)
    assert REPLICA_URL in text and "which is behind" in text


def test_a_caught_up_replica_lags_zero(serve_asgi: Any, visit: Callable[[str, str], Any]) -> None:
    replica = {"status": "ok", "url": REPLICA_URL, "lagBytes": 0, "lagSeconds": 0.0,
               "caughtUp": True, "replayLsn": "0/3000148"}  # fmt: skip
    at = _open(serve_asgi, visit, {"status": "ok", "replica": replica})
    assert metric_value(at, "Replica lag (bytes)") == "0 B"
    assert metric_value(at, "Replica lag (seconds)") == "0 s"
    assert "which has caught up" in page_text(at)


def test_an_unreadable_replica_is_a_warning(
    serve_asgi: Any, visit: Callable[[str, str], Any]
) -> None:
    replica = {"status": "UNAVAILABLE", "url": REPLICA_URL, "message": "connection refused"}
    at = _open(serve_asgi, visit, {"status": "ok", "replica": replica})
    warnings = " ".join(w.value for w in at.warning)
    assert "cannot be read: connection refused" in warnings and REPLICA_URL in warnings
    assert not [m for m in at.metric if m.label.startswith("Replica lag")]


def test_without_a_replica_nothing_is_shown(
    serve_asgi: Any, visit: Callable[[str, str], Any]
) -> None:
    at = _open(serve_asgi, visit, {"status": "ok"})
    assert not [m for m in at.metric if m.label.startswith("Replica lag")]
    assert "replica" not in page_text(at).lower()


def test_the_page_names_postgis_as_the_backend(
    serve_asgi: Any, visit: Callable[[str, str], Any]
) -> None:
    at = _open(serve_asgi, visit, {"status": "ok", "store": "postgresql", "backend": POSTGIS})
    line = " ".join(c.value for c in at.caption if "Places are stored in" in c.value)
    assert "PostgreSQL + PostGIS" in line and PRIMARY_URL in line, line
    assert "replica" not in page_text(at).lower()  # no standby: no replica figures


def test_the_page_names_the_sqlite_file_as_the_backend(
    serve_asgi: Any, visit: Callable[[str, str], Any]
) -> None:
    sqlite = {"engine": "sqlite", "name": "SQLite file", "where": "/srv/data/places/places.sqlite"}
    at = _open(serve_asgi, visit, {"status": "ok", "store": "sqlite", "backend": sqlite})
    line = " ".join(c.value for c in at.caption if "Places are stored in" in c.value)
    assert "SQLite file" in line and "/srv/data/places/places.sqlite" in line, line


def test_a_password_the_api_leaks_is_not_shown(
    serve_asgi: Any, visit: Callable[[str, str], Any]
) -> None:
    leaky = {**POSTGIS, "where": "postgresql://places:s3cret@127.0.0.1:25431/places"}
    at = _open(serve_asgi, visit, {"status": "ok", "backend": leaky})
    text = page_text(at)
    assert "s3cret" not in text and "127.0.0.1:25431/places" in text


def test_the_backend_is_named_while_it_is_down_with_the_replica(
    serve_asgi: Any, visit: Callable[[str, str], Any]
) -> None:
    replica = {"status": "ok", "url": REPLICA_URL, "lagBytes": 0, "lagSeconds": 0.0,
               "caughtUp": True, "replayLsn": "0/1"}  # fmt: skip
    places = {"status": "UNAVAILABLE", "message": "connection refused", "backend": POSTGIS,
              "replica": replica}  # fmt: skip
    at = _open(serve_asgi, visit, places)
    text = page_text(at)
    assert "PostgreSQL + PostGIS" in text and PRIMARY_URL in text
    assert metric_value(at, "Replica lag (bytes)") == "0 B"


@pytest.mark.parametrize(
    ("places", "shown"),
    [
        (None, None),
        ({"status": "ok"}, None),
        ({"status": "ok", "store": "sqlite"}, ("SQLite file", "")),
        ({"status": "ok", "store": "postgresql"}, ("PostgreSQL + PostGIS", "")),
        ({"backend": {"engine": "sqlite", "where": "/d/p.sqlite"}}, ("SQLite file", "/d/p.sqlite")),
        ({"backend": "bogus"}, None),
    ],
)
def test_the_backend_is_read_from_the_report_or_its_store_field(
    places: dict[str, Any] | None, shown: tuple[str, str] | None
) -> None:
    from placesbackends import backend_of

    assert backend_of({"places": places} if places is not None else None) == shown


@pytest.mark.parametrize(
    ("n", "shown"),
    [(0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (5 * 1024**3, "5.0 GiB")],
)
def test_byte_counts_read_in_their_unit(n: int, shown: str) -> None:
    from placesbackends import fmt_bytes

    assert fmt_bytes(n) == shown


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(None, "unknown"), (0, "0 s"), (0.42, "0.42 s"), (61, "61 s"), (185, "3 min 5 s")],
)
def test_seconds_read_as_a_person_reads_them(seconds: float | None, shown: str) -> None:
    from placesbackends import fmt_seconds

    assert fmt_seconds(seconds) == shown
