"""``POST /v1/places/model/train``: the learned ranking trained from the management API (issue
24, item 16), as ``lookup places train`` does — in the background, with progress — after
which ``ranking=learned`` answers.

Real HTTP (uvicorn on loopback, every subsystem mounted) over a copy of the small built
places data set.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from lookup.kit.admin import server_admin_token
from lookup.server import create_app
from tests.conftest import serve_in_thread

KORAMANGALA = {"lat": 12.9352, "lng": 77.6245, "radius": 5000}
SMALL = {"sessions": 300, "seeds": 1, "clicks": 8}


@contextmanager
def _served(data_dir: Path) -> Iterator[httpx.Client]:
    """The real app over ``data_dir`` on a loopback port, and a client of it."""
    with serve_in_thread(create_app(data_dir)) as url, httpx.Client(base_url=url, timeout=30) as c:
        yield c


def _until_done(http: httpx.Client, timeout: float = 180.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    seen: list[float] = []
    while True:
        body = http.get("/v1/places/model/train").json()
        if body["progress"] is not None:
            seen.append(body["progress"])
        if body["state"] in ("succeeded", "failed"):
            assert seen == sorted(seen), seen  # progress never goes backwards
            return body  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, body
        time.sleep(0.2)


@pytest.fixture
def data_dir(built_data_dir: Path, tmp_path: Path) -> Path:
    target = tmp_path / "data"
    shutil.copytree(built_data_dir, target)
    return target


def test_training_over_http_makes_the_learned_ranking_answer(data_dir: Path) -> None:
    admin = {"Authorization": f"Bearer {server_admin_token(data_dir)}"}
    with _served(data_dir) as http:
        before = http.get("/v1/search", params={**KORAMANGALA, "ranking": "learned"})
        assert before.status_code == 400 and before.json()["error"] == "NO_MODEL"
        idle = http.get("/v1/places/model/train").json()
        assert idle["state"] == "idle" and idle["model"]["ranking"] == "hand"

        assert http.post("/v1/places/model/train", json=SMALL).status_code == 401
        started = http.post("/v1/places/model/train", json=SMALL, headers=admin)
        assert started.status_code == 202, started.text
        assert started.json()["state"] == "running"
        again = http.post("/v1/places/model/train", json=SMALL, headers=admin)
        assert again.status_code == 409 and again.json()["error"] == "JOB_RUNNING"

        done = _until_done(http)
        assert done["state"] == "succeeded", done
        assert done["progress"] == 1.0
        assert any("searched" in m for m in done["messages"]), done["messages"]
        result = done["result"]
        assert result["live"], result["figures"]  # the model beats the hand-set constants
        assert done["model"] == {**done["model"], "ranking": "learned",
                                 "version": result["version"]}  # fmt: skip

        after = http.get("/v1/search", params={**KORAMANGALA, "ranking": "learned",
                                                "explain": "true"})  # fmt: skip
        assert after.status_code == 200, after.text
        assert after.json()["explain"]["ranking"]["version"] == result["version"]


@pytest.mark.parametrize(
    "body",
    [{"sessions": 5}, {"seeds": 0}, {"clicks": "ten"}, {"sessions": True}, {"epochs": 3}],
)
def test_bad_options_are_refused_before_anything_runs(data_dir: Path, body: dict[str, Any]) -> None:
    admin = {"Authorization": f"Bearer {server_admin_token(data_dir)}"}
    with _served(data_dir) as http:
        r = http.post("/v1/places/model/train", json=body, headers=admin)
        assert r.status_code == 400 and r.json()["error"] == "INVALID_PARAMETER", r.text
        assert http.get("/v1/places/model/train").json()["state"] == "idle"


def test_training_without_places_says_how_to_build_them(tmp_path: Path) -> None:
    data_dir = tmp_path / "empty"
    data_dir.mkdir()
    admin = {"Authorization": f"Bearer {server_admin_token(data_dir)}"}
    with _served(data_dir) as http:
        r = http.post("/v1/places/model/train", json=SMALL, headers=admin)
        assert r.status_code == 503 and r.json()["error"] == "NOT_BUILT", r.text


def test_a_run_ends_when_the_server_stops(data_dir: Path) -> None:
    import threading

    admin = {"Authorization": f"Bearer {server_admin_token(data_dir)}"}
    with _served(data_dir) as http:
        big = {"sessions": 20_000, "seeds": 10}  # minutes of work
        assert http.post("/v1/places/model/train", json=big, headers=admin).status_code == 202
        deadline = time.monotonic() + 60
        while not http.get("/v1/places/model/train").json()["messages"][1:]:
            assert time.monotonic() < deadline
            time.sleep(0.1)
    # the server's shut-down stopped the run at its next report, not minutes later
    assert not [t for t in threading.enumerate() if t.name.startswith("job-places")]
