"""Drill: two aggregators in one consumer group of the Redis click stream; SIGKILL one
in the middle of a batch.

A real ``lookup serve`` ships its clicks to a Redis stream (``LOOKUP_CLICKS_URL``,
aggregator ``external``); two ``python -m lookup.shortener.analytics --consumer`` jobs
consume it as one group, each pausing between taking a batch and folding it
(``LOOKUP_CLICKS_FOLD_DELAY``, so the batch in flight is observable as the victim's
pending entries). The victim is killed while it has entries pending; the survivor claims
them once they idle past ``LOOKUP_CLICKS_CLAIM_IDLE``; the final counts equal the
redirects served, humans and bots apart.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from lookup.shortener.analytics.aggregate import ClickAggregator
from lookup.shortener.analytics.log_redis import RedisClickLog
from tests.conftest import ROOT
from tests.shortener.redis_fleet import ADMIN, create, fleet

HUMAN_UA = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/124.0 Safari/537.36"
)
BOT_UA = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"


def _aggregator(data_dir: Path, consumer: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "lookup.shortener.analytics", "--data-dir", str(data_dir),
         "--consumer", consumer, "--interval", "0.1"],
        cwd=ROOT, env={**os.environ, **env},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


def _serve(client: httpx.Client, base: str, keys: list[str], n: int, ua: str) -> dict[str, int]:
    served = dict.fromkeys(keys, 0)
    for i in range(n):
        key = keys[i % len(keys)]
        resp = client.get(f"{base}/{key}", headers={"User-Agent": ua})
        assert resp.status_code == 302
        served[key] += 1
    return served


def _wait(check: Any, timeout: float, what: str) -> float:
    start = time.monotonic()
    while not check():
        assert time.monotonic() - start < timeout, f"{what}: not within {timeout} s"
        time.sleep(0.05)
    return time.monotonic() - start


def test_a_consumer_killed_mid_batch_loses_no_click_and_counts_none_twice(
    tmp_path: Path, redis_server: Any
) -> None:
    stream = f"drill-{uuid.uuid4().hex[:8]}"
    url = f"{redis_server.url}?stream={stream}"
    data = tmp_path / "data"
    env = {
        "LOOKUP_CLICKS_URL": url,
        "LOOKUP_CLICKS_CLAIM_IDLE": "2",
        "LOOKUP_CLICKS_FOLD_DELAY": "0.5",
    }
    api_env = {**env, "LOOKUP_SHORTENER_AGGREGATOR": "external"}
    log = RedisClickLog.from_url(url)
    start_ts = time.time() - 3600
    with fleet(data, 1, api_env) as (base,), httpx.Client(timeout=10) as client:
        metrics = client.get(f"{base}/v1/shortener/metrics", headers=ADMIN).json()
        assert metrics["backends"]["clicks"].endswith(f"stream {stream}")
        keys = [create(client, base, f"https://example.com/{i}") for i in range(4)]
        victim = _aggregator(data, "agg-victim", env)
        survivor = _aggregator(data, "agg-survivor", env)
        try:
            humans = dict.fromkeys(keys, 0)
            bots = dict.fromkeys(keys, 0)
            deadline = time.monotonic() + 90
            # traffic until the victim holds a batch in flight: entries delivered, not acked
            while log.pending().get("agg-victim", 0) == 0:
                assert time.monotonic() < deadline, "the victim never took a batch"
                for served_now, kind in ((humans, HUMAN_UA), (bots, BOT_UA)):
                    for key, n in _serve(client, base, keys, 8, kind).items():
                        served_now[key] += n
            victim.kill()
            victim.wait(10)
            orphaned = log.pending().get("agg-victim", 0)
            more = _serve(client, base, keys, 80, HUMAN_UA)  # the survivor goes on alone
            for key, n in more.items():
                humans[key] += n
            served = sum(humans.values()) + sum(bots.values())

            stats_path = data / "shortener" / "clickstats.sqlite3"
            reader = ClickAggregator(stats_path, log)

            def totals() -> dict[str, dict[str, int]]:
                end = time.time() + 3600
                return {k: reader.stats(k, start_ts, end)["totals"] for k in keys}

            took = _wait(
                lambda: sum(t["total"] for t in totals().values()) >= served, 120, "all counted"
            )
            _wait(lambda: not log.pending(), 60, "nothing left pending")
            time.sleep(1.0)  # anything counted twice would show now
            final = totals()
            state = reader.consumer_state()
            reader.close()
            metrics = client.get(f"{base}/v1/shortener/metrics", headers=ADMIN).json()
            pipeline = metrics["analytics"]["log"]
        finally:
            for proc in (victim, survivor):
                if proc.poll() is None:
                    proc.terminate()
                    proc.wait(15)
    print(
        f"\nclick stream drill: {served} redirects served; the victim died with {orphaned} "
        f"entries pending; counted {state['counted']}, redeliveries skipped "
        f"{state['duplicates']}; all counted {took:.2f} s after the last wave"
    )
    assert orphaned > 0
    for key in keys:
        assert final[key]["clicks"] == humans[key], key  # humans, exactly once
        assert final[key]["bots"] == bots[key], key
        assert final[key]["total"] == humans[key] + bots[key], key
    assert state["counted"] == served
    assert log.dead_letter_count() == 0  # a redelivery is not a poison entry
    # the stream held everything: the metrics say no click was lost to retention
    assert pipeline["lostToRetention"] == 0 and pipeline["undelivered"] == 0, pipeline
    log.close()
