"""Distances in km or miles on input and output (issue 27 item 14), as Elasticsearch
writes them: ``radius=2km`` / ``1.5mi`` / ``500m`` / ``6562ft``, and ``unit=mi`` adds each
result's distance and the radius used in miles beside the metres.
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lookup.geo.units import UNITS, UnitError, check_unit, in_unit, parse_distance
from tests.conftest import running_lookup

SHANGHAI = {"lat": "31.2222", "lng": "121.4581"}


@given(
    number=st.floats(min_value=0.001, max_value=1e6, allow_nan=False),
    unit=st.sampled_from(sorted(UNITS)),
    upper=st.booleans(),
)
def test_a_distance_with_a_unit_is_its_number_times_the_unit(
    number: float, unit: str, upper: bool
) -> None:
    text = f"{number!r}{unit.upper() if upper else unit}"
    assert math.isclose(parse_distance(text), float(repr(number)) * UNITS[unit], rel_tol=1e-12)
    assert math.isclose(parse_distance(repr(number)), number)  # a bare number: metres


def test_the_factors_are_the_international_definitions() -> None:
    assert parse_distance("1mi") == 1609.344 and parse_distance("1nmi") == 1852.0
    assert parse_distance("3ft") == pytest.approx(parse_distance("1yd"))
    assert parse_distance(" 2 km ") == 2000.0 and parse_distance(".5km") == 500.0
    assert in_unit(1609.344, "mi") == 1.0 and in_unit(2500, "km") == 2.5
    assert check_unit("MI") == "mi"


@pytest.mark.parametrize("bad", ["", "km", "2 parsecs", "-5km", "2k m", "nan", "1e999", "2kmh"])
def test_a_bad_distance_says_what_is_accepted(bad: str) -> None:
    with pytest.raises(UnitError):
        parse_distance(bad)


@pytest.fixture(scope="module")
def live(built_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    data_dir = tmp_path_factory.mktemp("units") / "data"
    shutil.copytree(built_data_dir, data_dir)
    with running_lookup(data_dir, timeout=120) as url:
        yield url


def _ids(body: dict[str, object]) -> list[str]:
    return [str(p["id"]) for p in body["results"]]  # type: ignore[index, union-attr]


def test_radius_in_km_and_miles_over_http(live: str) -> None:
    with httpx.Client(base_url=live, timeout=60) as c:
        metres = c.get("/v1/search", params={**SHANGHAI, "radius": "3000", "widen": "false"})
        km = c.get("/v1/search", params={**SHANGHAI, "radius": "3km", "widen": "false"})
        assert metres.status_code == km.status_code == 200, km.text
        assert _ids(km.json()) == _ids(metres.json()) and km.json()["total"] > 0
        miles = c.get(
            "/v1/search",
            params={**SHANGHAI, "radius": "1.864mi", "widen": "false", "unit": "mi"},
        ).json()
        assert miles["unit"] == "mi" and miles["radiusUsed"] == pytest.approx(1.864, abs=1e-3)
        for place in miles["results"]:
            assert place["distance"] == round(place["distanceM"] / 1609.344, 3)
            assert place["distanceM"] <= 1.864 * 1609.344 + 1
        assert "distance" not in metres.json()["results"][0]  # metres only, as before


def test_nearest_k_reports_miles_too(live: str) -> None:
    with httpx.Client(base_url=live, timeout=60) as c:
        params = {**SHANGHAI, "sort": "distance", "limit": "5", "unit": "km"}
        body = c.get("/v1/search", params=params).json()
        assert [p["distance"] for p in body["results"]] == [
            round(p["distanceM"] / 1000, 3) for p in body["results"]
        ]


@pytest.mark.parametrize(
    ("params", "needle"),
    [
        ({"radius": "2 parsecs"}, "unknown unit"),
        ({"radius": "far"}, "2km"),
        ({"radius": "2000", "unit": "furlong"}, "unknown unit"),
    ],
)
def test_bad_units_are_a_400_naming_the_accepted_ones(
    live: str, params: dict[str, str], needle: str
) -> None:
    r = httpx.get(f"{live}/v1/search", params={**SHANGHAI, **params}, timeout=60)
    assert r.status_code == 400, r.text
    assert r.json()["error"] == "INVALID_PARAMETER" and needle in r.json()["message"]
