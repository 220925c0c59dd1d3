"""``lookup up`` (what ``make run`` calls) and ``lookup serve`` against real ports and signals.

- A busy port is refused before anything starts, in one line naming the port and free
  ones to choose (``make run API_PORT=…``), and nothing else is started.
- A service counts as up only if the process this run started owns the port.
- Ctrl-C (SIGINT to the terminal's whole process group) and SIGTERM stop every child
  quietly — no ``KeyboardInterrupt`` traceback — many times in a row, whatever moment the
  click aggregator's own process is in (just spawned, or running).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from lookup.launcher import busy_port_message, owns_port, port_free
from tests.conftest import ROOT, free_port, lookup_serve, wait_http


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A loopback port another program listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def _up(tmp_path: Path, *flags: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "lookup.cli", "up", "--skip-datasets",
         "--data-dir", str(tmp_path / "data"), *flags],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group: a Ctrl-C is sent to the group
    )  # fmt: skip


class Banner:
    """Reads ``lookup up``'s standard output as it comes and says when the banner came: a
    signal sent before it is a stop while starting, answered without it."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self.up = threading.Event()
        assert proc.stdout is not None
        self._reader = threading.Thread(target=self._read, args=(proc.stdout,), daemon=True)
        self._reader.start()

    def _read(self, stream: Any) -> None:
        for line in stream:
            self.lines.append(line)
            if "Lookup Workbench is up" in line:
                self.up.set()

    def text(self) -> str:
        """Everything printed, once the process has ended."""
        self._reader.join(timeout=10)
        return "".join(self.lines)


def test_a_busy_port_gets_one_line_and_nothing_starts(tmp_path: Path, busy_port: int) -> None:
    app, sandbox = free_port(), free_port()
    proc = _up(tmp_path, "--api-port", str(busy_port), "--app-port", str(app),
               "--sandbox-port", str(sandbox))  # fmt: skip
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, (out, err)
    assert out == ""  # no banner, no build output: nothing started
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert f"port {busy_port} (API)" in lines[0]
    assert "make run API_PORT=" in lines[0] and "--api-port" in lines[0]
    suggested = int(lines[0].split("API_PORT=")[1].split()[0])
    assert suggested not in (busy_port, app, sandbox) and port_free("127.0.0.1", suggested)
    assert port_free("127.0.0.1", app) and port_free("127.0.0.1", sandbox)


def test_every_busy_port_is_named(busy_port: int) -> None:
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        second = other.getsockname()[1]
        message = busy_port_message(
            "127.0.0.1",
            {"API": ("API_PORT", busy_port), "dashboard": ("APP_PORT", second)},
        )
    assert message is not None
    assert f"{busy_port} (API)" in message and f"{second} (dashboard)" in message
    assert "API_PORT=" in message and "APP_PORT=" in message
    assert busy_port_message("127.0.0.1", {"API": ("API_PORT", free_port())}) is None


