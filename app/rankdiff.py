"""Where two rankings of the same results disagree (the places page's ranking switch)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def rank_changes(
    shown: Sequence[dict[str, Any]], baseline: Sequence[dict[str, Any]], key: str = "id"
) -> list[str]:
    """For each shown result, its move against ``baseline``: ``▲ 3`` (up three), ``▼ 2``,
    ``=`` (same rank) or ``new`` (not in the baseline's list)."""
    where = {item.get(key): rank for rank, item in enumerate(baseline, start=1)}
    out = []
    for rank, item in enumerate(shown, start=1):
        before = where.get(item.get(key))
        if before is None:
            out.append("new")
        elif before == rank:
            out.append("=")
        else:
            out.append(f"▲ {before - rank}" if before > rank else f"▼ {rank - before}")
    return out
