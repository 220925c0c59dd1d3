"""A fixed offered load: requests sent on a schedule, whatever pace the server keeps.

``wrk`` is a closed loop: each of its connections sends the next request only once the
last one is answered, so a server that stalls for 300 ms also stops the clock that would
have sent the requests of those 300 ms (coordinated omission), and its p99 at saturation
mostly measures the queue of 32 connections. Here request *i* is due at
``start + i / rate``; it goes out on the first free keep-alive connection (a request
waits in line while every connection is busy, as it would at a real server's door), and
its latency is counted **from the time it was due**, not from when it could be sent. A
stall therefore shows as the latencies of every request due during it, and p99 at a load
the server can carry is the tail users would see.

The client is asyncio (uvloop when installed) with httptools parsing the answers: about
20 µs of CPU per request, so a few thousand requests per second cost a fraction of a
core. ``send_lag_p99_ms`` says how late the client itself put requests in line (its own
health on a busy machine); ``late`` counts requests that could not be answered before the
run's end plus the request timeout, and ``errors`` other failures (non-2xx/3xx answers,
broken connections).

    python benchmarks/fixed_rate.py http://127.0.0.1:8000 /v1/suggest?q=a --rate 2000 --seconds 5
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from statistics import median
from typing import Any
from urllib.parse import urlsplit

import numpy as np

__all__ = ["FixedRateResult", "cpu_seconds", "fixed_summary", "run_fixed_rate", "server_pid"]


@dataclass(frozen=True)
class FixedRateResult:
    """One fixed-rate run: what was offered, what was answered, and how fast."""

    rate: float  # offered requests per second
    seconds: float  # how long requests were offered
    sent: int  # requests offered (rate × seconds)
    completed: int  # answered with a 2xx or 3xx status
    errors: int  # other statuses, broken connections
    late: int  # not answered within the run plus the request timeout
    p50_ms: float
    p90_ms: float
    p99_ms: float
    p999_ms: float
    max_ms: float
    send_lag_p99_ms: float  # how late the client itself put requests in line
    load_average: float  # the machine's 1-minute load average at the end

    @property
    def achieved(self) -> float:
        """Answered requests per second of offered time."""
        return self.completed / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        """The figures as a plain dict (for JSON), with :attr:`achieved`."""
        return {**asdict(self), "achieved": self.achieved}


class _Connection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection: one request at a time, answers parsed by httptools."""

    def __init__(self) -> None:
        import httptools

        self._parser = httptools.HttpResponseParser(self)
        self._error = httptools.HttpParserError
        self.transport: asyncio.Transport | None = None
        self.waiter: asyncio.Future[int] | None = None
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except self._error as exc:
            self._fail(ConnectionError(f"bad answer: {exc}"))
            if self.transport is not None:
                self.transport.close()

    def on_message_complete(self) -> None:  # httptools callback
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(int(self._parser.get_status_code()))

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._fail(ConnectionError(str(exc or "connection closed")))

    def _fail(self, exc: Exception) -> None:
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)

    def request(self, raw: bytes) -> asyncio.Future[int]:
        """Send one request; the future gets the answer's status code."""
        assert self.transport is not None
        self.waiter = asyncio.get_running_loop().create_future()
        self.transport.write(raw)
        return self.waiter


