"""``/v1/search`` and ``/v1/places/...`` through the real app (every subsystem mounted)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from starlette.testclient import TestClient

from lookup.geo import geohash as gh
from lookup.kit.admin import admin_token_path
from lookup.server import create_app
from tests.geo.conftest import Oracle

KORAMANGALA = {"lat": 12.9352, "lng": 77.6245}
ADMIN_TOKEN = "places-admin-token-for-tests"
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


def _with_admin_token(data_dir: Path) -> Path:
    admin_token_path(data_dir).parent.mkdir(parents=True, exist_ok=True)
    admin_token_path(data_dir).write_text(ADMIN_TOKEN + "\n")
    return data_dir


@pytest.fixture(scope="module")
def http_data(built_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    data_dir = tmp_path_factory.mktemp("http-data")
    shutil.copytree(built_data_dir, data_dir, dirs_exist_ok=True)
    return _with_admin_token(data_dir)


@pytest.fixture(scope="module")
def client(http_data: Path) -> Iterator[TestClient]:
    with TestClient(create_app(http_data)) as c:
        yield c


@pytest.fixture(scope="module")
def oracle(built_rows: list[dict[str, Any]]) -> Oracle:
    return Oracle(built_rows)


def _ids(body: dict[str, Any]) -> list[str]:
    return [r["id"] for r in body["results"]]


def test_search_answers_the_seed_contract(client: TestClient) -> None:
    r = client.get("/v1/search", params={**KORAMANGALA, "radius": 2000, "category": "restaurant"})
    assert r.status_code == 200
    body = r.json()
    assert set(body) >= {"results", "radiusUsedM", "nextCursor"}
    assert body["radiusUsedM"] in (2000, 5000, 10000, 20000)
    assert body["results"], "a widened search near Koramangala finds restaurants"
    for item in body["results"]:
        assert {"id", "name", "lat", "lng", "distanceM", "rating", "reviews"} <= set(item)
        assert item["category"] == "restaurant"
        assert item["distanceM"] <= body["radiusUsedM"]
        assert "num" not in item


def test_search_equals_brute_force_over_http(
    client: TestClient, oracle: Oracle, built_rows: list[dict[str, Any]]
) -> None:
    by_num = {r["num"]: r["id"] for r in built_rows}
    rng = np.random.default_rng(31)
    for _ in range(25):
        i = int(rng.integers(0, len(oracle.lat)))
        lat, lng = float(oracle.lat[i]), float(oracle.lng[i])
        radius = float(rng.uniform(200, 20_000))
        seen: list[str] = []
        params: dict[str, Any] = {
            "lat": lat,
            "lng": lng,
            "radius": radius,
            "limit": 7,
            "widen": "false",
        }
        for _page in range(200):
            body = client.get("/v1/search", params=params).json()
            assert body["radiusUsedM"] == pytest.approx(radius, abs=1e-3)
            seen += _ids(body)
            if not body["nextCursor"]:
                break
            params["cursor"] = body["nextCursor"]
        assert len(seen) == len(set(seen))
        assert set(seen) == {by_num[n] for n in oracle.within(lat, lng, radius)}


def test_distances_are_recomputed_for_each_user_sharing_a_cached_cell(
    client: TestClient, oracle: Oracle, built_rows: list[dict[str, Any]]
) -> None:
    by_num = {r["num"]: r["id"] for r in built_rows}
    cell = gh.decode(gh.encode(12.9352, 77.6245, 6))
    a = {"lat": cell.south + 0.0001, "lng": cell.west + 0.0001}
    b = {"lat": cell.north - 0.0001, "lng": cell.east - 0.0001}
    common = {"radius": 15000, "limit": 50, "explain": "true", "widen": "false"}
    first = client.get("/v1/search", params={**a, **common}).json()
    second = client.get("/v1/search", params={**b, **common}).json()
    fresh = client.get("/v1/search", params={**b, **common, "cache": "false"}).json()
    assert second["explain"]["cacheHit"] is True and fresh["explain"]["cacheHit"] is False
    assert second["results"] == fresh["results"]
    shared = set(_ids(first)) & set(_ids(second))
    assert len(shared) >= 3, "the two users must share results for the check to bite"
    da = {r["id"]: r["distanceM"] for r in first["results"]}
    db = {r["id"]: r["distanceM"] for r in second["results"]}
    assert all(da[i] != db[i] for i in shared)
    by_id = {by_num[int(n)]: k for k, n in enumerate(oracle.num)}
    for user, answer in ((a, first), (b, second)):  # each user's own exact distance
        dist = oracle.distances(user["lat"], user["lng"])
        for r in answer["results"]:
            assert r["distanceM"] == pytest.approx(float(dist[by_id[r["id"]]]), abs=1.0)


def test_explain_shows_the_cells_searched(client: TestClient) -> None:
    body = client.get(
        "/v1/search",
        params={**KORAMANGALA, "radius": 2000, "widen": "false", "explain": "1", "cache": "0"},
    ).json()
    ex = body["explain"]
    assert ex["strategy"] == "block" and ex["precision"] == 5
    assert sorted(ex["cells"]) == sorted(
        ["tdr1w", "tdr1v", "tdr1y", "tdr1z", "tdr1t", "tdr1x", "tdr1m", "tdr1q", "tdr1r"]
    )
    assert len(ex["boxes"]) == 9 and ex["read"] >= ex["matched"]


def _walk(client: TestClient, params: dict[str, Any]) -> list[dict[str, Any]]:
    """Every result of a search, following nextCursor to the end."""
    out: list[dict[str, Any]] = []
    params = dict(params)
    for _page in range(500):
        body = client.get("/v1/search", params=params).json()
        out += body["results"]
        if not body["nextCursor"]:
            return out
        params["cursor"] = body["nextCursor"]
    raise AssertionError("the cursor walk did not end")


@pytest.mark.parametrize("index", ["geohash", "quadtree", "scan"])
def test_every_index_gives_the_same_answer(
    client: TestClient, index: str, oracle: Oracle, built_rows: list[dict[str, Any]]
) -> None:
    """Each planner's whole answer is the brute-force one, in one shared order."""
    by_num = {r["num"]: r["id"] for r in built_rows}
    radius = 15000.0
    params = {**KORAMANGALA, "radius": radius, "limit": 4, "widen": "false", "cache": "false"}
    walked = _walk(client, {**params, "index": index})
    ids = [r["id"] for r in walked]
    truth = oracle.within(KORAMANGALA["lat"], KORAMANGALA["lng"], radius)
    assert len(ids) == len(set(ids)) and set(ids) == {by_num[n] for n in truth}
    assert len(ids) > 12  # several pages, so the cursor order is exercised too
    dist = oracle.distances(KORAMANGALA["lat"], KORAMANGALA["lng"])
    exact = {by_num[int(n)]: float(d) for n, d in zip(oracle.num, dist, strict=True)}
    for r in walked:
        assert r["distanceM"] == pytest.approx(exact[r["id"]], abs=1.0)
    other = "scan" if index != "scan" else "geohash"
    assert ids == [r["id"] for r in _walk(client, {**params, "index": other})]


