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

import inspect
import logging
import multiprocessing
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

from lookup.shortener.analytics import ClickAnalytics
from lookup.shortener.analytics.counts import SqliteClickCounts
from lookup.shortener.analytics.log_redis import RedisClickLog
from lookup.shortener.analytics.outage import OutageLog, SharedOutage
from lookup.shortener.model import ClickContext
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


#: The aggregator's idle poll (``ClickAnalytics``' configured ``aggregate_interval_s``).
POLL_S: float = inspect.signature(ClickAnalytics).parameters["aggregate_interval_s"].default


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
        # endpoint's fold): the 10 clicks of the outage were retried into the new stream.
        # It polls every POLL_S, but niced 19 on a loaded machine it waits for the CPU
        # (up to 19 s measured at load 12 with 3 busy loops): a generous multiple.
        while _stored_total(tmp_path / "data", key) != 40:
            assert time.monotonic() - restarted < 60 * POLL_S, _stored_total(tmp_path / "data", key)
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
    # process (the server and its aggregator child share one outage record), and not none
    # when the child was still starting while the stream was down (a loaded machine)
    assert len(outage_lines) == 1 and len(recovery_lines) == 1, text[-3000:]
    assert "skipped" in recovery_lines[0] or "round(s) failed" in recovery_lines[0]
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


OUTAGE_LINE = re.compile(r"click stream is unavailable")
BACK_LINE = re.compile(r"click stream is back after")


def test_the_server_reports_an_outage_its_silent_aggregator_child_never_saw(
    tmp_path: Path, own_redis: Any, caplog: Any, capfd: Any
) -> None:
    """The child polls the stream, but an outage can come and go while it is still
    starting or (niced on a busy machine) waiting for the CPU. Here it is alive and
    asleep (a one-hour poll interval) through the whole outage: the server, which did
    see it, must say so — not keep quiet because a child exists — and only once."""
    caplog.set_level(logging.INFO, logger="lookup.shortener.analytics")
    stream = f"silent-{uuid.uuid4().hex[:8]}"
    t0 = 1_700_000_000.0
    hours = (t0 - 3_600, t0 + 3_600, "hour")
    analytics = ClickAnalytics(
        tmp_path, b"s" * 32, ship_interval_s=0.05, aggregate_interval_s=3_600,
        aggregator="process", aggregator_nice=0,  # a quicker start on a loaded machine
        click_log=RedisClickLog(own_redis.url, stream=stream),
    )  # fmt: skip
    analytics.start()
    client = redis.Redis.from_url(own_redis.url)
    try:
        for i in range(5):
            analytics.buffer.offer(ClickContext("abc1234", t0 + i, "203.0.113.9", "x", None, ""))
        deadline = time.monotonic() + 120  # the child's start and first round, loaded
        while (
            analytics.aggregator.consumer_state()["counted"] < 5
            or client.xpending(stream, "aggregators")["pending"]
        ):
            assert time.monotonic() < deadline, analytics.stats()
            time.sleep(0.05)
        assert analytics._process is not None and analytics._process.is_alive()
        # the child folded and acknowledged its batch: it sleeps until told to stop
        own_redis.stop()
        for _ in range(3):
            down = analytics.click_stats("abc1234", *hours)
            assert down["liveTail"] == "unavailable"
        own_redis.start()
        assert analytics.click_stats("abc1234", *hours)["liveTail"] == "included"
    finally:
        client.close()
        analytics.stop()
        analytics.close()
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    lines += capfd.readouterr().err.splitlines()  # the child's, had it logged any
    assert sum(bool(OUTAGE_LINE.search(x)) for x in lines) == 1, lines
    assert sum(bool(BACK_LINE.search(x)) for x in lines) == 1, lines


def _outage_rounds_elsewhere(shared: SharedOutage, conn: Any) -> None:
    """In another process: an :class:`OutageLog` on ``shared`` runs each string of rounds
    it receives (``f`` failed, ``o`` ok) and sends back the lines it logged meanwhile."""
    said: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            said.append(record.getMessage())

    logger = logging.getLogger("outage-elsewhere")
    logger.addHandler(Keep())
    logger.propagate = False
    outage = OutageLog("the click stream", logger, shared=shared)
    for rounds in iter(conn.recv, None):
        for r in rounds:
            outage.failed(ConnectionError("refused")) if r == "f" else outage.ok()
        conn.send(said[:])
        said.clear()


class _Elsewhere:
    """The other process of :func:`_outage_rounds_elsewhere` (one spawn: imports are slow
    on a loaded machine)."""

    def __init__(self, shared: SharedOutage) -> None:
        context = multiprocessing.get_context("spawn")
        self.conn, theirs = context.Pipe()
        self.proc = context.Process(target=_outage_rounds_elsewhere, args=(shared, theirs))
        self.proc.start()
        theirs.close()

    def run(self, rounds: str) -> list[str]:
        self.conn.send(rounds)
        assert self.conn.poll(120), "the other process did not answer"
        said: list[str] = self.conn.recv()
        return said

    def close(self) -> None:
        self.conn.send(None)
        self.proc.join(30)
        assert self.proc.exitcode == 0


def test_one_outage_is_one_pair_of_lines_across_two_processes(caplog: Any) -> None:
    """Whichever process fails first logs the start; whichever succeeds first, the end."""
    caplog.set_level(logging.INFO, logger="outage-here")
    start = "the click stream is unavailable: refused; retrying quietly"
    back = r"the click stream is back after \d+\.\d s \({} round\(s\) failed and were retried\)"
    shared = SharedOutage()
    here = OutageLog("the click stream", logging.getLogger("outage-here"), shared=shared)
    there = _Elsewhere(shared)
    try:
        here.failed(ConnectionError("refused"))  # noticed here first: said here
        assert here.down and shared.down
        said = there.run("ffo")  # the rest of it over there, and its end
        assert len(said) == 1 and re.fullmatch(back.format(3), said[0]), said
        assert not here.down
        here.ok()  # its end was said over there
        assert there.run("f") == [start]  # a second outage, noticed over there
        assert here.down
        here.failed(ConnectionError("refused"))  # the same outage: nothing more
        here.ok()  # its end, seen here first
    finally:
        there.close()
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2 and lines[0] == start and re.fullmatch(back.format(2), lines[1]), lines
