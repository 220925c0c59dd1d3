"""A throw-away ``redis-server`` on a free loopback port, for tests, drills and benchmarks.

No persistence (``--save ''``, ``--appendonly no``), its own temporary directory, stopped
(and the directory removed) on exit; ``lookup up`` passes ``directory=`` to run it in
``$LOOKUP_DATA_DIR/servers/redis`` instead (kept on close). Readiness is a ``PING`` over a
raw socket, so this module needs no Redis client. The server's output goes to
``redis.log`` in its directory; a lost race for its port (``Address already in use``
there) starts it again on a fresh one (:mod:`lookup.kit.engines.launch`).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

from lookup import settings
from lookup.errors import Unavailable
from lookup.kit.engines.launch import log_since, log_size, start_failure, start_on_fresh_ports
from lookup.kit.engines.ports import free_port

__all__ = ["RedisServer", "redis_available"]


def redis_available() -> bool:
    """True when the redis-server binary throw-away servers are started from is installed."""
    return Path(settings.get("redis_bin")).is_file()


class RedisServer:
    """One ``redis-server`` on 127.0.0.1; ``url`` is ``redis://127.0.0.1:PORT/0``.

    ``directory``: where the server runs (a new temporary directory when ``None``; removed
    by :meth:`close` only if this object made it).
    """

    def __init__(self, binary: str | None = None, *, directory: str | Path | None = None) -> None:
        self.binary = binary or settings.get("redis_bin")
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self._own_dir = directory is None
        self._dir: str | None = None if directory is None else str(directory)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 10.0) -> RedisServer:
        """Start the server (on a new free port the first time, the same one after: its URL
        is known by then)."""
        if self._dir is None:
            self._dir = tempfile.mkdtemp(prefix="lookup-redis-")
        Path(self._dir).mkdir(parents=True, exist_ok=True)
        if self.port:
            return self._start_on(self.port, timeout)
        try:
            return start_on_fresh_ports(
                lambda _n: self._start_on(free_port(), timeout), "redis-server"
            )
        except BaseException:
            self.port = 0  # a port it never got: the next start draws again
            raise

    def _start_on(self, port: int, timeout: float) -> RedisServer:
        """Start on ``port`` and wait for its ``PONG``; a server that exited says why."""
        assert self._dir is not None
        self.port = port
        log_path = Path(self._dir) / "redis.log"
        offset = log_size(log_path)
        with log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [self.binary, "--port", str(port), "--bind", "127.0.0.1",
                 "--save", "", "--appendonly", "no", "--dir", self._dir],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            )  # fmt: skip
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            code = self.proc.poll()
            if code is not None:
                self.proc = None
                tail = log_since(log_path, offset)
                raise start_failure(f"redis-server exited with {code}: {tail[-600:]}", tail)
            if self._pong():
                return self
            time.sleep(0.02)
        self.stop()
        raise Unavailable(f"redis-server did not answer on port {port} in {timeout}s")

    def _pong(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        """Stop the server (the directory stays for a restart until :meth:`close`)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:  # pragma: no cover - a wedged server
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def close(self) -> None:
        """Stop the server and remove its directory if this object made it."""
        self.stop()
        if self._dir is not None and self._own_dir:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:  # fmt: skip
        self.close()