def test_radius_is_capped_at_20_km(client: TestClient) -> None:
    body = client.get(
        "/v1/search", params={**KORAMANGALA, "radius": 900000, "widen": "false"}
    ).json()
    assert body["radiusUsedM"] == 20000


@pytest.mark.parametrize(
    "params",
    [
        {"lng": 77.6},
        {"lat": "abc", "lng": 77.6},
        {"lat": 91, "lng": 77.6},
        {"lat": 12.9, "lng": -180.5},
        {"lat": "nan", "lng": 1},
        {"lat": 12.9, "lng": "inf"},
        {**KORAMANGALA, "radius": -5},
        {**KORAMANGALA, "radius": 0},
        {**KORAMANGALA, "radius": "far"},
        {**KORAMANGALA, "limit": 0},
        {**KORAMANGALA, "limit": 101},
        {**KORAMANGALA, "limit": "ten"},
        {**KORAMANGALA, "limit": "2.5"},
        {**KORAMANGALA, "cursor": "not-a-cursor"},
        {**KORAMANGALA, "cursor": "eyJ2IjoxfQ"},
        {**KORAMANGALA, "openNow": "maybe"},
        {**KORAMANGALA, "price": "5"},
        {**KORAMANGALA, "price": "cheap"},
        {**KORAMANGALA, "category": "spaceport"},
        {**KORAMANGALA, "index": "rtree"},
        {**KORAMANGALA, "q": "x" * 300},
    ],
)
def test_nonsense_is_a_400(client: TestClient, params: dict[str, Any]) -> None:
    r = client.get("/v1/search", params=params)
    assert r.status_code == 400, r.text
    body = r.json()
    assert body["error"] == "INVALID_PARAMETER" and body["message"]


