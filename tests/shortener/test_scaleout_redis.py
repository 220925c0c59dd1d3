"""The shortener's Redis backends across real ``lookup serve`` processes.

* Invalidation everywhere: a link retargeted or disabled through process A stops being
  served from process B's L1 within a second (pub/sub), and the tier's fills are
  versioned so B never caches the old record again.
* Distributed rate limits are exact: 4 processes × 50 creates against one identity with
  capacity 20 and no refill admit exactly 20; with Redis stopped, password attempts are
  refused (fail closed) and creates follow each process's local share.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import httpx

from tests.shortener.redis_fleet import OWNER, create, fleet, metrics


def _location(client: httpx.Client, base: str, key: str) -> tuple[int, str | None]:
    resp = client.get(f"{base}/{key}")
    return resp.status_code, resp.headers.get("location")


def _until(check: Any, timeout: float) -> float:
    """Seconds until ``check()`` is true (polling every 5 ms); fails after ``timeout``."""
    start = time.perf_counter()
    while not check():
        if time.perf_counter() - start > timeout:
            raise AssertionError(f"not within {timeout} s")
        time.sleep(0.005)
    return time.perf_counter() - start


def test_a_change_through_one_process_reaches_the_others_within_a_second(
    tmp_path: Path, redis_server: Any
) -> None:
    env = {"LOOKUP_CACHE_URL": f"{redis_server.url}", "LOOKUP_SHORTENER_ANALYTICS": "0"}
    with fleet(tmp_path / "data", 2, env) as (a, b), httpx.Client(timeout=10) as client:
        assert metrics(client, a)["backends"]["cache"] == redis_server.url
        key = create(client, a, "https://example.com/old")
        assert _location(client, b, key) == (302, "https://example.com/old")
        assert _location(client, b, key) == (302, "https://example.com/old")  # B's L1 now
        hits = metrics(client, b)["cache"]["layers"]
        assert hits["l1"] >= 1

        patched = client.patch(
            f"{a}/v1/links/{key}", json={"longUrl": "https://example.com/new"}, headers=OWNER
        )
        assert patched.status_code == 200, patched.text
        retarget_s = _until(
            lambda: _location(client, b, key) == (302, "https://example.com/new"), 1.0
        )

        disabled = client.patch(f"{a}/v1/links/{key}", json={"status": "DISABLED"}, headers=OWNER)
        assert disabled.status_code == 200, disabled.text
        disable_s = _until(lambda: _location(client, b, key) == (403, None), 1.0)
        print(f"seen on B: retarget {retarget_s * 1e3:.1f} ms, disable {disable_s * 1e3:.1f} ms")

        heard = metrics(client, b)["cache"]
        assert heard["remoteInvalidations"]["keys"] >= 2
        assert heard["sharedTier"]["subscribed"] is True


def _creates(base: str, n: int) -> list[int]:
    with httpx.Client(timeout=30) as client:
        return [
            client.post(
                f"{base}/v1/links", json={"longUrl": f"https://example.com/{i}"}
            ).status_code
            for i in range(n)
        ]


def _in_parallel(bases: list[str], n: int) -> list[int]:
    results: list[list[int]] = [[] for _ in bases]
    threads = [
        threading.Thread(target=lambda i=i, b=b: results[i].extend(_creates(b, n)))
        for i, b in enumerate(bases)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    return [code for codes in results for code in codes]


def test_four_processes_share_one_exact_limit_and_each_outage_policy_holds(
    tmp_path: Path, own_redis: Any
) -> None:
    env = {
        "LOOKUP_LIMITS_URL": own_redis.url,
        # four servers over one data directory: a fleet only with a shared cache tier
        # (lookup serve holds server.lock, kit/serverlock.py)
        "LOOKUP_CACHE_URL": own_redis.url,
        "LOOKUP_SHORTENER_RATE_ANON": "20/86400",  # capacity 20, no refill within the test
        "LOOKUP_SHORTENER_RATE_PASSWORD": "1000/1",
        "LOOKUP_LIMITS_LOCAL_SHARE": "0.25",  # four processes: 5 each while Redis is out
        "LOOKUP_SHORTENER_ANALYTICS": "0",
    }
    with fleet(tmp_path / "data", 4, env) as bases, httpx.Client(timeout=10) as client:
        codes = _in_parallel(bases, 50)
        assert len(codes) == 200 and set(codes) <= {201, 429}
        assert codes.count(201) == 20  # the per-process limiters would have let 80 through

        locked = create(client, bases[0], "https://example.com/locked", password="s3cret-pass")
        wrong = client.post(f"{bases[1]}/{locked}", data={"password": "wrong"})
        assert wrong.status_code == 403 and "Wrong password" in wrong.text  # decided, not limited

        own_redis.stop()
        refused = [client.post(f"{b}/{locked}", data={"password": "guess"}) for b in bases]
        assert [r.status_code for r in refused] == [429] * 4  # password guessing fails closed
        assert all(r.json()["error"] == "RATE_LIMITED" for r in refused)

        during = [_creates(b, 8) for b in bases]  # fail open, to a local share of 20 × 0.25
        assert [codes.count(201) for codes in during] == [5, 5, 5, 5]
        assert all(set(codes) == {201, 429} for codes in during)

        limits = metrics(client, bases[0])["rateLimits"]
        assert limits["passwords"]["on_unavailable"] == "closed"
        assert limits["anonymous"]["on_unavailable"] == "local"
        assert limits["anonymous"]["localShare"] == 0.25
        assert limits["anonymous"]["outage"] is True and limits["anonymous"]["unavailable"] >= 8
        assert metrics(client, bases[0])["backends"]["limits"] == own_redis.url


def test_during_a_redis_outage_a_change_through_one_process_reaches_the_others_within_seconds(
    tmp_path: Path, own_redis: Any
) -> None:
    """With Redis down nobody hears invalidations: B must not keep trusting its L1 copy
    (for the 60 s of its TTL) while A has disabled the link."""
    env = {"LOOKUP_CACHE_URL": own_redis.url, "LOOKUP_SHORTENER_ANALYTICS": "0"}
    with fleet(tmp_path / "data", 2, env) as (a, b), httpx.Client(timeout=10) as client:
        key = create(client, a, "https://example.com/old")
        _until(lambda: metrics(client, b)["cache"]["sharedTier"]["subscribed"], 30.0)
        assert _location(client, b, key) == (302, "https://example.com/old")
        l1_before = metrics(client, b)["cache"]["layers"]["l1"]
        assert _location(client, b, key) == (302, "https://example.com/old")
        assert metrics(client, b)["cache"]["layers"]["l1"] == l1_before + 1  # B's L1 holds it

        own_redis.stop()
        _until(lambda: not metrics(client, b)["cache"]["sharedTier"]["subscribed"], 10.0)
        patched = client.patch(
            f"{a}/v1/links/{key}", json={"longUrl": "https://example.com/new"}, headers=OWNER
        )
        assert patched.status_code == 200, patched.text
        retarget_s = _until(
            lambda: _location(client, b, key) == (302, "https://example.com/new"), 5.0
        )
        disabled = client.patch(f"{a}/v1/links/{key}", json={"status": "DISABLED"}, headers=OWNER)
        assert disabled.status_code == 200, disabled.text
        disable_s = _until(lambda: _location(client, b, key) == (403, None), 5.0)
        print(
            f"\nRedis down: seen on B after retarget {retarget_s * 1e3:.0f} ms, "
            f"after disable {disable_s * 1e3:.0f} ms (L1 TTL while deaf: 1 s)"
        )
        own_redis.start()
        _until(lambda: metrics(client, b)["cache"]["sharedTier"]["subscribed"], 30.0)
        assert _location(client, b, key) == (403, None)
