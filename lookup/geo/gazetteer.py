"""Find a city or an airport by name, as one types: the places data set's own gazetteer.

The places table holds the GeoNames cities and the ``airportsdata`` airports; this index
keeps only those (businesses are found by the radius search), folded for matching
(accents dropped, case folded: ``sao`` finds *São Paulo*), keyed at the start of every
word (``heath`` finds *London Heathrow Airport*). A prefix is a binary search over the
sorted keys; matches rank whole-name starts first, then cities before airports, then
the bigger city.
"""

from __future__ import annotations

import bisect
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

#: The kinds of place a name lookup finds.
NAMED_KINDS = ("city", "airport")
MAX_LIMIT = 20
#: Matches ranked at most per lookup (a one-letter prefix matches thousands).
MAX_SCAN = 20_000


def fold(text: str) -> str:
    """``"São Paulo"`` → ``"sao paulo"``: what a person types for a name."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold().strip()


@dataclass(frozen=True)
class NamedPlace:
    """A city or an airport, with what a suggestion line shows."""

    id: str
    name: str
    kind: str
    country: str | None
    lat: float
    lng: float
    population: int | None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form of ``GET /v1/places/named``."""
        return asdict(self)


class Gazetteer:
    """Cities and airports by name prefix (any word's start)."""

    def __init__(self, places: Iterable[NamedPlace]) -> None:
        self.places = list(places)
        keys: list[tuple[str, int]] = []
        for i, p in enumerate(self.places):
            name = fold(p.name)
            for pos, ch in enumerate(name):
                if pos == 0 or (not name[pos - 1].isalnum() and ch.isalnum()):
                    keys.append((name[pos:], i))
        keys.sort()
        self._keys = [k for k, _ in keys]
        self._ids = [i for _, i in keys]

    @classmethod
    def from_rows(cls, rows: Iterable[Mapping[str, Any]]) -> Gazetteer:
        """From place rows (the store's columns), keeping the cities and airports."""
        return cls(
            NamedPlace(
                str(r["id"]), str(r["name"]), str(r["kind"]), r.get("country"),
                float(r["lat"]), float(r["lng"]),
                int(r["population"]) if r.get("population") is not None else None,
            )
            for r in rows
            if r.get("kind") in NAMED_KINDS and r.get("name")
        )  # fmt: skip

    def lookup(self, q: str, limit: int = 8) -> list[NamedPlace]:
        """The best ``limit`` places whose name (or one of its words) starts with ``q``."""
        prefix = fold(q)
        if not prefix:
            return []
        start = bisect.bisect_left(self._keys, prefix)
        found: dict[int, bool] = {}  # place → whether its whole name starts with q
        for j in range(start, min(len(self._keys), start + MAX_SCAN)):
            if not self._keys[j].startswith(prefix):
                break
            i = self._ids[j]
            whole = fold(self.places[i].name).startswith(prefix)
            found[i] = found.get(i, False) or whole

        def rank(i: int) -> tuple[bool, bool, int, str]:
            p = self.places[i]
            return (not found[i], p.kind != "city", -(p.population or 0), p.name)

        best = sorted(found, key=rank)[: max(1, min(limit, MAX_LIMIT))]
        return [self.places[i] for i in best]

    def __len__(self) -> int:
        return len(self.places)


__all__ = ["MAX_LIMIT", "NAMED_KINDS", "Gazetteer", "NamedPlace", "fold"]
