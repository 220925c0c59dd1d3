"""Several real ``lookup serve`` processes sharing one data directory and one Redis.

The helper for the cross-process tests and drills of the Redis tier: each process is the
actual command on a free loopback port, started with the scale-out URLs in its
environment, and stopped (then killed if it lingers) on exit.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.conftest import free_port, lookup_serve, wait_http

#: Limits no test of the tier should trip over unless it sets its own.
OPEN_LIMITS = {
    "LOOKUP_SHORTENER_RATE_ANON": "100000/1",
    "LOOKUP_SHORTENER_RATE_OWNER": "100000/1",
    "LOOKUP_SHORTENER_RATE_IP": "100000/1",
    "LOOKUP_SHORTENER_RATE_MISSES": "100000/1",
}

OWNER = {"Authorization": "Bearer redis-fleet-owner-token-0001"}
#: The fleet's admin token (``LOOKUP_ADMIN_TOKEN`` of every process): the metrics need it.
ADMIN_TOKEN = "redis-fleet-admin-token-0001"
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


@contextmanager
def fleet(data_dir: Path, n: int, env: Mapping[str, str]) -> Iterator[list[str]]:
    """``n`` API processes over ``data_dir`` with ``env`` added; yields their base URLs."""
    base = {
        **os.environ,
        **OPEN_LIMITS,
        "LOOKUP_SHORTENER_SCANNER": "0",
        "LOOKUP_ADMIN_TOKEN": ADMIN_TOKEN,
        **env,
    }
    base.pop("LOOKUP_PUBLIC_URL", None)
    procs: list[subprocess.Popen[bytes]] = []
    urls: list[str] = []
    try:
        for _ in range(n):
            port = free_port()
            proc = lookup_serve(
                data_dir, port, env=base, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            procs.append(proc)
            urls.append(f"http://127.0.0.1:{port}")
        for proc, url in zip(procs, urls, strict=True):
            wait_http(f"{url}/healthz", proc, timeout=120)
        yield urls
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def create(client: httpx.Client, base: str, long_url: str, **extra: object) -> str:
    """Create a link through ``base`` (as :data:`OWNER`); its key."""
    resp = client.post(f"{base}/v1/links", json={"longUrl": long_url, **extra}, headers=OWNER)
    assert resp.status_code == 201, resp.text
    return str(resp.json()["key"])


def metrics(client: httpx.Client, base: str) -> dict:  # type: ignore[type-arg]
    """The shortener's metrics of one process."""
    resp = client.get(f"{base}/v1/shortener/metrics", headers=ADMIN)
    assert resp.status_code == 200, resp.text
    return resp.json()  # type: ignore[no-any-return]
