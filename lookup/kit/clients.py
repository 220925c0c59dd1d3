"""Who is calling: the client's address (behind a trusted proxy, from ``X-Forwarded-For``)
and the network it belongs to, for per-client limits and distinct-network counts.

The network is the address's /24 for IPv4 and /48 for IPv6 — the usual allocation to one
site — so one home, office or cloud tenant rotating addresses still counts once.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

from starlette.types import Scope

#: Prefix lengths of "one network" per IP version.
NETWORK_PREFIX = {4: 24, 6: 48}
#: Prefix lengths of "one client" for rate limits: an IPv6 host picks any of its /64.
CLIENT_PREFIX = {4: 32, 6: 64}


#: Which proxies are trusted: ``False``/``()`` none, ``True``/``("*",)`` any peer, else the
#: addresses and networks named (the ``trust_forwarded_for`` setting's value).
Trust = bool | Sequence[str]


def _trusts(trust: Trust, address: str) -> bool:
    if isinstance(trust, bool):
        return trust
    if not trust:
        return False
    if "*" in trust:
        return True
    try:
        ip = ipaddress.ip_address(address.strip().strip("[]"))
    except ValueError:
        return address in trust
    for entry in trust:
        try:
            if ip in ipaddress.ip_network(entry, strict=False):
                return True
        except ValueError:
            if entry == address:
                return True
    return False


def client_address(scope: Scope, trust_forwarded_for: Trust = False) -> str:
    """The client's address: the peer's, or — when the peer is a trusted proxy — the
    nearest ``X-Forwarded-For`` hop that is not itself a trusted proxy (uvicorn's rule, so
    the app and the server agree; with every peer trusted, the first hop)."""
    client = scope.get("client")
    peer = str(client[0]) if client else "unknown"
    if not _trusts(trust_forwarded_for, peer):
        return peer
    hops = [
        hop.strip()
        for name, value in scope.get("headers", ())
        if name == b"x-forwarded-for"
        for hop in value.decode("latin-1").split(",")
    ]
    for hop in reversed(hops):
        if hop and not _trusts(trust_forwarded_for, hop):
            return hop
    return next((hop for hop in hops if hop), peer)


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


__all__ = ["CLIENT_PREFIX", "NETWORK_PREFIX", "Trust", "client_address", "client_of", "network_of"]