def test_a_cursor_from_another_query_is_refused(client: TestClient) -> None:
    first = client.get(
        "/v1/search", params={**KORAMANGALA, "radius": 20000, "limit": 1, "widen": "false"}
    ).json()
    assert first["nextCursor"]
    r = client.get("/v1/search", params={"lat": 48.85, "lng": 2.35, "cursor": first["nextCursor"]})
    assert r.status_code == 400 and r.json()["error"] == "INVALID_PARAMETER"


def _forge(cursor: str, **changes: Any) -> str:
    """``cursor`` with its payload edited and its signature (if any) kept as it was."""
    import base64
    import json

    payload, dot, signature = cursor.partition(".")
    data = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    data.update(changes)
    raw = base64.urlsafe_b64encode(json.dumps(data, separators=(",", ":")).encode())
    return raw.decode().rstrip("=") + dot + signature


def test_a_tampered_cursor_is_a_400(
    client: TestClient, http_data: Path, built_data_dir: Path, tmp_path: Path
) -> None:
    params = {**KORAMANGALA, "radius": 20000, "limit": 1, "widen": "false"}
    first = client.get("/v1/search", params=params).json()
    cursor = first["nextCursor"]
    assert cursor and first["radiusUsedM"] == 20000
    assert client.get("/v1/search", params={**params, "cursor": cursor}).status_code == 200
    for forged in (
        _forge(cursor, r=2000),
        _forge(cursor, r=500),
        _forge(cursor, s=10**9),
        _forge(cursor, n=0),
        cursor[:-2] + ("AA" if cursor[-2:] != "AA" else "BB"),
        cursor.split(".")[0],
    ):
        r = client.get("/v1/search", params={**params, "cursor": forged})
        assert r.status_code == 400, (forged, r.text)
        assert r.json()["error"] == "INVALID_PARAMETER"
    # the key lives in the data directory: another server over the same data honours it
    key_file = http_data / "places" / "cursor.key"
    assert key_file.stat().st_mode & 0o777 == 0o600
    data_dir = tmp_path / "again"
    shutil.copytree(built_data_dir, data_dir, dirs_exist_ok=True)
    with TestClient(create_app(data_dir)) as other:  # a different key: refused
        assert other.get("/v1/search", params={**params, "cursor": cursor}).status_code == 400
    shutil.copy(key_file, data_dir / "places" / "cursor.key")
    with TestClient(create_app(data_dir)) as other:  # the same key: the next page
        again = other.get("/v1/search", params={**params, "cursor": cursor})
        assert again.status_code == 200 and again.json()["results"]


