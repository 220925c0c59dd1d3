"""How figures read: decimal units the way the seeds write them (1 GB = 10^9 bytes).

:func:`format_quantity` renders a value with its unit for people ("6 TB", "139,000/s",
"0.34%"); :func:`number` renders a number inside a worked formula, exact when short
and compact when long ("100M", "2,592,000").
"""

from __future__ import annotations

import math

_WORDS = ((1e15, "quadrillion"), (1e12, "trillion"), (1e9, "billion"), (1e6, "million"))
_SHORT = ((1e12, "T"), (1e9, "B"), (1e6, "M"))
_BYTE_PREFIXES = ("", "K", "M", "G", "T", "P", "E")


def _round_sig(value: float, sig: int = 3) -> float:
    if value == 0 or not math.isfinite(value):
        return value
    return round(value, sig - 1 - math.floor(math.log10(abs(value))))


def _g(value: float) -> str:
    """Up to three significant figures, no exponent for the magnitudes used here."""
    text = f"{value:.3g}"
    if "e" in text:
        return f"{value:.3e}"
    return text


def _plain(value: float) -> str:
    """A count or rate: '12 billion', '139,000', '38.6'."""
    if not math.isfinite(value):
        return str(value)
    rounded = _round_sig(value)
    size = abs(rounded)
    for scale, word in _WORDS:
        if size >= scale:
            return f"{_g(rounded / scale)} {word}"
    if size >= 1000:
        return f"{int(rounded):,}"
    return _g(rounded)


def _prefixed(value: float, unit: str) -> str:
    rounded = _round_sig(value)
    index = 0
    while abs(rounded) >= 1000 and index < len(_BYTE_PREFIXES) - 1:
        rounded /= 1000
        index += 1
    return f"{_g(rounded)} {_BYTE_PREFIXES[index]}{unit}"


def format_quantity(value: float, unit: str) -> str:
    """Render a figure the way the seeds write it, in decimal units.

    Units: ``"B"``, ``"B/s"`` (bytes, SI prefixes: 6e12 → "6 TB"); ``"bit"``,
    ``"bit/s"`` ("192 Gbit", "309 Mbit/s"); ``"fraction"`` (alias ``"%"``; the value
    is a fraction: 0.0034 → "0.34%"); ``"/s"``, ``"/day"``, ``"/month"``, ``"/year"``
    (139000 → "139,000/s"); ``"s"`` (seconds); ``"count"`` or ``""`` (a bare number,
    "12 billion"); ``"exact"`` (a whole count digit for digit: "1,024", where three
    significant figures would misstate a power of two); any other unit is appended after
    a space ("5 nodes").
    """
    value = float(value)
    if not math.isfinite(value):
        return f"{value} {unit}".strip()
    if unit == "exact":
        return f"{int(value):,}" if value.is_integer() else _plain(value)
    if unit in ("B", "B/s"):
        return _prefixed(value, unit)
    if unit in ("bit", "bit/s"):
        return _prefixed(value, unit)
    if unit in ("fraction", "%"):
        return f"{_g(_round_sig(value * 100))}%"
    if unit.startswith("/"):
        return f"{_plain(value)}{unit}"
    if unit == "s":
        if value != 0 and abs(value) < 1:
            ms = _round_sig(value * 1000)
            if abs(ms) < 1000:
                return f"{_g(ms)} ms"
            value = ms / 1000  # 0.99999 s rounds to 1,000 ms: say "1 s"
        if value.is_integer() and abs(value) < 1e10:
            return f"{int(value):,} s"
        return f"{_plain(value)} s"
    if unit in ("", "count"):
        return _plain(value)
    return f"{_plain(value)} {unit}"


def number(value: float) -> str:
    """A number inside a formula: exact when short, else compact ('100M', '2,592,000')."""
    value = float(value)
    if not math.isfinite(value):
        return str(value)
    size = abs(value)
    if size >= 1e6:
        for scale, suffix in _SHORT:
            if size >= scale and _round_sig(value / scale) == value / scale:
                return f"{_g(value / scale)}{suffix}"
        if value.is_integer() and size < 1e10:
            return f"{int(value):,}"
        for scale, suffix in _SHORT:
            if size >= scale:
                return f"{_g(_round_sig(value) / scale)}{suffix}"
    if value.is_integer():
        return f"{int(value):,}"
    if size >= 1000:
        return f"{int(_round_sig(value)):,}"
    return _g(_round_sig(value))
