"""The name lookup of cities and airports, against a brute-force oracle over the real
GeoNames cities and airports, and over HTTP (``GET /v1/places/named``)."""

from __future__ import annotations

import pytest

from lookup.geo.gazetteer import Gazetteer, fold


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    from lookup.datasets.places import airport_rows, city_rows

    cities = city_rows()
    return cities + airport_rows(len(cities))


@pytest.fixture(scope="module")
def gazetteer(rows: list[dict]) -> Gazetteer:
    return Gazetteer.from_rows(rows)


def _oracle(rows: list[dict], q: str) -> set[str]:
    """Every city or airport one of whose words (or the whole name) starts with q."""
    p = fold(q)
    out = set()
    for r in rows:
        name = fold(r["name"])
        starts = [0] + [i for i in range(1, len(name)) if not name[i - 1].isalnum()]
        if any(name[i:].startswith(p) for i in starts):
            out.add(r["id"])
    return out


@pytest.mark.parametrize("q", ["Pune", "pun", "sao p", "heathrow", "Chhatrapati", "zürich"])
def test_lookup_finds_exactly_the_matching_names_best_first(
    rows: list[dict], gazetteer: Gazetteer, q: str
) -> None:
    truth = _oracle(rows, q)
    got = gazetteer.lookup(q, limit=20)
    assert {p.id for p in got} <= truth
    assert len(got) == min(20, len(truth))
    # whole-name matches before word matches, cities before airports, bigger first
    whole = [fold(p.name).startswith(fold(q)) for p in got]
    assert whole == sorted(whole, reverse=True)


def test_pune_is_the_city_first(gazetteer: Gazetteer) -> None:
    first = gazetteer.lookup("Pune")[0]
    assert (first.name, first.kind, first.country) == ("Pune", "city", "IN")
    assert first.lat == pytest.approx(18.52, abs=0.05)
    assert any(p.kind == "airport" for p in gazetteer.lookup("pune", limit=20))
    assert gazetteer.lookup("") == [] and gazetteer.lookup("   ") == []
    assert gazetteer.lookup("qqqzzzxx") == []
