"""Helpers for tests that run several real ``lookup serve`` processes as one fleet.

Each process gets its own data directory (as on its own machine) and the same backend
URLs in its environment; the tests talk HTTP to them.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import free_port, lookup_serve

#: Rate limits out of reach: these tests count answers, not refusals.
FAST_LIMITS = {
    "LOOKUP_SHORTENER_RATE_ANON": "100000/1",
    "LOOKUP_SHORTENER_RATE_OWNER": "100000/1",
    "LOOKUP_SHORTENER_RATE_IP": "100000/1",
}


class ApiProcess:
    """One ``lookup serve`` on a free port over ``data_dir`` with ``env`` added."""

    def __init__(self, data_dir: Path, env: dict[str, str]) -> None:
        self.data_dir = data_dir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        full = {**os.environ, **FAST_LIMITS, **env}
        full.pop("LOOKUP_PUBLIC_URL", None)
        self._log = tempfile.TemporaryFile()
        self.proc = lookup_serve(
            data_dir, self.port, env=full, stdout=self._log, stderr=subprocess.STDOUT
        )

    def log(self) -> str:
        """The tail of what the process printed."""
        self._log.seek(0)
        return self._log.read().decode(errors="replace")[-3000:]

    def wait_ready(self, timeout_s: float = 90.0) -> ApiProcess:
        """Wait until ``/healthz`` answers 200; RuntimeError (with the log) if it exits."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"lookup serve exited {self.proc.returncode}:\n{self.log()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise TimeoutError(f"lookup serve on {self.url} did not come up:\n{self.log()}")

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 15 s."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


@contextmanager
def api_fleet(root: Path, n: int, env: dict[str, str]) -> Iterator[list[ApiProcess]]:
    """``n`` API processes, each over its own data directory under ``root``; stopped after."""
    procs: list[ApiProcess] = []
    try:
        for i in range(n):  # started together, so they race on schema and secrets
            procs.append(ApiProcess(root / f"api-{i}", env))
        for proc in procs:
            proc.wait_ready()
        yield procs
    finally:
        for proc in procs:
            proc.stop()


@contextmanager
def fresh_database(server: Any) -> Iterator[str]:
    """A new empty database on ``server`` (a PostgresServer); its URL. Dropped after."""
    import psycopg

    name = f"f_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server.url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield server.url.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with psycopg.connect(server.url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
