"""Against a real ``lookup serve`` process: the alias race, the click-budget race, and SIGKILL.

These tests start the actual command on free loopback ports, so they exercise uvicorn,
the whole app and the SQLite file exactly as a user runs them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import free_port, lookup_serve

FAST_LIMITS = {
    "LOOKUP_SHORTENER_RATE_ANON": "100000/1",
    "LOOKUP_SHORTENER_RATE_OWNER": "100000/1",
    "LOOKUP_SHORTENER_RATE_IP": "100000/1",
}


def _serve(data_dir: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {**os.environ, **FAST_LIMITS}
    env.pop("LOOKUP_PUBLIC_URL", None)
    proc = lookup_serve(
        data_dir,
        port,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            raise RuntimeError(f"lookup serve exited with {proc.returncode}: {err[-2000:]}")
        try:
            if httpx.get(f"{url}/healthz", timeout=1.0).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise TimeoutError("lookup serve did not come up")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if proc.stderr:
        proc.stderr.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    proc, url = _serve(tmp_path_factory.mktemp("live") / "data")
    try:
        yield url
    finally:
        _stop(proc)


def _in_parallel(n: int, fn) -> list:  # type: ignore[no-untyped-def]
    barrier = threading.Barrier(n)
    results: list = [None] * n

    def run(i: int) -> None:
        with httpx.Client(timeout=30) as client:
            barrier.wait()
            results[i] = fn(client, i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_alias_race_over_real_http_has_exactly_one_winner(server: str) -> None:
    def claim(client: httpx.Client, i: int) -> tuple[int, dict]:
        resp = client.post(
            f"{server}/v1/links",
            json={"longUrl": f"https://example.com/claimant/{i}", "customAlias": "race-final"},
            headers={"Authorization": f"Bearer racer-token-{i:04d}-abcdefghij"},
        )
        return resp.status_code, resp.json()

    results = _in_parallel(32, claim)
    statuses = sorted(status for status, _ in results)
    assert statuses == [201] + [409] * 31
    assert all(body["error"] == "ALIAS_TAKEN" for status, body in results if status == 409)
    (winner,) = [body for status, body in results if status == 201]
    hop = httpx.get(f"{server}/race-final", follow_redirects=False)
    assert hop.status_code == 302 and hop.headers["location"] == winner["longUrl"]


def test_click_budget_race_over_real_http(server: str) -> None:
    created = httpx.post(
        f"{server}/v1/links", json={"longUrl": "https://example.com/limited", "maxClicks": 7}
    )
    key = created.json()["key"]

    def click(client: httpx.Client, i: int) -> int:
        return client.get(f"{server}/{key}", follow_redirects=False).status_code

    statuses = _in_parallel(32, click)
    assert statuses.count(302) == 7 and statuses.count(410) == 25


def test_sigkill_mid_stream_loses_no_acknowledged_link(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    proc, url = _serve(data_dir)
    acked: list[tuple[str, str]] = []
    failures: list[str] = []
    stop = threading.Event()
    lock = threading.Lock()

    def writer(w: int) -> None:
        with httpx.Client(timeout=10) as client:
            i = 0
            while not stop.is_set():
                long_url = f"https://example.com/w{w}/n{i}"
                i += 1
                try:
                    resp = client.post(f"{url}/v1/links", json={"longUrl": long_url})
                except httpx.HTTPError as exc:
                    failures.append(type(exc).__name__)
                    return  # the server is gone
                if resp.status_code == 201:
                    with lock:
                        acked.append((resp.json()["key"], long_url))

    writers = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    try:
        for t in writers:
            t.start()
        deadline = time.monotonic() + 60
        while len(acked) < 300 and time.monotonic() < deadline:
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)  # no shutdown hooks, no checkpoint, no goodbye
        proc.wait(timeout=10)
        time.sleep(0.2)  # let every writer run into the dead server
    finally:
        stop.set()
        for t in writers:
            t.join(timeout=30)
        _stop(proc)
    assert len(acked) >= 300
    assert failures  # writers were mid-stream when the process died

    proc, url = _serve(data_dir)
    try:
        with httpx.Client(timeout=10) as client:
            lost = []
            for key, long_url in acked:
                hop = client.get(f"{url}/{key}", follow_redirects=False)
                if hop.status_code != 302 or hop.headers.get("location") != long_url:
                    lost.append((key, hop.status_code))
            assert lost == []
            fresh = [
                client.post(
                    f"{url}/v1/links", json={"longUrl": "https://example.com/after"}
                ).json()["key"]
                for _ in range(20)
            ]
        assert not set(fresh) & {key for key, _ in acked}  # the allocator never reissues an id
    finally:
        _stop(proc)
