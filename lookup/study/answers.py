"""Reading a learner's number and scoring it against the computed one.

A learner writes estimates the way people do: ``3.5k/s``, ``12 GB``, ``1e9``,
``12 million``, ``0.34%``, ``40 ms``. :func:`parse_answer` reads such text into the
expected figure's base unit (bytes, bits, per second, seconds, a fraction, a count)
or raises :class:`AnswerError` with a message that says what was wrong. :func:`score`
judges by ratio, as estimates should be judged: within 1.25× is exact, within 3× close,
anything further off.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

EXACT_RATIO = 1.25
CLOSE_RATIO = 3.0


class AnswerError(ValueError):
    """An answer that is not a usable number; the message is meant for the learner."""


_MULTIPLIERS = {
    "k": 1e3, "thousand": 1e3, "K": 1e3,
    "m": 1e6, "M": 1e6, "mn": 1e6, "mio": 1e6, "million": 1e6, "millions": 1e6,
    "b": 1e9, "B": 1e9, "bn": 1e9, "billion": 1e9, "billions": 1e9, "g": 1e9, "G": 1e9,
    "t": 1e12, "T": 1e12, "tn": 1e12, "trillion": 1e12, "trillions": 1e12,
    "quadrillion": 1e15,
}  # fmt: skip
_SI = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15, "e": 1e18}
_BIN = {"ki": 2**10, "mi": 2**20, "gi": 2**30, "ti": 2**40, "pi": 2**50}
_TIME = {
    "ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3,
    "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0,
    "min": 60.0, "mins": 60.0, "minute": 60.0, "minutes": 60.0,
    "h": 3600.0, "hr": 3600.0, "hrs": 3600.0, "hour": 3600.0, "hours": 3600.0,
    "d": 86400.0, "day": 86400.0, "days": 86400.0,
    "month": 86400.0 * 30, "months": 86400.0 * 30,
    "y": 86400.0 * 365, "yr": 86400.0 * 365, "year": 86400.0 * 365, "years": 86400.0 * 365,
}  # fmt: skip
_RATE_WORDS = {"qps": 1.0, "rps": 1.0, "req/s": 1.0, "requests/s": 1.0, "ops/s": 1.0}
_RATE = re.compile(
    r"^(?:(?:req|reqs|requests?|queries|query|ops|clicks|searches|writes|reads|fetches|pages"
    r"|urls|links|keys|ids|lookups|keystrokes|events|messages|docs|documents)\s*)?"
    r"(?:/|per\s+|a\s+|an\s+)([a-zµμ]+)$"
)
_COUNT_WORDS = {
    "", "x", "keys", "key", "items", "item", "ids", "id", "requests", "request", "queries",
    "links", "urls", "pages", "nodes", "node", "servers", "server", "machines", "shards",
    "replicas", "cells", "hashes", "hash functions", "times", "entries", "places", "docs",
    "documents", "postings", "count", "chars", "char", "characters", "character", "letters",
    "bits", "bit", "years", "year", "tokens", "clicks", "searches",
    "fetches", "workers", "moves", "calls", "loads", "reads", "writes", "admitted",
}  # fmt: skip

_NUMBER = re.compile(
    r"""^\s*(?P<num>[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:e[+-]?\d+)?|[+-]?\.\d+(?:e[+-]?\d+)?)
        (?:\s*(?:x|×|\*)\s*10\s*\^\s*(?P<pow>[+-]?\d+))?
        \s*(?P<rest>.*?)\s*$""",
    re.IGNORECASE | re.VERBOSE,
)
_POWER = re.compile(r"^\s*(?P<base>\d+)\s*\^\s*(?P<exp>\d+)\s*(?P<rest>.*?)\s*$")


@dataclass(frozen=True)
class Verdict:
    """How close an answer came: ``exact`` (≤1.25×), ``close`` (≤3×) or ``off``."""

    verdict: str
    answer: float
    expected: float
    ratio: float

    def as_json(self) -> dict[str, object]:
        """The JSON the CLI prints."""
        return {
            "verdict": self.verdict,
            "answer": self.answer,
            "expected": self.expected,
            "ratio": None if math.isinf(self.ratio) else round(self.ratio, 4),
        }


def _split_number(text: str) -> tuple[float, str]:
    power = _POWER.match(text)
    if power:
        return float(int(power["base"]) ** int(power["exp"])), power["rest"]
    m = _NUMBER.match(text)
    if not m:
        raise AnswerError(
            f"{text.strip()!r} is not a number; write one such as 3500, 3.5k, 1e9, 12 GB or 40 ms"
        )
    value = float(m["num"].replace(",", ""))
    if m["pow"]:
        value *= 10.0 ** int(m["pow"])
    return value, m["rest"]


def _take_multiplier(rest: str, bytes_or_bits: bool) -> tuple[float, str]:
    """A leading 'k', 'million', 'bn' … (not a byte prefix when bytes are expected)."""
    words = re.match(r"^([A-Za-z]+)\b\s*(.*)$", rest)
    if words and words[1].lower() in {w.lower() for w in _MULTIPLIERS if len(w) > 2}:
        return _MULTIPLIERS[words[1].lower()], words[2]
    short = re.match(r"^(k|K|m|M|mn|bn|b|B|g|G|t|T|tn)(?![A-Za-z])\s*(.*)$", rest)
    if short and not (bytes_or_bits and short[1] in ("B", "b")):
        return _MULTIPLIERS[short[1]], short[2]
    return 1.0, rest


def _bytes(unit: str) -> float | None:
    """Bytes per unit for 'GB', 'kib', 'bytes', 'Mbit' (bits count as 1/8 byte)."""
    u = unit.strip()
    word = u.lower()
    if word in ("b", "byte", "bytes"):
        return 8.0 if u == "b" else 1.0  # a lone lower-case b is a bit
    m = re.match(r"^([kmgtpe]?)(i?)(b|bytes?|bits?|bit)$", word)
    if not m:
        return None
    prefix = m[1] + ("i" if m[2] else "")
    scale = _BIN[prefix] if m[2] else _SI[m[1]]
    is_bits = m[3].startswith("bit") or (m[3] == "b" and u[-1] == "b" and len(u) > 1)
    return scale / 8 if is_bits else scale


def _time_rate(unit: str) -> float | None:
    """Per-second factor of '/s', 'per day', 'qps', '/month'."""
    u = unit.strip().lower()
    if u in _RATE_WORDS:
        return 1.0
    m = _RATE.match(u)
    if m and m[1] in _TIME:
        return 1.0 / _TIME[m[1]]
    return None


def parse_answer(text: str, unit: str) -> float:
    """``text`` read as a figure in ``unit``'s base unit; :class:`AnswerError` if it can't be.

    ``unit`` is the expected figure's unit (as :func:`~lookup.capacity.units.format_quantity`
    knows it). A number with a unit of another dimension, a word, an empty or negative
    answer all raise with a message saying what to write instead.
    """
    if text is None or not str(text).strip():
        raise AnswerError("the answer is empty; type a number such as 3500, 3.5k or 12 GB")
    raw = str(text).strip()
    if len(raw) > 80:
        raise AnswerError("the answer is too long; type one number with an optional unit")
    value, rest = _split_number(raw)
    if value < 0:
        raise AnswerError("an estimate here is never negative; type a positive number")
    if not math.isfinite(value):
        raise AnswerError("the answer must be a finite number")
    is_bytes = unit in ("B", "B/s")
    is_bits = unit in ("bit", "bit/s")
    # A unit word of the expected kind wins over a multiplier ("1 m" is a metre when
    # metres are asked for, "12 B" twelve bytes when bytes are).
    base = _convert(rest.strip(), unit, is_bytes, is_bits)
    if base is None:
        factor, rest = _take_multiplier(rest, is_bytes or is_bits)
        value *= factor
        rest = rest.strip()
        base = _convert(rest, unit, is_bytes, is_bits)
    if base is None:
        raise AnswerError(_unit_hint(rest, unit))
    return value * base


def _convert(rest: str, unit: str, is_bytes: bool, is_bits: bool) -> float | None:
    """The factor from ``rest`` to ``unit``'s base unit, or None when it does not fit."""
    lower = rest.lower()
    if unit in ("fraction", "%"):
        return {"": 1.0, "%": 0.01, "percent": 0.01, "per cent": 0.01}.get(lower)
    if is_bytes or is_bits:
        per_s = unit.endswith("/s")
        body = rest
        if per_s:
            if not rest:
                return 1.0
            for suffix in ("/s", "ps", "/sec", " per second", "/second"):
                if lower.endswith(suffix):
                    body = rest[: -len(suffix)].strip()
                    break
            else:
                return None
            if body.lower() in ("bit", "bits") or body == "b":
                return 1.0 if is_bits else 1 / 8
        if not body:
            return 1.0
        in_bytes = _bytes(body)
        if in_bytes is None:
            return None
        return in_bytes * 8 if is_bits else in_bytes
    if unit.startswith("/"):
        expected = _time_rate(unit)
        if not rest:
            return 1.0
        got = _time_rate(rest)
        if got is None or expected is None:
            return None
        return got / expected
    if unit == "s":
        return 1.0 if not rest else _TIME.get(lower)
    if unit == "m":
        return {"": 1.0, "m": 1.0, "metres": 1.0, "meters": 1.0, "km": 1000.0}.get(lower)
    if unit == "years":
        return {"": 1.0, "y": 1.0, "yr": 1.0, "years": 1.0, "year": 1.0}.get(lower)
    if lower in _COUNT_WORDS or lower == unit.lower():
        return 1.0
    return None


