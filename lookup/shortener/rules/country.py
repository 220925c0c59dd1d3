"""The visitor's country, from the IP-to-country data the ``iptocc`` package ships.

``iptocc`` carries the Regional Internet Registries' delegation files compiled into its
wheel (no download at run time, about 0.1 µs a look-up). Loopback, private, link-local and
other non-public addresses have no country, nor does an address the data does not know.
The address is the one :func:`~lookup.kit.clients.client_address` gives: the peer, or the
nearest ``X-Forwarded-For`` hop that is not a proxy ``LOOKUP_TRUST_FORWARDED_FOR`` names.
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache

from iptocc import country_code

__all__ = ["country_of"]


@lru_cache(maxsize=65_536)
def country_of(address: str | None) -> str | None:
    """ISO 3166-1 alpha-2 code of ``address``; None for a non-public or unknown one."""
    if not address:
        return None
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return None
    if not ip.is_global:
        return None
    code = country_code(str(ip))
    return code.upper() if isinstance(code, str) and len(code) == 2 else None
