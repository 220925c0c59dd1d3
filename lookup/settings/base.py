"""What a setting is, how a value is read and checked, and the parsers the tables use."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


class SettingError(ValueError):
    """An environment variable holds a value its setting cannot accept."""


TRUE = ("1", "true", "yes", "on")
FALSE = ("0", "false", "no", "off")


def as_text(raw: str) -> str:
    return raw.strip()


def as_flag(raw: str) -> bool:
    value = raw.strip().lower()
    if value in TRUE:
        return True
    if value in FALSE:
        return False
    raise ValueError(f"expected one of {', '.join(TRUE + FALSE)}")


def as_positive_float(raw: str) -> float:
    value = float(raw)
    if not value > 0:
        raise ValueError("expected a number above 0")
    return value


def as_partitions(raw: str) -> int:
    n = int(raw)
    if not 1 <= n <= 65536:
        raise ValueError(f"must be between 1 and 65536, not {n}")
    return n


def as_bulk_items(raw: str) -> int:
    n = int(raw)
    if not 1 <= n <= 10_000:
        raise ValueError(f"must be between 1 and 10000, not {n}")
    return n


def as_seconds(raw: str) -> float:
    value = float(raw)
    if not value >= 0:
        raise ValueError("expected a number of seconds, 0 or more")
    return value


def as_share(raw: str) -> float:
    value = float(raw)
    if not 0 < value <= 1:
        raise ValueError("expected a fraction above 0 and at most 1")
    return value


def as_review_chars(raw: str) -> int:
    value = raw.strip()
    if not value.isdigit() or not 1 <= int(value) <= 100_000:
        raise ValueError("expected a whole number of characters from 1 to 100000")
    return int(value)


def as_stars(raw: str) -> float:
    value = float(raw)
    if not 1 <= value <= 5:
        raise ValueError("expected a rating from 1 to 5")
    return value


def as_nice(raw: str) -> int:
    value = raw.strip()
    if not value.isdigit() or int(value) > 19:
        raise ValueError("expected a whole number from 0 to 19")
    return int(value)


def as_track_total(raw: str) -> int | bool:
    value = raw.strip().lower()
    if value in ("true", "yes", "on"):
        return True
    if value.isdigit():
        return int(value)
    raise ValueError("expected true (count every match) or a whole number, 0 or more")


def as_rate(raw: str) -> str:
    from lookup.kit.ratelimit import RatePolicy

    RatePolicy.parse(raw.strip())  # validate now; the caller parses it again into a policy
    return raw.strip()


def as_proxies(raw: str) -> tuple[str, ...]:
    """``off`` → (), ``on`` → ("*",) (any peer), else the addresses and networks named."""
    value = raw.strip().lower()
    if value in FALSE:
        return ()
    if value in TRUE or value == "*":
        return ("*",)
    return as_networks(raw)


def as_short_domains(raw: str) -> tuple[str, ...]:
    """``go.example,sh.example:8080`` → the names, lower case (host, optional port)."""
    names = tuple(part.strip().lower() for part in raw.split(",") if part.strip())
    for name in names:
        host, _, port = name.partition(":")
        if not host or any(c in host for c in "/ @?#*[]") or (port and not port.isdigit()):
            raise ValueError(f"{name!r} is not a domain name (write go.example or go.example:8080)")
    return names


def as_hosts(raw: str) -> tuple[str, ...]:
    """``sh.example,.example.com,127.0.0.1`` → the names; ``*`` allows any host."""
    names = tuple(part.strip().lower() for part in raw.split(",") if part.strip())
    for name in names:
        if name != "*" and (any(c in name for c in "/ @?#") or name.startswith("*")):
            raise ValueError(
                f"{name!r} is not a host name (write sh.example, .example.com for a domain "
                "and its subdomains, an address, or * for any host)"
            )
    return names


def as_origins(raw: str) -> tuple[str, ...]:
    """``https://app.example,http://localhost:3000`` → the origins; ``*`` allows any."""
    origins = tuple(part.strip().rstrip("/") for part in raw.split(",") if part.strip())
    for origin in origins:
        scheme, sep, rest = origin.partition("://")
        bad_host = not rest or any(c in rest for c in "/ @?#")
        if origin != "*" and (not sep or scheme not in ("http", "https") or bad_host):
            raise ValueError(
                f"{origin!r} is not an origin (write scheme://host[:port], such as "
                "https://app.example, or * for any)"
            )
    return origins


def as_byte_count(raw: str) -> int:
    value = raw.strip()
    if not value.isdigit() or not 1024 <= int(value) <= 1024 * 1024:
        raise ValueError("expected a whole number of bytes from 1024 to 1048576")
    return int(value)


def as_port_slot(raw: str) -> tuple[int, int]:
    index, sep, count = raw.strip().partition("/")
    if not (sep and index.isdigit() and count.isdigit() and int(index) < int(count) <= 64):
        raise ValueError("expected I/N, two whole numbers with I < N <= 64 (e.g. 0/1, 2/4)")
    return int(index), int(count)


def as_networks(raw: str) -> tuple[str, ...]:
    import ipaddress

    nets = tuple(part.strip() for part in raw.split(",") if part.strip())
    for net in nets:
        ipaddress.ip_network(net, strict=False)  # ValueError names the bad one
    return nets


def as_typo_below(raw: str) -> int:
    n = int(raw)
    if not 1 <= n <= 10:
        raise ValueError(f"must be between 1 and 10, not {n}")
    return n


def as_walk_rows(raw: str) -> int:
    n = int(raw)
    if not 0 <= n <= 1_000_000:
        raise ValueError(f"must be between 0 and 1000000, not {n}")
    return n


def as_answer_entries(raw: str) -> int:
    n = int(raw)
    if not 0 <= n <= 1_000_000:
        raise ValueError(f"must be between 0 (off) and 1000000, not {n}")
    return n


def as_lower(raw: str) -> str:
    return raw.strip().lower()


@dataclass(frozen=True)
class Setting:
    """One knob: where it is read from, what it accepts, and why its default is what it is."""

    name: str
    env: str
    default: Any
    parse: Callable[[str], Any]
    kind: str
    unit: str
    help: str
    choices: tuple[str, ...] = ()

    def read(self, environ: Mapping[str, str] | None = None) -> Any:
        """The current value: the variable if set and non-blank, else the default."""
        env = os.environ if environ is None else environ
        raw = env.get(self.env)
        if raw is None or not raw.strip():
            return self.default
        try:
            value = self.parse(raw)
        except ValueError as exc:
            raise SettingError(f"{self.env}={raw!r}: {exc}") from None
        if self.choices and value not in self.choices:
            raise SettingError(f"{self.env}={raw!r}: must be one of {', '.join(self.choices)}")
        return value
