"""``benchmarks/fixed_rate.py``: the open-loop client's figures have their shape.

No timing assertions: a real server answers on loopback, and the test checks what is
counted (every request offered once, answered or counted late), that latency is measured
from each request's due time (a server that stalls shows it), and the report's keys.
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from benchmarks.fixed_rate import cpu_seconds, run_fixed_rate, server_pid
from lookup.kit.ports import free_port

BODY = b'{"ok":true}'


class StallingServer:
    """A tiny HTTP/1.1 keep-alive server in a thread; ``stall_s`` delays one answer."""

    def __init__(self, stall_after: int | None = None, stall_s: float = 0.0) -> None:
        self.port = free_port()
        self.answered = 0
        self.stall_after, self.stall_s = stall_after, stall_s
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._ready = threading.Event()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(
            asyncio.start_server(self._serve, "127.0.0.1", self.port)
        )
        self._ready.set()
        self._loop.run_forever()
        server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while await reader.readuntil(b"\r\n\r\n"):
                self.answered += 1
                if self.stall_after is not None and self.answered == self.stall_after:
                    await asyncio.sleep(self.stall_s)  # the whole server stalls
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                    b"content-length: %d\r\n\r\n%s" % (len(BODY), BODY)
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    def __enter__(self) -> StallingServer:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


@pytest.fixture()
def steady() -> Iterator[StallingServer]:
    with StallingServer() as server:
        yield server


def test_every_request_offered_is_answered_once(steady: StallingServer) -> None:
    result = run_fixed_rate(
        f"http://127.0.0.1:{steady.port}", ["/a", "/b?x=1"], rate=200, seconds=1.0, connections=4
    )
    assert result.sent == 200 == result.completed == steady.answered
    assert result.errors == 0 and result.late == 0
    assert 0 < result.p50_ms <= result.p90_ms <= result.p99_ms <= result.p999_ms
    assert result.p999_ms <= result.max_ms
    assert result.achieved == pytest.approx(200.0)
    figures = result.as_dict()
    assert set(figures) >= {
        "rate",
        "sent",
        "completed",
        "errors",
        "late",
        "p50_ms",
        "p99_ms",
        "max_ms",
        "send_lag_p99_ms",
        "load_average",
        "achieved",
    }


def test_a_stall_shows_in_the_requests_due_during_it() -> None:
    """The requests due while the server stalls wait in line and count their wait: the
    maximum is at least most of the stall (a closed loop would hide it)."""
    with StallingServer(stall_after=20, stall_s=0.4) as server:
        result = run_fixed_rate(
            f"http://127.0.0.1:{server.port}", ["/"], rate=100, seconds=1.0, connections=1
        )
    assert result.completed == result.sent == 100
    assert result.max_ms >= 300.0
    assert result.p99_ms >= 100.0  # more than one request was due during the stall


def test_an_unreachable_server_fails_before_the_clock_starts() -> None:
    port = free_port()
    with socket.socket() as s:  # nothing listens on the port
        assert s.connect_ex(("127.0.0.1", port)) != 0
    with pytest.raises(OSError):
        run_fixed_rate(f"http://127.0.0.1:{port}", ["/"], rate=10, seconds=0.2)


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError):
        run_fixed_rate("http://127.0.0.1:1", [], rate=10, seconds=1)
    with pytest.raises(ValueError):
        run_fixed_rate("http://127.0.0.1:1", ["/"], rate=0, seconds=1)


def test_a_server_process_and_its_cpu_are_found_by_port() -> None:
    port = free_port()
    assert server_pid(port) is None
    spin = "import time\nend = time.process_time() + 0.2\nwhile time.process_time() < end: pass\n"
    proc = subprocess.Popen([sys.executable, "-c", spin + "time.sleep(30)", "--port", str(port)])
    try:
        deadline = time.monotonic() + 20
        while server_pid(port) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server_pid(port) == proc.pid
        while cpu_seconds(proc.pid) < 0.1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert cpu_seconds(proc.pid) >= 0.1
    finally:
        proc.kill()
        proc.wait()
    assert cpu_seconds(None) == 0.0