def test_filters_over_http(client: TestClient) -> None:
    body = client.get(
        "/v1/search",
        params={
            **KORAMANGALA,
            "radius": 20000,
            "limit": 100,
            "price": "1,2",
            "openNow": "true",
            "category": "restaurant,cafe",
        },
    ).json()
    for item in body["results"]:
        assert item["price"] in (1, 2) and item["openNow"] is True
        assert item["category"] in ("restaurant", "cafe")
    q = client.get("/v1/search", params={**KORAMANGALA, "q": "biryani", "limit": 100}).json()
    assert q["results"]
    assert all(
        "biryani" in item["tags"] or "biryani" in item["name"].lower() for item in q["results"]
    )


def test_area_search_pins_and_clusters(client: TestClient, oracle: Oracle) -> None:
    box = {"south": 12.85, "west": 77.5, "north": 13.05, "east": 77.75}
    pins = client.get("/v1/places/area", params=box).json()
    inside = (
        (oracle.lat >= 12.85) & (oracle.lat <= 13.05) & (oracle.lng >= 77.5) & (oracle.lng <= 77.75)
    )
    assert pins["mode"] == "pins" and pins["total"] == int(inside.sum())
    world = client.get(
        "/v1/places/area", params={"south": -90, "west": -180, "north": 90, "east": 180}
    ).json()
    assert world["mode"] == "clusters"
    assert sum(c["count"] for c in world["clusters"]) == world["total"] == len(oracle.lat)
    # a rectangle across the antimeridian (Fiji)
    fiji = client.get(
        "/v1/places/area", params={"south": -19, "west": 177, "north": -16, "east": -179}
    ).json()
    in_fiji = (
        (oracle.lat >= -19) & (oracle.lat <= -16) & ((oracle.lng >= 177) | (oracle.lng <= -179))
    )
    assert fiji["total"] == int(in_fiji.sum()) > 0
    bad = client.get("/v1/places/area", params={**box, "north": "x"})
    assert bad.status_code == 400 and bad.json()["error"] == "INVALID_PARAMETER"
    upside_down = client.get("/v1/places/area", params={**box, "south": 14})
    assert upside_down.status_code == 400


def test_owner_writes_reach_search(client: TestClient) -> None:
    new = client.post(
        "/v1/places",
        json={
            "name": "Hyderabadi Biryani Corner",
            "lat": 12.9353,
            "lng": 77.6247,
            "category": "restaurant",
            "tags": ["biryani"],
            "timezone": "Asia/Kolkata",
        },
        headers=ADMIN,
    )
    assert new.status_code == 201, new.text
    pid = new.json()["id"]
    params = {**KORAMANGALA, "radius": 100, "widen": "false", "q": "hyderabadi"}
    assert _ids(client.get("/v1/search", params=params).json()) == [pid]
    moved = client.patch(f"/v1/places/{pid}", json={"lat": 48.8566, "lng": 2.3522}, headers=ADMIN)
    assert moved.status_code == 200 and moved.json()["geohash"].startswith("u09")
    assert _ids(client.get("/v1/search", params=params).json()) == []
    paris = {"lat": 48.8566, "lng": 2.3522, "radius": 100, "widen": "false", "q": "hyderabadi"}
    assert _ids(client.get("/v1/search", params=paris).json()) == [pid]
    assert client.get(f"/v1/places/{pid}").json()["name"] == "Hyderabadi Biryani Corner"
    assert client.delete(f"/v1/places/{pid}", headers=ADMIN).status_code == 200
    assert _ids(client.get("/v1/search", params=paris).json()) == []
    assert client.get(f"/v1/places/{pid}").status_code == 404
    bad = client.post(
        "/v1/places", json={"name": "x", "lat": 100, "lng": 0, "category": "cafe"}, headers=ADMIN
    )
    assert bad.status_code == 400 and bad.json()["error"] == "INVALID_PARAMETER"
    assert client.patch("/v1/places/biz:none", json={"name": "y"}, headers=ADMIN).status_code == 404


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        (
            "POST",
            "/v1/places",
            {"name": "Intruder Cafe", "lat": 12.9353, "lng": 77.6247, "category": "cafe"},
        ),
        ("PATCH", "/v1/places/{pid}", {"name": "Renamed by a stranger"}),
        ("DELETE", "/v1/places/{pid}", None),
        ("POST", "/v1/places/index/rebuild", None),
    ],
)
def test_place_writes_need_the_admin_token(
    client: TestClient, method: str, path: str, body: dict[str, Any] | None
) -> None:
    near = client.get("/v1/search", params={**KORAMANGALA, "radius": 2000}).json()
    pid = near["results"][0]["id"]
    before = client.get(f"/v1/places/{pid}").json()
    version = client.get("/v1/places/index").json()["indexVersion"]
    url = path.format(pid=pid)
    kw: dict[str, Any] = {} if body is None else {"json": body}
    none = client.request(method, url, **kw)
    assert none.status_code == 401 and none.json()["error"] == "UNAUTHORIZED"
    wrong = client.request(method, url, headers={"Authorization": "Bearer nope"}, **kw)
    assert wrong.status_code == 403 and wrong.json()["error"] == "FORBIDDEN"
    assert client.get(f"/v1/places/{pid}").json() == before
    assert client.get("/v1/places/index").json()["indexVersion"] == version
    params = {**KORAMANGALA, "radius": 200, "widen": "false", "q": "intruder"}
    assert client.get("/v1/search", params=params).json()["results"] == []