def _unit_hint(rest: str, unit: str) -> str:
    wanted = {
        "B": "bytes (B, KB, MB, GB, TB)",
        "B/s": "bytes per second (MB/s, GB/s)",
        "bit": "bits (bit, Kbit, Mbit, Gbit)",
        "bit/s": "bits per second (Mbit/s, Gbps)",
        "fraction": "a fraction (0.05) or a percentage (5%)",
        "/s": "a rate (/s, per day, qps)",
        "/day": "a rate (/day, /s)",
        "s": "a duration (ms, s, min, h)",
        "m": "a distance (m, km)",
        "years": "years",
    }.get(unit, f"a plain number ({unit})" if unit not in ("", "count") else "a plain number")
    return f"{rest!r} is not a unit this answer can be given in; it wants {wanted}"


def _whole(expected: float, unit: str) -> bool:
    return unit in ("chars", "count") and 0 < expected < 30 and float(expected).is_integer()


def score(answer: float, expected: float, unit: str = "") -> Verdict:
    """Judge ``answer`` against ``expected`` by ratio (both in the same base unit).

    A fraction above one half is judged by what is left of it (1 − f): a decay factor of
    0.996 guessed as 0.9 is 25 times off in what matters, not 1.1 times. A small whole
    number (a key length, a precision, a quorum overlap) must be exact; one off is close.
    """
    if _whole(expected, unit):
        # A key length or a precision is a small whole number: one off is not exact.
        miss = abs(answer - expected)
        ratio = max(answer / expected, expected / answer) if answer > 0 else math.inf
        verdict = (
            "exact" if miss < 0.5 else "close" if miss < 1.5 and ratio <= CLOSE_RATIO else "off"
        )
        return Verdict(verdict, answer, expected, ratio)
    if unit in ("fraction", "%") and 0.5 < expected < 1 and 0 <= answer <= 1:
        inner = score(1 - answer, 1 - expected)
        return Verdict(inner.verdict, answer, expected, inner.ratio)
    if expected <= 0 or answer <= 0:
        same = math.isclose(answer, expected, rel_tol=1e-9, abs_tol=1e-12)
        return Verdict("exact" if same else "off", answer, expected, 1.0 if same else math.inf)
    ratio = max(answer / expected, expected / answer)
    verdict = "exact" if ratio <= EXACT_RATIO else "close" if ratio <= CLOSE_RATIO else "off"
    return Verdict(verdict, answer, expected, ratio)
