"""Drill: ``kill -9`` of redis-server under redirect load through a real ``lookup serve``.

Redirects keep answering 302 — from the L1, and from the store for the keys that a
stream of retargets keeps pushing out of it — with no 5xx and a bounded p99, because the
cache tier's circuit breaker refuses calls at once instead of each paying a connect
timeout; after Redis is started again on the same port the tier is used again within
seconds. The figures are printed (``pytest -s``); only generous bounds are asserted.
"""

from __future__ import annotations

import random
import signal
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from tests.shortener.redis_fleet import OWNER, create, fleet, metrics

KEYS = 40
CLIENTS = 4


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class Load:
    """Redirect clients and a retargeter, each recording ``(t, status, seconds)``."""

    def __init__(self, base: str, keys: list[str]) -> None:
        self.base = base
        self.keys = keys
        self.stop = threading.Event()
        self.redirects: list[tuple[float, int, float]] = []
        self.patches: list[tuple[float, int, float]] = []
        self._lock = threading.Lock()
        self._threads = [
            threading.Thread(target=self._redirect, args=(i,), daemon=True) for i in range(CLIENTS)
        ]
        self._threads.append(threading.Thread(target=self._retarget, daemon=True))

    def __enter__(self) -> Load:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for thread in self._threads:
            thread.join(30)

    def _redirect(self, seed: int) -> None:
        rng = random.Random(seed)
        with httpx.Client(timeout=10) as client:
            while not self.stop.is_set():
                key = rng.choice(self.keys)
                t0 = time.perf_counter()
                try:
                    status = client.get(f"{self.base}/{key}").status_code
                except httpx.HTTPError:
                    status = 0
                with self._lock:
                    self.redirects.append((t0, status, time.perf_counter() - t0))

    def _retarget(self) -> None:
        rng = random.Random(99)
        with httpx.Client(timeout=10) as client:
            n = 0
            while not self.stop.wait(0.02):
                n += 1
                key = rng.choice(self.keys)
                t0 = time.perf_counter()
                try:
                    status = client.patch(
                        f"{self.base}/v1/links/{key}",
                        json={"longUrl": f"https://example.com/{key}/v{n}"},
                        headers=OWNER,
                    ).status_code
                except httpx.HTTPError:
                    status = 0
                with self._lock:
                    self.patches.append((t0, status, time.perf_counter() - t0))

    def window(self, start: float, end: float) -> list[tuple[float, int, float]]:
        with self._lock:
            return [r for r in self.redirects if start <= r[0] < end]


def test_redirects_survive_kill_9_of_redis_and_the_tier_comes_back(
    tmp_path: Path, own_redis: Any
) -> None:
    env = {"LOOKUP_CACHE_URL": own_redis.url, "LOOKUP_SHORTENER_ANALYTICS": "0"}
    with fleet(tmp_path / "data", 1, env) as (base,), httpx.Client(timeout=10) as client:
        keys = [create(client, base, f"https://example.com/{i}") for i in range(KEYS)]
        with Load(base, keys) as load:
            started_at = time.perf_counter()
            time.sleep(2.0)
            killed_at = time.perf_counter()
            own_redis.proc.send_signal(signal.SIGKILL)
            own_redis.proc.wait(10)
            time.sleep(3.0)
            outage = metrics(client, base)["cache"]
            fills_before = outage["sharedTier"]["fills"]
            restarted_at = time.perf_counter()
            own_redis.start()  # the same port, empty (no persistence)
            back_s = None
            while time.perf_counter() - restarted_at < 30:
                tier = metrics(client, base)["cache"]["sharedTier"]
                if tier["fills"] > fills_before and tier["breaker"]["state"] == "closed":
                    back_s = time.perf_counter() - restarted_at
                    break
                time.sleep(0.05)
            time.sleep(1.0)
        final = metrics(client, base)["cache"]

    before = [s for _, _, s in load.window(started_at, killed_at)]
    during = load.window(killed_at, restarted_at)
    everything = load.redirects
    statuses = {status for _, status, _ in everything}
    latencies = [s for _, _, s in during]
    p50, p99, worst = _p(latencies, 0.5), _p(latencies, 0.99), max(latencies)
    print(
        f"\nredis kill -9 drill: {len(everything)} redirects; before the kill p99 "
        f"{_p(before, 0.99) * 1e3:.2f} ms; {len(during)} during the outage "
        f"(p50 {p50 * 1e3:.2f} ms, p99 {p99 * 1e3:.2f} ms, max {worst * 1e3:.1f} ms), "
        f"{len(load.patches)} retargets; store reads during it "
        f"{final['store']['reads']}, breaker {outage['sharedTier']['breaker']}; "
        f"tier used again {back_s if back_s is None else round(back_s, 3)} s after the restart"
    )
    assert statuses == {302}, statuses  # never a 5xx, never a failed request
    assert {status for _, status, _ in load.patches} == {200}
    assert len(during) > 100
    assert p99 < 1.0  # a breaker, not a connect timeout per request
    assert outage["sharedTier"]["breaker"]["trips"] >= 1
    assert outage["sharedTier"]["breaker"]["shortCircuited"] > 0
    assert back_s is not None and back_s < 10.0
    assert final["sharedTier"]["resubscribes"] >= 1
