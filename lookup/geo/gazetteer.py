"""Find a city or an airport by name, as one types: the places data set's own gazetteer.

The places table holds the GeoNames cities and the ``airportsdata`` airports; this index
keeps only those (businesses are found by the radius search), folded for matching
(accents dropped, case folded: ``sao`` finds *São Paulo*), keyed at the start of every
word (``heath`` finds *London Heathrow Airport*). A prefix is a binary search over the
sorted keys; matches rank whole-name starts first, then cities before airports, then
the bigger city.

Built with ``alternate_names=True`` (the server's index) it also knows what people type
for a place besides its name (:mod:`lookup.geo.altnames`): GeoNames' alternate names in
Latin script and Devanagari (``bangalore``, ``münch``, ``पुणे``) and airport codes
(``BLR``, ``VOBL``), each keyed from its start; and it tolerates typos
(:mod:`lookup.geo.fuzzy`: one from 5 characters, two from 9) when the exact prefixes
leave the page short. Ranking: fewer typos, a whole-name start, the place's own name
before another name (Meilisearch's attribute rule), then cities, then the bigger one.
Each answer says what it matched (``matched``: the name, its field, the typos).
"""

from __future__ import annotations

import bisect
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from lookup.geo.altnames import airport_codes, city_alternates
from lookup.geo.fuzzy import near_prefixes, typos_allowed

#: The kinds of place a name lookup finds.
NAMED_KINDS = ("city", "airport")
MAX_LIMIT = 20
#: Matches ranked at most per lookup (a one-letter prefix matches thousands).
MAX_SCAN = 20_000


def fold(text: str) -> str:
    """``"São Paulo"`` → ``"sao paulo"``: what a person types for a name."""
    if text.isascii():  # the same answer, without decomposing (most names)
        return text.lower().strip()
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

    def __init__(
        self,
        places: Iterable[NamedPlace],
        other_names: Mapping[str, list[tuple[str, str]]] | None = None,
    ) -> None:
        self.places = list(places)
        #: per place, its other names as (text, field); name number 0 is its own name
        self._other: list[list[tuple[str, str]]] = [[] for _ in self.places]
        keys: list[tuple[str, int, int]] = []
        for i, p in enumerate(self.places):
            name = fold(p.name)
            for pos, ch in enumerate(name):
                if pos == 0 or (not name[pos - 1].isalnum() and ch.isalnum()):
                    keys.append((name[pos:], i, 0 if pos == 0 else -1))
            seen = {name}  # "München" and "Munchen" fold alike: one key is enough
            for text, field in (other_names or {}).get(p.id, ()):
                key = fold(text)
                if key and key not in seen:
                    seen.add(key)
                    self._other[i].append((text, field))
                    keys.append((key, i, len(self._other[i])))
        keys.sort()
        self._keys = [k for k, _, _ in keys]
        self._ids = [i for _, i, _ in keys]
        # which name a key is the start of: 0 own name, -1 a later word of it, n ≥ 1 other
        self._which = [w for _, _, w in keys]

    @classmethod
    def from_rows(
        cls, rows: Iterable[Mapping[str, Any]], *, alternate_names: bool = False
    ) -> Gazetteer:
        """From place rows (the store's columns), keeping the cities and airports; with
        ``alternate_names``, the cities' GeoNames names and the airports' codes (their
        ``tags`` column) too."""
        kept = [r for r in rows if r.get("kind") in NAMED_KINDS and r.get("name")]
        other: dict[str, list[tuple[str, str]]] = {}
        if alternate_names:
            for r in kept:
                if r["kind"] == "airport":
                    other[str(r["id"])] = airport_codes(r)
            iata = {code for names in other.values() for code, f in names if f == "iata"}
            other.update(city_alternates((str(r["id"]) for r in kept), iata))
        places = (
            NamedPlace(
                str(r["id"]), str(r["name"]), str(r["kind"]), r.get("country"),
                float(r["lat"]), float(r["lng"]),
                int(r["population"]) if r.get("population") is not None else None,
            )
            for r in kept
        )  # fmt: skip
        return cls(places, other)

    def lookup(self, q: str, limit: int = 8) -> list[NamedPlace]:
        """The best ``limit`` places whose name (or one of its words) starts with ``q``."""
        return [p for p, _ in self.search(q, limit)]

    def search(self, q: str, limit: int = 8) -> list[tuple[NamedPlace, dict[str, Any]]]:
        """The best ``limit`` places for ``q``, each with what it matched: ``{"name",
        "field", "typos"}`` (field: name, alternateName, iata or icao)."""
        prefix = fold(q)
        if not prefix:
            return []
        limit = max(1, min(limit, MAX_LIMIT))
        best: dict[int, tuple[tuple[int, bool, bool, bool, int, str], int]] = {}

        def offer(j: int, typos: int) -> None:
            i, which = self._ids[j], self._which[j]
            p = self.places[i]
            whole = which >= 0  # the key is the start of a whole name
            rank = (typos, not whole, which > 0, p.kind != "city", -(p.population or 0), p.name)
            if i not in best or rank < best[i][0]:
                best[i] = (rank, j)

        start = bisect.bisect_left(self._keys, prefix)
        for j in range(start, min(len(self._keys), start + MAX_SCAN)):
            if not self._keys[j].startswith(prefix):
                break
            offer(j, 0)
        edits = typos_allowed(prefix)
        if len(best) < limit and edits:
            for j, typos in near_prefixes(self._keys, prefix, edits).items():
                if typos:
                    offer(j, typos)
        chosen = sorted(best, key=lambda i: best[i][0])[:limit]
        return [(self.places[i], self._matched(i, *best[i])) for i in chosen]

    def _matched(self, i: int, rank: tuple[Any, ...], j: int) -> dict[str, Any]:
        which = self._which[j]
        own = (self.places[i].name, "name")
        text, field = own if which <= 0 else self._other[i][which - 1]
        return {"name": text, "field": field, "typos": int(rank[0])}

    def __len__(self) -> int:
        return len(self.places)


__all__ = ["MAX_LIMIT", "NAMED_KINDS", "Gazetteer", "NamedPlace", "fold"]
