"""Drill: the click stream's Redis restarts empty under a running ``lookup serve``.

The dashboard's "stop the cache tier" drill does this: redis-server stops (a real outage,
persistence off) and starts again on the same port with nothing in it — no stream, no
consumer group. The aggregators must notice the group is gone and create it again, count
the clicks made since (those shipped during the outage included: the shipper retries
them), say how many clicks the reset took with it (never silently), answer the stats
endpoint all along without a 500, and log the outage once and its recovery once — not a
traceback per poll. The figures are printed (``pytest -s``).
"""

from __future__ import annotations

import os
import re
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import redis

from lookup.shortener.analytics.counts import SqliteClickCounts
from tests.conftest import free_port, lookup_serve, wait_http
from tests.shortener.redis_fleet import ADMIN, ADMIN_TOKEN, OPEN_LIMITS, OWNER, create


@contextmanager
def _serve(data: Path, log_path: Path, env: dict[str, str]) -> Iterator[str]:
    """One real ``lookup serve`` with ``env``, its stdout and stderr in ``log_path``."""
    port = free_port()
    full = {**os.environ, **OPEN_LIMITS, "LOOKUP_SHORTENER_SCANNER": "0",
            "LOOKUP_ADMIN_TOKEN": ADMIN_TOKEN, **env}  # fmt: skip
    full.pop("LOOKUP_PUBLIC_URL", None)
    with log_path.open("wb") as out:
        proc = lookup_serve(data, port, env=full, stdout=out, stderr=subprocess.STDOUT)
        base = f"http://127.0.0.1:{port}"
        try:
            wait_http(f"{base}/healthz", proc, timeout=120)
            yield base
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _click(client: httpx.Client, base: str, key: str, n: int) -> None:
    for _ in range(n):
        assert client.get(f"{base}/{key}").status_code == 302


def _stored_total(data: Path, key: str) -> int:
    """All clicks of ``key`` in the counts store, read directly (nothing folded)."""
    counts = SqliteClickCounts(data / "shortener" / "clickstats.sqlite3")
    try:
        return sum(n for _b, dim, _v, n in counts.counts(key, "h", 0, 2**40) if dim == "all")
    finally:
        counts.close()


class StatsProbe:
    """Reads a link's stats, remembering every status code it ever got."""

    def __init__(self, client: httpx.Client, base: str, key: str) -> None:
        self.client, self.base, self.key = client, base, key
        self.statuses: list[int] = []
        self.last: dict[str, Any] = {}

    def total(self) -> int | None:
        resp = self.client.get(f"{self.base}/v1/links/{self.key}/stats", headers=OWNER)
        self.statuses.append(resp.status_code)
        self.last = resp.json()
        if resp.status_code != 200:
            return None
        return int(self.last["totals"]["total"])

    def wait_total(self, want: int, timeout: float) -> float:
        start = time.monotonic()
        while self.total() != want:
            assert time.monotonic() - start < timeout, (want, self.last, self.statuses[-5:])
            time.sleep(0.1)
        return time.monotonic() - start


