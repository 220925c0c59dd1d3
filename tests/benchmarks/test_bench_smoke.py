"""The benchmark code paths at a tiny size, so they do not rot. No timing assertions:
only that servers start, answer correctly and stop, and that results have their shape."""

from __future__ import annotations

import socket
from pathlib import Path

import httpx
import pytest

from benchmarks import bench_redirect
from benchmarks.common import (
    BARE_LOCATION,
    ServerProcess,
    create_links,
    lua_get_script,
    lua_post_script,
    parse_wrk_output,
    wrk_path,
)

needs_wrk = pytest.mark.skipif(
    wrk_path() is None, reason="wrk is not installed (apt-get install wrk)"
)


def _port_is_closed(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1.0)
        return s.connect_ex(("127.0.0.1", port)) != 0


def test_visit_script_embeds_paths_and_header_sets() -> None:
    headers = bench_redirect.visitor_headers(50)
    assert len(headers) == 50 and all("User-Agent" in h for h in headers)
    assert bench_redirect.visitor_headers(50) == headers  # deterministic
    script = bench_redirect.lua_visit_script(["/abc1234"], [{"User-Agent": 'a "b" \\ c'}])
    assert '"/abc1234"' in script and '["User-Agent"] = "a \\"b\\" \\\\ c"' in script
    assert "WRK_JSON" in script
    with pytest.raises(ValueError):
        bench_redirect.lua_visit_script([], headers)
    with pytest.raises(ValueError):
        bench_redirect.lua_visit_script(["/x"], [{"User-Agent": "a\nb"}])


def test_lua_scripts_embed_paths_and_report_json() -> None:
    get = lua_get_script(["/abc1234", "/xyz9876"])
    assert '"/abc1234"' in get and '"/xyz9876"' in get and "WRK_JSON" in get
    post = lua_post_script("/v1/links", "run-1")
    assert '"/v1/links"' in post and '"run-1"' in post and "WRK_JSON" in post
    with pytest.raises(ValueError):
        lua_get_script(['/bad"path'])
    with pytest.raises(ValueError):
        lua_get_script([])


def test_parse_wrk_output_reads_the_done_line() -> None:
    out = (
        "Running 1s test @ http://127.0.0.1:1\n"
        'WRK_JSON {"requests":2000,"duration_us":1000000,"p50_us":1500,"p90_us":2500,'
        '"p99_us":7400,"max_us":9000,"connect":0,"read":1,"write":0,"status":2,"timeout":0}\n'
    )
    result = parse_wrk_output(out)
    assert result.requests == 2000
    assert result.rate == pytest.approx(2000.0)
    assert (result.p50_ms, result.p99_ms) == (1.5, 7.4)
    assert result.error_count == 3
    with pytest.raises(RuntimeError):
        parse_wrk_output("no summary here")


def test_servers_start_answer_and_stop(tmp_path: Path) -> None:
    with ServerProcess("bare") as bare:
        resp = httpx.get(f"{bare.url}/anything")
        assert resp.status_code == 302
        assert resp.headers["location"] == BARE_LOCATION
    assert _port_is_closed(bare.port)

    data_dir = tmp_path / "data"
    with ServerProcess("shortener", data_dir=data_dir, click_hook="noop") as ours:
        keys = create_links(ours.url, 3, concurrency=2)
        assert len(set(keys)) == 3
        resp = httpx.get(f"{ours.url}/{keys[0]}")
        assert resp.status_code == 302
        assert resp.headers["location"].startswith("https://example.com/articles/")
    assert _port_is_closed(ours.port)
    assert ours.info["hook"]["mode"] == "noop"
    assert ours.info["metrics"]["created"] == 3
    assert ours.info["metrics"]["clicks"]["emitted"] == 1

    with ServerProcess("insert-anchor", data_dir=data_dir) as anchor:
        resp = httpx.post(f"{anchor.url}/v1/links", json={"longUrl": "https://example.com/a"})
        assert resp.status_code == 201
        assert resp.json()["longUrl"] == "https://example.com/a"
    assert _port_is_closed(anchor.port)


def test_resolve_benchmark_reads_the_store_once() -> None:
    result = bench_redirect.bench_resolve(seconds=0.01, runs=1)
    assert {"dict.get", "lru_cache hit", "resolve"} <= result.keys()
    assert all(result[name]["rate"] > 0 for name in ("dict.get", "lru_cache hit", "resolve"))
    assert result["store_reads"] == 1  # the warm-up; every timed call was a cache hit
    assert result["l1_hits"] >= 10_000


def test_main_rejects_bad_arguments() -> None:
    with pytest.raises(SystemExit):
        bench_redirect.main(["--only", "nonsense"])
    with pytest.raises(SystemExit):
        bench_redirect.main(["--seconds", "0"])


def test_main_resolve_only_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_redirect.main(["--only", "resolve", "--seconds", "1", "--runs", "1"]) == 0
    out = capsys.readouterr().out
    assert "Resolver.resolve, hot key" in out
    assert "functools.lru_cache hit (anchor)" in out


@needs_wrk
def test_http_benchmarks_at_tiny_size() -> None:
    redirect = bench_redirect.bench_redirects(seconds=1, runs=1, keys=5, connections=4, warmup=0)
    for name in bench_redirect.REDIRECT_CONFIGS:
        assert redirect[name]["requests"] > 0
        assert redirect[name]["errors"] == 0
    assert redirect["metrics_hook_on"]["clicks"]["emitted"] > 0
    assert redirect["metrics_hook_on"]["analytics"]["aggregator"]["mode"] == "external"
    assert redirect["metrics_aggregator"]["analytics"]["aggregator"]["mode"] == "process"
    (catch_up,) = redirect["catch_up"]  # the external aggregator folded the 'hook on' run
    assert catch_up["records"] == catch_up["counted"] > 0 and catch_up["duplicates"] == 0
    assert redirect["aggregator_lag"][0]["caughtUpAfterS"] is not None
    assert redirect["metrics_hook_on"]["links"]["ACTIVE"] == 5
    creates = bench_redirect.bench_creates(seconds=1, runs=1, connections=4)
    assert creates["ours"]["requests"] > 0 and creates["ours"]["errors"] == 0
    assert creates["insert anchor"]["requests"] > 0
    assert creates["created_server_side"] >= creates["ours"]["requests"]
    text = bench_redirect.report({"redirect": redirect, "creates": creates})
    assert "bare Starlette 302 (anchor)" in text and "create over HTTP" in text
