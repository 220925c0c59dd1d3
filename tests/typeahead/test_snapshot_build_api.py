"""``POST /v1/typeahead/snapshots/build``: a new snapshot from the management API (issue 24,
item 16), as ``lookup typeahead build`` makes one — in the background, with progress.

Real HTTP (uvicorn on loopback, every subsystem mounted) over a copy of the built data
directory; the server's own poller deploys what the build publishes.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from lookup.kit.admin import server_admin_token
from lookup.server import create_app
from tests.conftest import serve_in_thread


@contextmanager
def _served(data_dir: Path) -> Iterator[httpx.Client]:
    """The real app over ``data_dir`` on a loopback port, and a client of it."""
    with serve_in_thread(create_app(data_dir)) as url, httpx.Client(base_url=url, timeout=30) as c:
        yield c


def _until(http: httpx.Client, path: str, done: Any, timeout: float = 120.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        body = http.get(path).json()
        if done(body):
            return body
        assert time.monotonic() < deadline, body
        time.sleep(0.2)


def _serving(http: httpx.Client, market: str) -> str | None:
    markets = http.get("/v1/typeahead/snapshots").json()["markets"]
    return (markets.get(market, {}).get("current") or {}).get("version")


def test_a_build_started_over_http_publishes_a_second_version(data_dir: Path) -> None:
    admin = {"Authorization": f"Bearer {server_admin_token(data_dir)}"}
    with _served(data_dir) as http:
        first = _serving(http, "en-IN")
        assert first is not None
        assert http.get("/v1/typeahead/snapshots/build").json()["state"] == "idle"

        # the token guards it like every other write
        assert http.post("/v1/typeahead/snapshots/build").status_code == 401
        bad = http.post("/v1/typeahead/snapshots/build", headers={"Authorization": "Bearer x"})
        assert bad.status_code == 403 and bad.json()["error"] == "FORBIDDEN"

        started = http.post("/v1/typeahead/snapshots/build", headers=admin)
        assert started.status_code == 202, started.text
        assert started.json()["state"] == "running"
        again = http.post("/v1/typeahead/snapshots/build", headers=admin)
        if again.status_code != 202:  # the first may already have finished on a fast machine
            assert again.status_code == 409 and again.json()["error"] == "JOB_RUNNING"

        done = _until(http, "/v1/typeahead/snapshots/build",
                      lambda b: b["state"] in ("succeeded", "failed"))  # fmt: skip
        assert done["state"] == "succeeded", done
        assert done["progress"] == 1.0
        assert any("published" in m for m in done["messages"]), done["messages"]
        built = {m["market"]: m for m in done["result"]["markets"]}
        assert built["en-IN"]["published"], built
        new = built["en-IN"]["version"]
        assert new != first

        # the poller deploys it; the old version is the rollback target
        _until(
            http,
            "/v1/typeahead/snapshots",
            lambda b: (b["markets"]["en-IN"].get("current") or {}).get("version") == new,
        )
        info = http.get("/v1/typeahead/snapshots").json()["markets"]["en-IN"]
        assert info["previous"] == first
        assert {first, new} <= set(info["stored"])
        assert http.get("/v1/suggest", params={"q": "ip", "market": "en-IN"}).json()["suggestions"]


def test_a_build_without_a_query_log_fails_saying_how_to_make_one(tmp_path: Path) -> None:
    data_dir = tmp_path / "empty"
    data_dir.mkdir()
    admin = {"Authorization": f"Bearer {server_admin_token(data_dir)}"}
    with _served(data_dir) as http:
        assert http.post("/v1/typeahead/snapshots/build", headers=admin).status_code == 202
        done = _until(http, "/v1/typeahead/snapshots/build",
                      lambda b: b["state"] in ("succeeded", "failed"))  # fmt: skip
        assert done["state"] == "failed"
        assert done["error"]["error"] == "NOT_BUILT"
        assert "lookup datasets build typeahead" in done["error"]["message"]
