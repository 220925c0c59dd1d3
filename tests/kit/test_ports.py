"""Free ports are drawn below the ephemeral range, bind, and are never handed out twice."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from lookup.kit.engines.ports import BUS_OFFSET, BUS_PORT_RANGE, PORT_RANGE, free_port, port_free


def _ephemeral_range() -> tuple[int, int]:
    low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
    return int(low), int(high)


def test_ports_are_free_distinct_and_outside_the_ephemeral_range() -> None:
    low, _high = _ephemeral_range()
    ports = [free_port() for _ in range(300)]
    assert len(set(ports)) == len(ports)
    assert all(PORT_RANGE[0] <= p < PORT_RANGE[1] < low for p in ports)
    assert BUS_PORT_RANGE[1] == PORT_RANGE[0] and BUS_PORT_RANGE[1] + BUS_OFFSET <= low
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


def test_each_slot_draws_from_its_own_share(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two parallel workers (two slots) never draw the same port, plain or cluster."""
    drawn: dict[int, set[int]] = {}
    for slot in (0, 1, 2):
        monkeypatch.setenv("LOOKUP_PORT_SLOT", f"{slot}/3")
        drawn[slot] = {free_port() for _ in range(100)} | {
            p + d for p in (free_port(with_bus=True) for _ in range(20)) for d in (0, BUS_OFFSET)
        }
    assert not drawn[0] & drawn[1] and not drawn[1] & drawn[2] and not drawn[0] & drawn[2]


def test_a_bad_slot_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from lookup.settings import SettingError

    monkeypatch.setenv("LOOKUP_PORT_SLOT", "3/3")
    with pytest.raises(SettingError, match="LOOKUP_PORT_SLOT"):
        free_port()
