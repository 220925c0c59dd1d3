"""Free loopback ports for the throw-away servers the project starts (Redis, etcd,
PostgreSQL, storage nodes, fleets) and for the tests' own.

A server that takes a port number on its command line needs the port chosen before it
binds, so someone else may take it in between. Asking the kernel for port 0 makes that
likelier, not rarer: it answers from the *ephemeral* range, the same range every outgoing
connection draws its local port from — with a parallel test suite opening thousands of
connections, one of them lands on the port just handed out. So :func:`free_port` draws at
random from below the ephemeral range (Linux's is 32768–60999), checks that the port binds
now, and never hands the same port out twice in one process.
"""

from __future__ import annotations

import random
import socket
import threading

#: Where ports are drawn from: below Linux's ephemeral range, above the well-known ports
#: and the usual development servers (8000s, 5432, 6379, 2379).
PORT_RANGE = (20_000, 32_000)
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


def free_port(host: str = "127.0.0.1", *, with_bus: bool = False) -> int:
    """A TCP port on ``host`` that is free now and was not handed out before in this
    process; with ``with_bus`` also its Redis Cluster bus port (port + 10,000)."""
    low, high = PORT_RANGE
    if with_bus:
        high = min(high, 32_768 - BUS_OFFSET)
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