def test_only_the_process_listening_owns_the_port(tmp_path: Path, busy_port: int) -> None:
    """The readiness check's ownership test: a child that answers on its port owns it; a
    child that is alive but not listening there does not (another process answers)."""
    # The child binds port 0 and says which port it got: no other program can take it
    # between a free-port probe and the bind.
    serve = (
        "import http.server as h; s = h.HTTPServer(('127.0.0.1', 0), h.SimpleHTTPRequestHandler);"
        " print(s.server_port, flush=True); s.serve_forever()"
    )
    server = subprocess.Popen(
        [sys.executable, "-c", serve], cwd=tmp_path, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    assert server.stdout is not None
    port = int(server.stdout.readline())
    idle = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        wait_http(f"http://127.0.0.1:{port}/", server)
        assert owns_port(server, port)
        assert not owns_port(server, busy_port)
        assert not owns_port(idle, port)
    finally:
        for p in (server, idle):
            p.kill()
            p.wait()
    assert not owns_port(server, port)  # an exited child owns nothing


# ----------------------------------------------------------------------- quiet stops


def _aggregator(proc: subprocess.Popen[bytes]) -> psutil.Process | None:
    """The click aggregator's process under ``proc`` (multiprocessing spawn), if started."""
    for child in psutil.Process(proc.pid).children(recursive=True):
        try:
            if any("multiprocessing" in part for part in child.cmdline()):
                return child
        except psutil.NoSuchProcess:
            continue
    return None


def _click(url: str) -> None:
    """Create a link and follow it: the first click starts the aggregator process."""
    created = httpx.post(f"{url}/v1/links", json={"longUrl": "https://example.org/a"})
    assert created.status_code == 201, created.text
    r = httpx.get(f"{url}/{created.json()['key']}", follow_redirects=False)
    assert r.status_code == 302


TRACEBACK_MARKS = ("Traceback", "KeyboardInterrupt", "leaked", "Warning")


@pytest.mark.parametrize("round_", range(8))
def test_serve_and_its_aggregator_stop_quietly(tmp_path: Path, round_: int) -> None:
    """``lookup serve`` in a terminal: Ctrl-C reaches the server *and* its aggregator child.

    Rounds alternate SIGINT (to the whole process group, as a terminal sends it) and
    SIGTERM (to the server), and signal either while the aggregator is still starting
    or once it runs."""
    port = free_port()
    proc = lookup_serve(
        tmp_path / "data", port,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
        env={**os.environ, "LOOKUP_SHORTENER_AGGREGATOR": "process"},
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{url}/healthz", proc, timeout=90)
        _click(url)
        deadline = time.monotonic() + 30
        while (child := _aggregator(proc)) is None:
            assert time.monotonic() < deadline, "the aggregator process never started"
            time.sleep(0.02)
        if round_ % 4 >= 2:
            time.sleep(1.5)  # let it start fully and fold a round
        if round_ % 2 == 0:
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    text = out.decode(errors="replace")
    assert not any(mark in text for mark in TRACEBACK_MARKS), text
    # uvicorn shuts down, then re-raises the signal it caught: 130 (or 0) for SIGINT, the
    # CLI's exit code for a Ctrl-C; 143 for SIGTERM — both without a word.
    assert proc.returncode in ((0, 130) if round_ % 2 == 0 else (143,)), text
    # An aggregator caught still starting finishes starting, sees its stop, and exits.
    gone, alive = psutil.wait_procs([child], timeout=30)
    assert not alive


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGINT, signal.SIGTERM])
def test_up_stops_every_child_quietly(tmp_path: Path, sig: signal.Signals) -> None:
    """``lookup up``: started, a link clicked (so the aggregator runs), then Ctrl-C to the
    terminal's process group (or SIGTERM): all children gone, exit 0, no traceback."""
    api, app, sandbox = free_port(), free_port(), free_port()
    proc = _up(tmp_path, "--api-port", str(api), "--app-port", str(app),
               "--sandbox-port", str(sandbox))  # fmt: skip
    banner = Banner(proc)
    try:
        deadline = time.monotonic() + 120
        while not all(not port_free("127.0.0.1", p) for p in (api, app, sandbox)):
            assert proc.poll() is None and time.monotonic() < deadline, banner.lines
            time.sleep(0.2)
        wait_http(f"http://127.0.0.1:{app}/_stcore/health", proc, timeout=120)
        # The supervisor asks the dashboard's health on its own schedule: on a loaded
        # machine the test saw it healthy first and stopped a launcher still starting (CI).
        assert banner.up.wait(timeout=120), banner.lines
        family = psutil.Process(proc.pid).children(recursive=True)
        _click(f"http://127.0.0.1:{api}")
        deadline = time.monotonic() + 30
        while not any(_aggregator(c) for c in psutil.Process(proc.pid).children()):
            assert time.monotonic() < deadline, "the aggregator process never started"
            time.sleep(0.05)
        family = psutil.Process(proc.pid).children(recursive=True)
        if sig == signal.SIGINT:
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out = banner.text()
    err = proc.stderr.read() if proc.stderr else ""
    assert "Lookup Workbench is up" in out
    assert not any(mark in out + err for mark in TRACEBACK_MARKS), err
    assert proc.returncode == 0, err
    gone, alive = psutil.wait_procs(family, timeout=10)
    assert not alive, [p.cmdline() for p in alive]
    assert all(port_free("127.0.0.1", p) for p in (api, app, sandbox))
