"""The launchers' one rule: a throw-away server that loses the race for the port it was
handed (another process binds it between the free-port check and the server's own bind)
is started again on a fresh port, a bounded number of times; any other failure is not."""

from __future__ import annotations

import random
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from lookup import settings
from lookup.errors import Unavailable
from lookup.kit.engines import launch, ports
from lookup.kit.engines.etcdserver import EtcdServer, etcd_available
from lookup.kit.engines.launch import (
    LAUNCH_TRIES,
    PortTaken,
    address_in_use,
    log_since,
    start_failure,
    start_on_fresh_ports,
)
from lookup.kit.engines.pgserver import PostgresServer, postgres_available
from lookup.kit.engines.redisserver import RedisServer, redis_available

#: What each engine writes when its port is taken (redis-server 7, etcd 3.4, PostgreSQL 16).
LOST_RACE_LINES = (
    "# Warning: Could not create server TCP listening socket 127.0.0.1:23456: bind: "
    "Address already in use",
    '{"level":"fatal","msg":"listen tcp 127.0.0.1:23456: bind: address already in use"}',
    'LOG:  could not bind IPv4 address "127.0.0.1": Address already in use',
)


def _need(available: Callable[[], bool], what: str) -> None:
    """Skip without the server's binary; fail instead under ``.ci/run``."""
    if available():
        return
    if settings.get("require_servers"):
        pytest.fail(f"{what} is missing and LOOKUP_REQUIRE_SERVERS is set (.ci/run)")
    pytest.skip(f"{what} is missing")


@pytest.mark.parametrize("line", LOST_RACE_LINES)
def test_each_engines_words_for_a_taken_port_are_a_lost_race(line: str) -> None:
    assert address_in_use(line)
    assert isinstance(start_failure("did not start", line), PortTaken)


def test_any_other_failure_is_not() -> None:
    error = start_failure("did not start", "FATAL: data directory has wrong ownership")
    assert type(error) is Unavailable and not address_in_use("Permission denied")


def test_a_lost_race_starts_again_and_the_tries_are_bounded() -> None:
    tries: list[int] = []

    def lost_twice(n: int) -> str:
        tries.append(n)
        if n < 2:
            raise PortTaken(f"port {n} taken")
        return "up"

    assert start_on_fresh_ports(lost_twice, "a server") == "up" and tries == [0, 1, 2]

    def always_lost(n: int) -> str:
        tries.append(n)
        raise PortTaken(f"port {n} taken")

    tries.clear()
    with pytest.raises(Unavailable, match=r"a server did not start: its port was taken 3 times"):
        start_on_fresh_ports(always_lost, "a server", tries=3)
    assert tries == [0, 1, 2]
    assert LAUNCH_TRIES >= 3


def test_another_failure_is_reported_at_once() -> None:
    tries: list[int] = []

    def broken(n: int) -> str:
        tries.append(n)
        raise Unavailable("initdb failed")

    with pytest.raises(Unavailable, match="initdb failed"):
        start_on_fresh_ports(broken, "a server")
    assert tries == [0]


def test_a_log_is_read_from_where_this_start_began(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("an old start: Address already in use\n")
    offset = launch.log_size(log)
    with log.open("a") as f:
        f.write("ready to accept connections\n")
    assert log_since(log, offset) == "ready to accept connections\n"
    assert launch.log_size(tmp_path / "none.log") == 0 and log_since(tmp_path / "x", 0) == ""


class _FirstDraw:
    """The allocator's random draw, made to give ``port`` first (then real draws)."""

    def __init__(self, port: int) -> None:
        self.port: int | None = port
        self.drawn: list[int] = []
        self._real = random.SystemRandom()

    def randrange(self, start: int, stop: int) -> int:
        port, self.port = self.port, None
        self.drawn.append(port if port is not None else self._real.randrange(start, stop))
        return self.drawn[-1]


@contextmanager
def _first_port_lost_to_another_process(monkeypatch: pytest.MonkeyPatch) -> Iterator[_FirstDraw]:
    """The first port the allocator hands out passes its check and is then bound by another
    process before the server binds it: the race the launchers must survive."""
    with socket.socket() as probe:  # a port free now that the allocator never handed out
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    draw = _FirstDraw(port)
    taker = socket.socket()
    real_check = ports.port_free
    lost: list[int] = []

    def check_then_lose(candidate: int, host: str = "127.0.0.1") -> bool:
        free = real_check(candidate, host)
        if free and candidate == port and not lost:
            taker.bind(("127.0.0.1", port))  # someone else's server, between check and bind
            taker.listen()
            lost.append(port)
        return free

    monkeypatch.setattr(ports, "_random", draw)
    monkeypatch.setattr(ports, "port_free", check_then_lose)
    try:
        yield draw
    finally:
        taker.close()
    assert lost == [port], "the allocator never handed out the port that was taken"


def test_redis_server_that_lost_its_port_starts_on_another(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _need(redis_available, "redis-server")
    with _first_port_lost_to_another_process(monkeypatch) as draw:
        with RedisServer() as server:
            taken = draw.drawn[0]
            assert server.port != taken and server.port in draw.drawn[1:]
            assert server._pong()
            assert server._dir is not None
            log = (Path(server._dir) / "redis.log").read_text(errors="replace")
            assert f"127.0.0.1:{taken}" in log and "Address already in use" in log


def test_a_restarted_redis_keeps_its_port_even_when_taken() -> None:
    """A restart keeps its URL (clients hold it): a taken port is an error, not a move."""
    _need(redis_available, "redis-server")
    with RedisServer() as server:
        port = server.port
        server.stop()
        with socket.socket() as taker:
            taker.bind(("127.0.0.1", port))
            taker.listen()
            with pytest.raises(PortTaken, match="Address already in use"):
                server.start()
        assert server.port == port
        server.start()
        assert server._pong()


def test_postgres_that_lost_its_port_starts_on_another(monkeypatch: pytest.MonkeyPatch) -> None:
    _need(postgres_available, "PostgreSQL")
    with _first_port_lost_to_another_process(monkeypatch) as draw:
        with PostgresServer() as server:
            assert server.port != draw.drawn[0] and server.running()
            log = (server.root / "server.log").read_text(errors="replace")
            assert "Address already in use" in log


def test_etcd_that_lost_its_port_starts_on_another(monkeypatch: pytest.MonkeyPatch) -> None:
    _need(etcd_available, "etcd")
    with _first_port_lost_to_another_process(monkeypatch) as draw:
        with EtcdServer() as server:
            taken = draw.drawn[0]
            assert f":{taken}" not in server.url and len(draw.drawn) >= 4
            assert server.data_dir is not None
            log = (server.data_dir / "etcd.log").read_text(errors="replace")
            assert "address already in use" in log.lower()
