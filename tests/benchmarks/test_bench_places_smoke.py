"""``benchmarks/bench_places.py`` at a toy size, so its code paths do not rot.

No timing assertions: only that the comparisons run, agree on every result set, report
in the expected shape, and that the servers start, answer and stop.
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import httpx
import numpy as np
import pytest

from benchmarks import bench_places
from benchmarks.common import free_port, wrk_path
from lookup.datasets import places

needs_wrk = pytest.mark.skipif(
    wrk_path() is None, reason="wrk is not installed (apt-get install wrk)"
)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bench-places")
    bench_places.ensure_places(path, 1_500)
    return path


def _closed(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1.0)
        return s.connect_ex(("127.0.0.1", port)) != 0


def test_ensure_places_reuses_a_build_of_the_same_size(data_dir: Path) -> None:
    db = places.db_path(data_dir)
    before = db.stat().st_mtime_ns
    assert bench_places.ensure_places(data_dir, 1_500) == db
    assert db.stat().st_mtime_ns == before


def test_user_points_stand_beside_places() -> None:
    lat = np.array([10.0, -45.0, 60.0])
    lng = np.array([179.999, 0.0, -120.0])
    pts = bench_places.user_points(lat, lng, np.arange(3), 500, seed=1)
    assert pts.shape == (500, 2)
    assert np.all(np.abs(pts[:, 0]) <= 90) and np.all(np.abs(pts[:, 1]) <= 180)
    nearest = np.min(
        np.stack([bench_places.haversine_m(a, b, lat, lng) for a, b in pts.tolist()]), axis=1
    )
    assert np.all(nearest < 10 * bench_places.USER_JITTER_M)


def test_inprocess_comparison_agrees_and_reports(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = bench_places.bench_inprocess(data_dir, queries=12, brute_queries=4, runs=1)
    assert result["places"] > 60_000  # the real cities and airports are always there
    for radius in bench_places.RADII_M:
        check = result["checks"][radius]
        assert check["queries"] == 12 and check["brute_compared"] == 4
        assert check["brute_mismatch"] == 0
        assert check["balltree_mismatch"] == 0
        assert check["quadtree_mismatch"] == 0
        assert set(result["radii"][radius]) == {
            "geohash index",
            "quadtree",
            "BallTree",
            "brute force",
            "search() ranked page",
        }
    assert result["memory"]["narrow_bytes_per_place"] < bench_places.NARROW_TARGET_B
    text = bench_places.report({"inprocess": result})
    assert "geohash index" in text and "BallTree" in text and "bytes/place" in text


def test_postgis_and_redis_anchors_answer_the_same_queries(
    data_dir: Path, postgres_server: object, redis_server: object
) -> None:
    """The peer anchors' rows in quick mode: PostGIS ``ST_DWithin`` and Redis ``GEOSEARCH``
    loaded with the same places, asked the same queries, equal to the index but for
    rounding at the circle's edge. (The fixtures skip without the servers, or fail under
    ``LOOKUP_REQUIRE_SERVERS``; the benchmark starts servers of its own.)"""
    result = bench_places.bench_inprocess(
        data_dir, queries=8, brute_queries=2, runs=1, engines=("postgis", "redis")
    )
    assert result["engines"] == ["postgis", "redis"]
    assert set(result["engine_load_s"]) == {"postgis", "redis"}
    for radius in bench_places.RADII_M:
        check = result["checks"][radius]
        assert check["postgis_mismatch"] == 0 and check["redis_mismatch"] == 0
        assert {"PostGIS ST_DWithin", "Redis GEOSEARCH"} <= set(result["radii"][radius])
        assert result["radii"][radius]["Redis GEOSEARCH"]["qps"] > 0
    text = bench_places.report({"inprocess": result})
    assert "PostGIS ST_DWithin" in text and "Redis GEOSEARCH" in text
    assert "COPY + GiST" in text and "GEOADD" in text


def test_missing_servers_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks import places_engines

    monkeypatch.setattr("lookup.kit.engines.pgserver.postgres_bin", lambda: None)
    monkeypatch.setattr("lookup.kit.engines.redisserver.redis_available", lambda: False)
    why = places_engines.missing(["postgis", "redis"])
    assert "PostgreSQL is not installed" in why["postgis"]
    assert "redis-server is not installed" in why["redis"]
    with pytest.raises(SystemExit):  # refused unless asked to skip them
        bench_places.main(["--quick", "--only", "inprocess", "--data-dir", "/nonexistent"])


def test_dense_city_paths(data_dir: Path) -> None:
    city, paths = bench_places.dense_city_paths(data_dir, count=20)
    assert city and len(paths) == 20
    assert all(p.startswith("/v1/search?lat=") and p.endswith("&radius=2000") for p in paths)


def test_anchor_server_answers_the_given_body_and_stops(tmp_path: Path) -> None:
    body = tmp_path / "body.json"
    body.write_bytes(b'{"results":[],"radiusUsedM":2000,"nextCursor":null}')
    port = free_port()
    argv = [
        sys.executable,
        str(bench_places.THIS_FILE),
        "serve-anchor",
        "--port",
        str(port),
        "--body",
        str(body),
    ]
    with bench_places.server(argv, port, "/healthz", timeout_s=60) as url:
        answer = httpx.get(f"{url}/v1/search?lat=1&lng=2", timeout=10)
        assert answer.status_code == 200
        assert answer.content == body.read_bytes()
        assert answer.headers["content-type"] == "application/json"
    assert _closed(port)


@needs_wrk
def test_http_benchmark_runs_against_lookup_serve(data_dir: Path) -> None:
    result = bench_places.bench_http(data_dir, seconds=1, runs=1, connections=4, rate=50)
    assert result["rate"] == 50
    for name in ("anchor", "ours, cache on", "ours, cache off"):
        assert result[name]["rate"] > 0
        assert result[name]["errors"] == 0
        assert result[name]["ratio"] > 0 and result[name]["cpu_us"] > 0
        assert len(result[name]["load"]) == 1
        # the tail at a fixed offered load: its shape, never its speed
        fixed = result[name]["fixed"]
        assert fixed["errors"] == 0
        assert 0 < fixed["p50_ms"] <= fixed["p99_ms"] <= fixed["p999_ms"] <= fixed["max_ms"]
        assert fixed["achieved"] > 0 and len(fixed["runs_p99_ms"]) == 1
    assert result["anchor"]["ratio"] == 1.0
    assert result["body_bytes"] > 0
    text = bench_places.report({"http": result})
    assert "/v1/search" in text and "anchor" in text
    assert "p99 @50/s" in text and "CPU/req" in text and "load" in text
    assert f"p99 ≤ {bench_places.HTTP_P99_TARGET_MS:g} ms" in text
