"""Who is calling: the client's address (behind a trusted proxy, from ``X-Forwarded-For``)
and the network it belongs to, for per-client limits and distinct-network counts.

The network is the address's /24 for IPv4 and /48 for IPv6 — the usual allocation to one
site — so one home, office or cloud tenant rotating addresses still counts once.
"""

from __future__ import annotations

import ipaddress

from starlette.types import Scope

#: Prefix lengths of "one network" per IP version.
NETWORK_PREFIX = {4: 24, 6: 48}
#: Prefix lengths of "one client" for rate limits: an IPv6 host picks any of its /64.
CLIENT_PREFIX = {4: 32, 6: 64}


def client_address(scope: Scope, trust_forwarded_for: bool = False) -> str:
    """The client's address; from ``X-Forwarded-For`` only when the proxy is trusted."""
    if trust_forwarded_for:
        for name, value in scope.get("headers", ()):
            if name == b"x-forwarded-for":
                first = value.decode("latin-1").split(",")[0].strip()
                if first:
                    return first
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


def _prefix(address: str, lengths: dict[int, int]) -> str:
    try:
        ip = ipaddress.ip_address(address.strip().strip("[]"))
    except ValueError:
        return address  # not an IP (a test client's name, a unix socket): itself
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return str(ipaddress.ip_network(f"{ip}/{lengths[ip.version]}", strict=False))


def network_of(address: str) -> str:
    """The network an address belongs to: ``198.51.100.0/24``, ``2001:db8:1::/48``."""
    return _prefix(address, NETWORK_PREFIX)


def client_of(address: str) -> str:
    """The unit a per-client limit counts: the IPv4 address, or the IPv6 /64."""
    return _prefix(address, CLIENT_PREFIX)


__all__ = ["CLIENT_PREFIX", "NETWORK_PREFIX", "client_address", "client_of", "network_of"]