def test_clicks_are_counted_again_after_redis_restarts_empty(
    tmp_path: Path, own_redis: Any
) -> None:
    url = f"{own_redis.url}?stream=reset-{uuid.uuid4().hex[:8]}"
    log_path = tmp_path / "serve.log"
    env = {"LOOKUP_CLICKS_URL": url, "LOOKUP_SHORTENER_AGGREGATOR": "process"}
    with _serve(tmp_path / "data", log_path, env) as base, httpx.Client(timeout=15) as client:
        key = create(client, base, "https://example.com/reset")
        probe = StatsProbe(client, base, key)
        _click(client, base, key, 20)
        probe.wait_total(20, 30)

        own_redis.stop()  # the outage: clicks go on, the stream is unreachable
        _click(client, base, key, 10)
        outage_end = time.monotonic() + 3
        while time.monotonic() < outage_end:
            probe.total()  # must not 500 while the stream is down
            time.sleep(0.2)
        during = dict(probe.last)

        own_redis.start()  # same port, empty: no stream, no group
        restarted = time.monotonic()
        _click(client, base, key, 10)
        # the aggregator child counts on its own (the stored counts, read without the stats
        # endpoint's fold): the 10 clicks of the outage were retried into the new stream
        while _stored_total(tmp_path / "data", key) != 40:
            assert time.monotonic() - restarted < 30, _stored_total(tmp_path / "data", key)
            time.sleep(0.1)
        recovered_in = time.monotonic() - restarted
        probe.wait_total(40, 30)
        time.sleep(3)  # keep polling quietly: a NOGROUP loop would fill the log now
        for _ in range(10):
            probe.total()
        _click(client, base, key, 5)
        probe.wait_total(45, 30)
        metrics = client.get(f"{base}/v1/shortener/metrics", headers=ADMIN).json()
    text = log_path.read_text(errors="replace")
    nogroup = sum("NOGROUP" in line for line in text.splitlines())
    tracebacks = text.count("Traceback")
    outage_lines = re.findall(r"^.*click stream is unavailable.*$", text, re.M)
    recovery_lines = re.findall(r"^.*click stream is back.*$", text, re.M)
    print(
        f"\nredis restart drill: counted again {recovered_in:.2f} s after the restart; "
        f"stats statuses {sorted(set(probe.statuses))}; log: {nogroup} NOGROUP lines, "
        f"{tracebacks} tracebacks, {len(outage_lines)} outage, {len(recovery_lines)} recovery"
    )
    assert 500 not in probe.statuses
    assert set(probe.statuses) <= {200}, probe.statuses
    assert during.get("liveTail") == "unavailable", during
    assert nogroup == 0, text[-3000:]
    assert tracebacks == 0, text[-3000:]
    # one outage, one line at its start and one at its end: not one per poll, nor one per
    # process (the aggregator child reports; the server logs its own view at INFO)
    assert len(outage_lines) == 1 and len(recovery_lines) == 1, text[-3000:]
    assert "skipped" in recovery_lines[0] or "round(s) failed" in recovery_lines[0]
    assert recovered_in < 20
    pipeline = metrics["analytics"]["log"]
    assert pipeline["lostToReset"] == 0, pipeline
    assert pipeline["resets"] >= 1, pipeline


def test_clicks_lost_with_the_stream_are_counted_as_lost(tmp_path: Path, own_redis: Any) -> None:
    """Clicks shipped to the stream but not yet counted when it is wiped (``FLUSHALL``
    stands for a restart without persistence) are reported as lost, exactly."""
    url = f"{own_redis.url}?stream=flush-{uuid.uuid4().hex[:8]}"
    # external: nothing here folds the stream except a stats read, so shipped clicks wait
    env = {"LOOKUP_CLICKS_URL": url, "LOOKUP_SHORTENER_AGGREGATOR": "external"}
    with (
        _serve(tmp_path / "data", tmp_path / "serve.log", env) as base,
        httpx.Client(timeout=15) as client,
    ):
        key = create(client, base, "https://example.com/flush")
        probe = StatsProbe(client, base, key)
        _click(client, base, key, 5)
        probe.wait_total(5, 30)
        _click(client, base, key, 7)

        def shipped() -> int:
            m = client.get(f"{base}/v1/shortener/metrics", headers=ADMIN).json()
            return int(m["analytics"]["shipper"]["shipped"])

        deadline = time.monotonic() + 20
        while shipped() < 12:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        redis.Redis.from_url(own_redis.url).flushall()  # the 7 go with it
        _click(client, base, key, 3)
        probe.wait_total(8, 30)
        metrics = client.get(f"{base}/v1/shortener/metrics", headers=ADMIN).json()
    pipeline = metrics["analytics"]["log"]
    print(f"\nFLUSHALL drill: {pipeline}")
    assert pipeline["lostToReset"] == 7, pipeline
    assert pipeline["resets"] == 1, pipeline  # one reset, however many ways it was noticed
    assert 500 not in probe.statuses
