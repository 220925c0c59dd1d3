"""Where a crawl may go: its URL scope and the addresses it may contact.

:class:`CrawlScope` holds the allowed domains and the include/exclude URL patterns; a
URL outside them is cut where it would enter the frontier (rule ``out-of-scope``,
with the reason), never queued. :func:`address_permitted` is the address guard:
loopback only by default; with ``allow_any`` every public address, but never a
private, loopback, link-local (the 169.254.169.254 metadata service), carrier-grade
NAT, unique-local, multicast or reserved one, in any spelling (an IPv6 address
carrying an IPv4 one, mapped, 6to4 or NAT64, is judged as that IPv4
address), unless a range names it explicitly.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

__all__ = [
    "LOOPBACK",
    "CrawlScope",
    "ScopeError",
    "address_permitted",
    "parse_range",
    "plain_address",
]

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address

#: What a crawl may contact when nothing else is said: this machine only.
LOOPBACK: tuple[Network, ...] = (
    ipaddress.ip_network("127.0.0.0/8"),
    ipaddress.ip_network("::1/128"),
)

OUT_OF_SCOPE = "out-of-scope"
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class ScopeError(ValueError):
    """A scope setting cannot be used (a bad regular expression, a bad domain or range)."""


def _compile(patterns: Iterable[str], what: str) -> tuple[re.Pattern[str], ...]:
    out = []
    for p in patterns:
        try:
            out.append(re.compile(p))
        except re.error as exc:
            raise ScopeError(f"bad {what} pattern {p!r}: {exc}") from None
    return tuple(out)


@dataclass(frozen=True)
class CrawlScope:
    """Allowed domains (a domain admits its subdomains) and include/exclude regexes.

    A URL is in scope when its host is one of ``allow_domains`` (or any host, when
    none is given), it matches at least one ``include`` pattern (or there is none),
    and it matches no ``exclude`` pattern. Patterns are searched anywhere in the
    normalised URL (anchor them with ``^`` to match from the start).
    """

    allow_domains: tuple[str, ...] = ()
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    _include: tuple[re.Pattern[str], ...] = field(default=(), repr=False, compare=False)
    _exclude: tuple[re.Pattern[str], ...] = field(default=(), repr=False, compare=False)

    def __post_init__(self) -> None:
        domains = []
        for d in self.allow_domains:
            d = d.strip().lower().rstrip(".").lstrip(".")
            if not d or "/" in d or ":" in d or " " in d:
                raise ScopeError(f"bad domain {d!r}: give a host name such as example.org")
            domains.append(d)
        object.__setattr__(self, "allow_domains", tuple(domains))
        object.__setattr__(self, "include", tuple(self.include))
        object.__setattr__(self, "exclude", tuple(self.exclude))
        object.__setattr__(self, "_include", _compile(self.include, "--include"))
        object.__setattr__(self, "_exclude", _compile(self.exclude, "--exclude"))

    @property
    def unlimited(self) -> bool:
        return not (self.allow_domains or self.include or self.exclude)

    def check(self, url: str) -> tuple[str, str] | None:
        """``None`` when ``url`` is in scope, else ``("out-of-scope", why)``."""
        if self.unlimited:
            return None
        host = (urlsplit(url).hostname or "").rstrip(".")
        if self.allow_domains and not any(
            host == d or host.endswith("." + d) for d in self.allow_domains
        ):
            return OUT_OF_SCOPE, f"host {host} is outside the allowed domains"
        if self._include and not any(p.search(url) for p in self._include):
            return OUT_OF_SCOPE, "matches no --include pattern"
        for p in self._exclude:
            if p.search(url):
                return OUT_OF_SCOPE, f"matches --exclude {p.pattern!r}"
        return None

    def to_meta(self) -> dict[str, list[str]]:
        return {
            "allow_domains": list(self.allow_domains),
            "include": list(self.include),
            "exclude": list(self.exclude),
        }


def parse_range(text: str) -> Network:
    """An address range such as ``10.0.0.0/8`` or ``fd00::/8``; raises :class:`ScopeError`."""
    try:
        return ipaddress.ip_network(text.strip(), strict=False)
    except ValueError as exc:
        raise ScopeError(f"bad address range {text!r}: {exc}") from None


def plain_address(address: str) -> Address:
    """``address`` as an IP address; an IPv6 address carrying an IPv4 one as that one."""
    ip = ipaddress.ip_address(address.strip("[]").split("%")[0])
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return ip.ipv4_mapped
        if ip.sixtofour is not None:  # 2002::/16 carries an IPv4 address
            return ip.sixtofour
        if ip in _NAT64:  # 64:ff9b::/96 (RFC 6052) likewise
            return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return ip


def address_permitted(address: str, allowed: Iterable[Network], public: bool) -> bool:
    """May the crawler contact ``address``? In an ``allowed`` range, or public (``public``)."""
    ip = plain_address(address)
    if any(ip.version == net.version and ip in net for net in allowed):
        return True
    return public and ip.is_global and not ip.is_multicast
