"""Free loopback ports for the throw-away servers the project starts (Redis, etcd,
PostgreSQL, storage nodes, fleets) and for the tests' own.

A server that takes a port number on its command line needs the port chosen before it
binds, so someone else may take it in between. Asking the kernel for port 0 makes that
likelier, not rarer: it answers from the *ephemeral* range, the same range every outgoing
connection draws its local port from — with a parallel test suite opening thousands of
connections, one of them lands on the port just handed out. So :func:`free_port` draws at
random from below the ephemeral range (Linux's is 32768–60999), checks that the port binds
now, and never hands the same port out twice in one process. The race between that check
and the server's own bind remains: :mod:`lookup.kit.engines.launch` is the rule every
launcher follows when it loses it.

Ports come from 22768–30000 (above the well-known ports and the usual development
servers, 8000s, 5432, 6379, 2379); a Redis Cluster node's from 20000–22768, so that its bus
port (+10,000) is free of the others and still below the ephemeral range. A parallel test
run gives each worker process a share of both (``LOOKUP_PORT_SLOT``, read per call), so
two workers never draw the same port.
"""

from __future__ import annotations

import random
import socket
import threading

from lookup import settings

__all__ = ["BUS_OFFSET", "BUS_PORT_RANGE", "PORT_RANGE", "free_port", "port_free"]

#: Where ports are drawn from, and where a Redis Cluster node's (its bus port is +10,000).
PORT_RANGE = (22_768, 30_000)
BUS_PORT_RANGE = (20_000, 22_768)
#: Redis Cluster's bus port is the node's port + 10,000: keep it below the ephemeral range too.
BUS_OFFSET = 10_000

_lock = threading.Lock()
_handed_out: set[int] = set()
_random = random.SystemRandom()


def port_free(port: int, host: str = "127.0.0.1") -> bool:
    """True when ``port`` binds on ``host`` right now."""
    with socket.socket() as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def _share(span: tuple[int, int]) -> tuple[int, int]:
    """This process's share of ``span`` (``LOOKUP_PORT_SLOT``)."""
    index, count = settings.get("port_slot")
    low, high = span
    width = (high - low) // count
    return low + index * width, low + (index + 1) * width


def free_port(host: str = "127.0.0.1", *, with_bus: bool = False) -> int:
    """A TCP port on ``host`` that is free now and was not handed out before in this
    process; with ``with_bus`` also its Redis Cluster bus port (port + 10,000)."""
    low, high = _share(BUS_PORT_RANGE if with_bus else PORT_RANGE)
    with _lock:
        for _ in range(500):
            port = _random.randrange(low, high)
            if port in _handed_out or not port_free(port, host):
                continue
            if with_bus and not port_free(port + BUS_OFFSET, host):
                continue
            _handed_out.add(port)
            return port
    raise OSError(f"no free port on {host} in {low}-{high} after 500 tries")