async def _offer(
    url: str, paths: Sequence[str], rate: float, seconds: float, connections: int,
    timeout_s: float, seed: int,
) -> FixedRateResult:  # fmt: skip
    loop = asyncio.get_running_loop()
    split = urlsplit(url)
    host, port = split.hostname or "127.0.0.1", split.port or 80
    host_header = split.netloc.encode("ascii")
    rng = random.Random(seed)
    total = max(1, round(rate * seconds))
    requests = [
        b"GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (rng.choice(paths).encode("ascii"), host_header)
        for _ in range(total)
    ]
    due = np.empty(total)
    latency = np.full(total, np.nan)
    status = np.zeros(total, dtype=np.int32)  # 0: not answered; -1: failed; -2: timed out
    lag = np.zeros(total)
    line: asyncio.Queue[int | None] = asyncio.Queue()
    pool: list[_Connection] = []
    clock = time.perf_counter  # uvloop's loop.time() moves in whole milliseconds

    async def connect() -> _Connection:
        _, conn = await loop.create_connection(_Connection, host, port)
        pool.append(conn)
        return conn

    async def worker(conn: _Connection | None) -> None:
        while True:
            i = await line.get()
            if i is None:
                return
            try:
                if conn is None or conn.closed:
                    conn = await connect()
                code = await asyncio.wait_for(conn.request(requests[i]), timeout_s)
                latency[i] = clock() - due[i]
                status[i] = code
            except OSError as exc:  # TimeoutError is one
                status[i] = -2 if isinstance(exc, TimeoutError) else -1
                if conn is not None and conn.transport is not None:
                    conn.transport.close()
                conn = None

    # the connections are open before the clock starts (a worker reconnects if one breaks)
    opened = [await connect() for _ in range(connections)]
    workers = [asyncio.ensure_future(worker(conn)) for conn in opened]
    start = clock() + 0.02
    for i in range(total):
        due[i] = start + i / rate
    queued = 0
    while queued < total:
        now = clock()
        while queued < total and due[queued] <= now:
            lag[queued] = now - due[queued]
            line.put_nowait(queued)
            queued += 1
        if queued < total:
            await asyncio.sleep(max(0.0, due[queued] - clock()))
    for _ in workers:
        line.put_nowait(None)
    await asyncio.wait(workers, timeout=timeout_s + 1.0)
    for w in workers:
        w.cancel()
    for conn in pool:
        if conn.transport is not None:
            conn.transport.close()
    ok = (status >= 200) & (status < 400)
    answered = latency[ok] * 1000.0
    pct = (np.percentile(answered, [50, 90, 99, 99.9]) if len(answered)
           else np.full(4, np.nan))  # fmt: skip
    return FixedRateResult(
        rate=rate,
        seconds=seconds,
        sent=total,
        completed=int(ok.sum()),
        errors=int(((status != 0) & ~ok & (status != -2)).sum()),
        late=int(((status == 0) | (status == -2)).sum()),
        p50_ms=float(pct[0]),
        p90_ms=float(pct[1]),
        p99_ms=float(pct[2]),
        p999_ms=float(pct[3]),
        max_ms=float(answered.max()) if len(answered) else float("nan"),
        send_lag_p99_ms=float(np.percentile(lag, 99)) * 1000.0,
        load_average=os.getloadavg()[0],
    )


def server_pid(port: int) -> int | None:
    """The process whose command line says ``--port PORT`` (a server a benchmark started),
    from ``/proc``; None if there is none (or not on Linux)."""
    wanted = str(port)
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                args = fh.read().decode(errors="replace").split("\0")
        except OSError:
            continue
        if any(a == "--port" and b == wanted for a, b in zip(args, args[1:], strict=False)):
            return int(entry)
    return None


def cpu_seconds(pid: int | None) -> float:
    """User + system CPU seconds of a process and all its threads (0 if unknown)."""
    if pid is None:
        return 0.0
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_fixed_rate(
    url: str,
    paths: Sequence[str],
    *,
    rate: float,
    seconds: float,
    connections: int = 64,
    timeout_s: float = 5.0,
    seed: int = 1,
) -> FixedRateResult:
    """Offer ``rate`` GET requests per second for ``seconds`` to ``url`` (paths drawn from
    ``paths``) over at most ``connections`` keep-alive connections; latency counted from
    each request's due time (see the module docstring)."""
    if rate <= 0 or seconds <= 0 or connections < 1 or not paths:
        raise ValueError("rate, seconds and connections must be positive, paths non-empty")
    offer = _offer(url, list(paths), rate, seconds, connections, timeout_s, seed)
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop comes with uvicorn[standard]
        return asyncio.run(offer)
    # uvloop (less client CPU per request) in a thread of its own: on Python 3.11 a uvloop
    # run leaves its thread's recursion count off, and a later compile() there fails
    # ("AST constructor recursion depth mismatch")
    done: list[FixedRateResult | BaseException] = []

    def run() -> None:
        try:
            done.append(uvloop.run(offer))
        except BaseException as exc:  # handed to the caller below
            done.append(exc)

    thread = threading.Thread(target=run, name="fixed-rate-client")
    thread.start()
    thread.join()
    if isinstance(done[0], BaseException):
        raise done[0]
    return done[0]


def main(argv: Sequence[str] | None = None) -> int:
    """``fixed_rate.py URL PATH... --rate R --seconds S``: print one run's figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url")
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--connections", type=int, default=64)
    args = parser.parse_args(argv)
    started = time.monotonic()
    result = run_fixed_rate(args.url, args.paths, rate=args.rate, seconds=args.seconds,
                            connections=args.connections)  # fmt: skip
    for key, value in result.as_dict().items():
        print(f"{key:>16}: {value:.3f}" if isinstance(value, float) else f"{key:>16}: {value}")
    print(f"{'took':>16}: {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())


def fixed_summary(runs: Sequence[FixedRateResult]) -> dict[str, Any]:
    """The median fixed-rate figures over runs (late and errors summed)."""
    return {
        "p50_ms": median(r.p50_ms for r in runs),
        "p99_ms": median(r.p99_ms for r in runs),
        "p999_ms": median(r.p999_ms for r in runs),
        "max_ms": median(r.max_ms for r in runs),
        "achieved": median(r.achieved for r in runs),
        "late": sum(r.late for r in runs),
        "errors": sum(r.errors for r in runs),
        "send_lag_p99_ms": median(r.send_lag_p99_ms for r in runs),
        "runs_p99_ms": [round(r.p99_ms, 2) for r in runs],
    }
