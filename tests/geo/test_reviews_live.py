"""Place reviews over HTTP on two real ``lookup serve`` workers sharing one places database
(issue 27 item 16).

A review posted to one worker changes the rating and count the *other* worker shows — its
profile and its search results — once that worker's tailer has applied the change stream
(every second). Two servers share one embedded data directory only in a fleet whose links are
shared otherwise (``kit/serverlock.py``), so the workers run with a Redis cache tier, as
``lookup up --backend redis`` does.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from lookup.datasets import places as places_dataset
from lookup.geo.store import SqlitePlaceStore
from tests.shortener.fleet import ApiProcess

TOKEN = "places-reviews-admin-token"
ADMIN = {"Authorization": f"Bearer {TOKEN}"}
#: Generous: the other worker's tailer polls every second; the figure is printed.
CONVERGE_S = 20.0


@pytest.fixture(scope="module")
def workers(
    built_data_dir: Path, tmp_path_factory: pytest.TempPathFactory, redis_server: Any
) -> Iterator[tuple[ApiProcess, ApiProcess, Path]]:
    data_dir = tmp_path_factory.mktemp("reviews") / "data"
    shutil.copytree(built_data_dir, data_dir)
    env = {
        "LOOKUP_ADMIN_TOKEN": TOKEN,
        "LOOKUP_CACHE_URL": redis_server.url,
        "LOOKUP_PLACES_REVIEW_RATE": "3/3600:3",
    }
    procs: list[ApiProcess] = []
    try:
        for _ in range(2):
            procs.append(ApiProcess(data_dir, env))
        for p in procs:
            p.wait_ready(120)
        yield procs[0], procs[1], data_dir
    finally:
        for p in procs:
            p.stop()


def _business(data_dir: Path, skip: int = 0) -> dict[str, Any]:
    store = SqlitePlaceStore(places_dataset.db_path(data_dir))
    try:
        rows = [r for r in store.iter_rows() if r["kind"] == "business"]
    finally:
        store.close()
    return rows[100 + skip]


def _post(url: str, pid: str, body: Any, headers: dict[str, str] = ADMIN) -> httpx.Response:
    return httpx.post(f"{url}/v1/places/{pid}/reviews", json=body, headers=headers, timeout=60)


def _in_search(url: str, place: dict[str, Any]) -> dict[str, Any] | None:
    params = {"lat": place["lat"], "lng": place["lng"], "radius": 50, "widen": "false",
              "limit": 50, "cache": "false"}  # fmt: skip
    r = httpx.get(f"{url}/v1/search", params=params, timeout=60)
    assert r.status_code == 200, r.text
    return next((p for p in r.json()["results"] if p["id"] == place["id"]), None)


def test_a_review_on_one_worker_reaches_the_other(
    workers: tuple[ApiProcess, ApiProcess, Path],
) -> None:
    a, b, data_dir = workers
    place = _business(data_dir)
    before = httpx.get(f"{b.url}/v1/places/{place['id']}", timeout=60).json()
    r = _post(a.url, place["id"], {"userId": "asha", "rating": 1, "text": "Cold dosa, rude"})
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["replaced"] is False
    assert body["review"]["userId"] == "asha" and body["review"]["newAccount"] is True
    assert body["place"]["reviews"] == before["review_count"] + 1
    started = time.monotonic()
    seen: dict[str, Any] = {}
    while time.monotonic() - started < CONVERGE_S:
        seen = httpx.get(f"{b.url}/v1/places/{place['id']}", timeout=60).json()
        if seen["review_count"] == body["place"]["reviews"]:
            break
        time.sleep(0.05)
    print(f"the other worker's profile showed the review after {time.monotonic() - started:.2f} s")
    assert seen["review_count"] == body["place"]["reviews"]
    assert seen["rating"] == body["place"]["rating"]
    found = None
    while time.monotonic() - started < CONVERGE_S:  # and its search results
        found = _in_search(b.url, place)
        if found is not None and found["reviews"] == body["place"]["reviews"]:
            break
        time.sleep(0.05)
    print(f"the other worker's search showed the review after {time.monotonic() - started:.2f} s")
    assert found is not None
    assert (found["reviews"], found["rating"]) == (
        body["place"]["reviews"],
        body["place"]["rating"],
    )
    listed = httpx.get(f"{b.url}/v1/places/{place['id']}/reviews", timeout=60).json()
    assert listed["reviews"][0]["text"] == "Cold dosa, rude"
    assert listed["reviewCount"] == body["place"]["reviews"]


def test_a_second_review_replaces_the_first_and_pages_newest_first(
    workers: tuple[ApiProcess, ApiProcess, Path],
) -> None:
    a, b, data_dir = workers
    place = _business(data_dir, skip=1)
    for user in ("u1", "u2", "u3"):
        r = _post(a.url, place["id"], {"userId": user, "rating": 4, "text": f"from {user}"})
        assert r.status_code == 201, r.text
    r = _post(b.url, place["id"], {"userId": "u1", "rating": 2, "text": "changed my mind 😕"})
    assert r.status_code == 200, r.text  # replaced, on the other worker: one database
    assert r.json()["replaced"] is True
    assert r.json()["place"]["reviews"] == place["review_count"] + 3
    users, cursor = [], None
    while True:
        params: dict[str, Any] = {"limit": 2}
        if cursor:
            params["cursor"] = cursor
        page = httpx.get(f"{a.url}/v1/places/{place['id']}/reviews", params=params, timeout=60)
        assert page.status_code == 200, page.text
        users += [x["userId"] for x in page.json()["reviews"]]
        cursor = page.json()["nextCursor"]
        if cursor is None:
            break
    assert users == ["u1", "u3", "u2"]  # newest first; the replacement counts as new
    other = _business(data_dir, skip=2)["id"]
    wrong = httpx.get(
        f"{a.url}/v1/places/{other}/reviews", params={"cursor": page.json()["nextCursor"] or "x.y"}
    )
    assert wrong.status_code == 400 and wrong.json()["error"] == "INVALID_CURSOR"


def test_bad_requests_are_4xx_with_a_code(workers: tuple[ApiProcess, ApiProcess, Path]) -> None:
    a, _, data_dir = workers
    pid = _business(data_dir, skip=3)["id"]
    ok = {"userId": "zed", "rating": 3}
    assert _post(a.url, pid, ok, headers={}).status_code == 401
    assert _post(a.url, pid, ok, headers={"Authorization": "Bearer nope"}).status_code == 403
    assert _post(a.url, "biz:missing", ok).status_code == 404
    cases = [
        ({"userId": "zed", "rating": 9}, "INVALID_RATING"),
        ({"userId": "zed", "rating": 3, "text": "bell\x07"}, "INVALID_TEXT"),
        ({"userId": "zed", "rating": 3, "text": "x" * 4001}, "TEXT_TOO_LONG"),
        ({"userId": "zed", "rating": 3, "extra": 1}, "INVALID_REQUEST"),
    ]
    for body, code in cases:
        r = _post(a.url, pid, body)
        assert r.status_code == 400 and r.json()["error"] == code, (body, r.text)
    raw = httpx.post(
        f"{a.url}/v1/places/{pid}/reviews",
        content=b'{"userId": "zed", "rating": 3, "text": "\\udc00"}',
        headers={**ADMIN, "Content-Type": "application/json"},
    )
    assert raw.status_code == 400, raw.text
    assert httpx.get(f"{a.url}/v1/places/{pid}/reviews", params={"limt": 3}).status_code == 400
    zero = httpx.get(f"{a.url}/v1/places/{pid}/reviews", params={"limit": 0})
    assert zero.status_code == 422 and zero.json()["error"] == "INVALID_REQUEST"  # FastAPI's
    assert httpx.get(f"{a.url}/v1/places/biz:missing/reviews").status_code == 404


def test_reviews_are_rate_limited_per_user(workers: tuple[ApiProcess, ApiProcess, Path]) -> None:
    a, _, data_dir = workers
    pid = _business(data_dir, skip=4)["id"]
    codes = [_post(a.url, pid, {"userId": "spammer", "rating": 5}).status_code for _ in range(4)]
    assert codes == [201, 200, 200, 429]
    r = _post(a.url, pid, {"userId": "spammer", "rating": 5})
    assert r.json()["error"] == "RATE_LIMITED" and int(r.headers["Retry-After"]) > 0
    assert _post(a.url, pid, {"userId": "someone-else", "rating": 5}).status_code == 201


def test_the_review_routes_are_in_openapi(workers: tuple[ApiProcess, ApiProcess, Path]) -> None:
    r = httpx.get(f"{workers[0].url}/openapi.json", timeout=60)
    assert r.status_code == 200, workers[0].log()
    doc = r.json()
    item = doc["paths"]["/v1/places/{place_id}/reviews"]
    assert {"get", "post"} <= set(item)