def test_health_and_index_stats(client: TestClient) -> None:
    health = client.get("/healthz").json()["systems"]["places"]
    assert health["status"] == "ok" and health["places"] > 60_000
    assert health["indexVersion"] >= 1 and health["narrowBytesPerPlace"] < 40
    stats = client.get("/v1/places/index").json()
    rebuilt = client.post("/v1/places/index/rebuild", headers=ADMIN).json()
    assert rebuilt["indexVersion"] == stats["indexVersion"] + 1
    assert (
        client.get("/healthz").json()["systems"]["places"]["indexVersion"]
        == (rebuilt["indexVersion"])
    )


def test_not_built_is_a_503_naming_the_command(tmp_path: Path) -> None:
    with TestClient(create_app(_with_admin_token(tmp_path / "empty"))) as c:
        for path, params in (
            ("/v1/search", KORAMANGALA),
            ("/v1/places/area", {"south": 0, "west": 0, "north": 1, "east": 1}),
        ):
            r = c.get(path, params=params)
            assert r.status_code == 503
            body = r.json()
            assert body["error"] == "NOT_BUILT"
            assert "lookup datasets build places" in body["message"]
        assert c.get("/healthz").json()["systems"]["places"]["status"] == "NOT_BUILT"
        assert c.get("/v1/places/index").status_code == 503
        assert (
            c.post(
                "/v1/places",
                json={"name": "x", "lat": 1, "lng": 1, "category": "cafe"},
                headers=ADMIN,
            ).status_code
            == 503
        )


def test_named_places_as_one_types(client: TestClient) -> None:
    """``GET /v1/places/named``: cities and airports of the data set by name prefix."""
    r = client.get("/v1/places/named", params={"q": "pun"})
    assert r.status_code == 200, r.text
    results = r.json()["results"]
    assert results and results[0]["name"] == "Pune" and results[0]["kind"] == "city"
    assert all(p["name"].lower().startswith("pun") or " pun" in p["name"].lower() for p in results)
    assert {"id", "name", "kind", "country", "lat", "lng", "population"} <= set(results[0])
    assert (
        client.get("/v1/places/named", params={"q": "pun", "limit": 3}).json()["results"]
        == results[:3]
    )
    assert client.get("/v1/places/named", params={"q": "x" * 101}).status_code == 400
    assert client.get("/v1/places/named", params={"q": "pun", "limit": 0}).status_code == 400
    assert client.get("/v1/places/named").status_code == 400
