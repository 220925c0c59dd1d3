"""Vector clocks: which of two versions descends from the other, or are they concurrent.

A clock maps an actor (the client that wrote, or the coordinating node) to how many
writes it has made in the value's history. ``a`` happened before ``b`` when every entry
of ``a`` is at most ``b``'s and they differ; neither before the other is a genuine
conflict, kept as siblings for the application to merge (the seed's shopping cart).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any

Clock = dict[str, int]

__all__ = ["Clock", "Order", "compare", "descends", "increment", "merge", "normal", "reconcile"]


class Order(StrEnum):
    """How two clocks relate."""

    BEFORE = "before"
    AFTER = "after"
    EQUAL = "equal"
    CONCURRENT = "concurrent"


def descends(a: Mapping[str, int], b: Mapping[str, int]) -> bool:
    """Whether ``a`` has seen everything ``b`` has (``a >= b`` entry by entry)."""
    return all(a.get(actor, 0) >= count for actor, count in b.items())


def compare(a: Mapping[str, int], b: Mapping[str, int]) -> Order:
    """The causal order of ``a`` relative to ``b``."""
    a_ge, b_ge = descends(a, b), descends(b, a)
    if a_ge and b_ge:
        return Order.EQUAL
    if a_ge:
        return Order.AFTER
    if b_ge:
        return Order.BEFORE
    return Order.CONCURRENT


def merge(clocks: Iterable[Mapping[str, int]]) -> Clock:
    """The least clock that descends from all of ``clocks`` (entry-wise maximum)."""
    out: Clock = {}
    for clock in clocks:
        for actor, count in clock.items():
            if count > out.get(actor, 0):
                out[actor] = count
    return out


def normal(clock: Mapping[str, int]) -> Clock:
    """``clock`` without zero entries: ``{"a": 0}`` and ``{}`` are one clock (no write by
    ``a`` seen), so they must compare and store alike on every replica."""
    return {actor: count for actor, count in clock.items() if count > 0}


def increment(clock: Mapping[str, int], actor: str) -> Clock:
    """``clock`` with one more write by ``actor``."""
    if not actor:
        raise ValueError("a vector-clock actor must be a non-empty string")
    out = normal(clock)
    out[actor] = out.get(actor, 0) + 1
    return out


def reconcile(versions: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Drop every version some other version descends from; keep one of equal clocks
    (the same one on every replica, whatever order they arrive in).

    ``versions`` are dicts with a ``"clock"``; what is left are the concurrent siblings,
    sorted by their clock's text so every replica stores them in one order.
    """
    kept: list[dict[str, Any]] = []
    for version in versions:
        clock = normal(version["clock"])
        if any(
            descends(k["clock"], clock) and (k["clock"] != clock or _rank(k) >= _rank(version))
            for k in kept
        ):
            continue  # covered by a descendant, or by an equal clock that ranks higher
        kept = [k for k in kept if not descends(clock, k["clock"])]
        kept.append({**version, "clock": clock})
    return sorted(kept, key=lambda v: sorted(v["clock"].items()))


def _rank(version: Mapping[str, Any]) -> tuple[str, float]:
    # Two different versions with one clock only arise from a writer reusing a counter;
    # every replica then keeps the same one, so they still converge.
    return (str(version.get("value")), float(version.get("ts", 0.0)))
