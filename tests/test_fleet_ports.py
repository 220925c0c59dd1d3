"""A serving fleet's children that are handed a port number (the ``lookup serve`` workers,
the sandbox web, the dashboard) follow the launchers' rule: one that loses its port to
another process between the allocator's check and its own bind is started again on a
fresh port; a port the caller named never moves."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from lookup.fleet import ServingFleet, read_state
from lookup.kit.engines import ports
from lookup.kit.engines.launch import PortTaken


@contextmanager
def handed_out_ports_lost(monkeypatch: pytest.MonkeyPatch, *which: int) -> Iterator[list[int]]:
    """The ports the allocator hands out ``which``-th (0: the first) pass its check and are
    then bound by another process before the child binds them; yields every port handed
    out, in order."""
    real_check = ports.port_free
    handed: list[int] = []
    takers: list[socket.socket] = []

    def check_then_lose(candidate: int, host: str = "127.0.0.1") -> bool:
        free = real_check(candidate, host)
        if free:
            if len(handed) in which:  # someone else's server, between check and bind
                taker = socket.socket()
                takers.append(taker)
                taker.bind(("127.0.0.1", candidate))
                taker.listen()
            handed.append(candidate)
        return free

    monkeypatch.setattr(ports, "port_free", check_then_lose)
    try:
        yield handed
    finally:
        for taker in takers:
            taker.close()
    assert len(takers) == len(which), "the allocator never handed out a port to take"


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def _fleet(data_dir: Path, redis_url: str, **options: Any) -> ServingFleet:
    """One worker over a Redis cache tier the test owns (no server started here), no click
    aggregator, no dashboard, children's output discarded."""
    urls = {"cache_url": redis_url, "limits_url": redis_url, "clicks_url": redis_url}
    options = {"workers": 1, "dashboard": False, "aggregators": False, **options}
    return ServingFleet(data_dir, ("redis",), urls=urls, quiet=True, **options)


def test_a_worker_and_the_sandbox_that_lost_their_ports_start_on_others_and_serve(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, redis_server: Any
) -> None:
    monkeypatch.delenv("LOOKUP_PUBLIC_URL", raising=False)
    fleet = _fleet(tmp_path, redis_server.url, sandbox_port=0)
    # handed out: worker (taken), worker again, sandbox (taken), sandbox again
    with handed_out_ports_lost(monkeypatch, 0, 2) as handed:
        try:
            fleet.start()
            (worker,) = fleet.worker_urls
            assert len(handed) == 4 and _port(worker) == handed[1]
            assert fleet.sandbox_url == f"http://127.0.0.1:{handed[3]}"
            # the failed starts are gone: only the children that run are the fleet's
            assert [name for name, _ in fleet.procs] == ["API worker 1", "sandbox web"]
            assert fleet.dead() is None
            state = read_state(tmp_path)
            assert state is not None and state["workers"][0]["url"] == worker

            token = httpx.post(f"{worker}/v1/tokens", timeout=10).json()["token"]
            made = httpx.post(
                f"{worker}/v1/links",
                json={"longUrl": "https://example.org/moved"},
                headers={"Authorization": f"Bearer {token}"},
                timeout=10,
            )
            assert made.status_code == 201, made.text
            assert made.json()["shortUrl"].startswith(f"{worker}/")  # its public URL moved too
            answer = httpx.get(f"{worker}/{made.json()['key']}", timeout=10)
            assert answer.status_code == 302
            assert answer.headers["location"] == "https://example.org/moved"
            hosts = httpx.get(f"{fleet.sandbox_url}/_sandbox/hosts", timeout=10)
            assert hosts.status_code == 200 and "sandbox.test" in hosts.text
        finally:
            fleet.stop()


def test_a_worker_port_the_caller_named_does_not_move(tmp_path: Path, redis_server: Any) -> None:
    with socket.socket() as taker:
        taker.bind(("127.0.0.1", 0))
        taker.listen()
        port = taker.getsockname()[1]
        fleet = _fleet(tmp_path, redis_server.url, api_port=port)
        try:
            with pytest.raises(PortTaken, match=f"API worker 1 did not start on .*:{port}"):
                fleet.start()
            assert fleet.worker_urls == [f"http://127.0.0.1:{port}"] and fleet.procs == []
        finally:
            fleet.stop()
