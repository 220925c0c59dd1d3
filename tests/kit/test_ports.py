"""Free ports are drawn below the ephemeral range, bind, and are never handed out twice."""

from __future__ import annotations

import socket
from pathlib import Path

from lookup.kit.ports import BUS_OFFSET, PORT_RANGE, free_port, port_free


def _ephemeral_range() -> tuple[int, int]:
    low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
    return int(low), int(high)


def test_ports_are_free_distinct_and_outside_the_ephemeral_range() -> None:
    low, _high = _ephemeral_range()
    ports = [free_port() for _ in range(300)]
    assert len(set(ports)) == len(ports)
    assert all(PORT_RANGE[0] <= p < PORT_RANGE[1] < low for p in ports)
    assert all(port_free(p) for p in ports[:20])


def test_a_port_that_is_taken_is_not_handed_out() -> None:
    with socket.socket() as taken:
        port = free_port()
        taken.bind(("127.0.0.1", port))
        assert not port_free(port)
        assert port not in {free_port() for _ in range(200)}


def test_a_cluster_port_has_its_bus_port_free_and_below_the_ephemeral_range() -> None:
    low, _high = _ephemeral_range()
    for _ in range(50):
        port = free_port(with_bus=True)
        assert port + BUS_OFFSET < low and port_free(port + BUS_OFFSET)
