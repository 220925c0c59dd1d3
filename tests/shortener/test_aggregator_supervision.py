"""Drill: ``kill -9`` of the click aggregator child of a real ``lookup serve``.

The server supervises its aggregator process: a dead child is restarted with back-off,
``/healthz`` reports the shortener degraded while it is down (with the restart count),
and SIGTERM stops the server promptly even when the child died — before, ``Event.set()``
waited for ever on the dead child's wake-up acknowledgement and the server never exited.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import psutil

from tests.conftest import free_port, lookup_serve, wait_http


@contextmanager
def _serve(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    port = free_port()
    env = {**os.environ, "LOOKUP_SHORTENER_AGGREGATOR": "process", "LOOKUP_SHORTENER_SCANNER": "0"}
    env.pop("LOOKUP_PUBLIC_URL", None)
    with (tmp_path / "serve.log").open("wb") as out:
        proc = lookup_serve(tmp_path / "data", port, env=env, stdout=out, stderr=subprocess.STDOUT)
        base = f"http://127.0.0.1:{port}"
        try:
            wait_http(f"{base}/healthz", proc, timeout=120)
            yield proc, base
        finally:
            if proc.poll() is None:
                for child in _children(proc):
                    child.kill()
                proc.kill()
                proc.wait()


def _children(proc: subprocess.Popen[bytes]) -> list[psutil.Process]:
    try:
        return psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _aggregator(proc: subprocess.Popen[bytes]) -> psutil.Process | None:
    """The aggregator child (multiprocessing spawn; not its resource tracker)."""
    for child in _children(proc):
        try:
            if any("spawn_main" in part for part in child.cmdline()):
                return child
        except psutil.NoSuchProcess:
            continue
    return None


def _started_aggregator(proc: subprocess.Popen[bytes], base: str) -> psutil.Process:
    """Click a link so the lazily started aggregator runs; its process."""
    created = httpx.post(f"{base}/v1/links", json={"longUrl": "https://example.org/a"})
    assert created.status_code == 201, created.text
    assert httpx.get(f"{base}/{created.json()['key']}").status_code == 302
    deadline = time.monotonic() + 30
    while (child := _aggregator(proc)) is None:
        assert time.monotonic() < deadline, "the aggregator process never started"
        time.sleep(0.05)
    return child


def _wait_idle(child: psutil.Process, timeout: float = 60.0) -> None:
    """Wait until ``child`` has started and idles (no CPU used for a second)."""
    deadline = time.monotonic() + timeout
    before = sum(child.cpu_times()[:2])
    while time.monotonic() < deadline:
        time.sleep(1.0)
        now = sum(child.cpu_times()[:2])
        if now == before:
            return
        before = now
    raise AssertionError("the aggregator never went idle")


def _kill9(child: psutil.Process) -> None:
    """``kill -9`` the child and wait until it is dead (a zombie until its parent reaps it)."""
    child.kill()
    deadline = time.monotonic() + 10
    while True:
        try:
            if child.status() == psutil.STATUS_ZOMBIE:
                return
        except psutil.NoSuchProcess:
            return
        assert time.monotonic() < deadline, "the child did not die"
        time.sleep(0.02)


def _shortener_health(base: str) -> dict[str, Any]:
    return httpx.get(f"{base}/healthz", timeout=10).json()["systems"]["shortener"]  # type: ignore[no-any-return]


def test_a_killed_aggregator_is_restarted_and_health_says_so(tmp_path: Path) -> None:
    with _serve(tmp_path) as (proc, base):
        child = _started_aggregator(proc, base)
        health = _shortener_health(base)
        assert health["status"] == "ready"
        assert health["aggregator"]["alive"] is True and health["aggregator"]["restarts"] == 0
        _kill9(child)
        killed = time.monotonic()
        seen_degraded: dict[str, Any] | None = None
        deadline = killed + 30
        while True:
            health = _shortener_health(base)
            if health["status"] == "degraded" and seen_degraded is None:
                seen_degraded = health
            fresh = _aggregator(proc)
            if fresh is not None and fresh.pid != child.pid and health["status"] == "ready":
                break
            assert time.monotonic() < deadline, health
            time.sleep(0.05)
        back_in = time.monotonic() - killed
    print(f"\naggregator kill -9: restarted and healthy {back_in:.2f} s later; {health}")
    assert seen_degraded is not None, "health never said the aggregator was down"
    assert seen_degraded["aggregator"]["alive"] is False
    assert health["aggregator"]["restarts"] == 1
    assert health["aggregator"]["alive"] is True
    assert health["aggregator"]["pid"] == fresh.pid


def test_sigterm_stops_the_server_after_its_aggregator_was_killed(tmp_path: Path) -> None:
    with _serve(tmp_path) as (proc, base):
        child = _started_aggregator(proc, base)
        _wait_idle(child)  # in its loop, waiting on its stop signal, when it dies
        _kill9(child)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
        took = time.monotonic() - t0
        code = proc.poll()
        leftovers = [c for c in _children(proc) if c.is_running()]
    print(f"\nSIGTERM after the aggregator's kill -9: exit {code} in {took:.2f} s")
    assert code is not None, f"lookup serve still running {took:.0f} s after SIGTERM"
    assert code == 143
    assert took < 15
    assert not leftovers
