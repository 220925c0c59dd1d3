"""Place names as people type them (issue 27 item 17): GeoNames' other names, airport
codes and Devanagari from the shipped data, accents folded, typos tolerated — the typo
walk against a brute-force edit distance, and the answers over a real ``lookup serve``."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.geo.fuzzy import near_prefixes, typos_allowed
from lookup.geo.gazetteer import Gazetteer
from tests.conftest import running_lookup


@pytest.fixture(scope="module")
def names() -> Gazetteer:
    from lookup.datasets.places import airport_rows, city_rows

    cities = city_rows()
    return Gazetteer.from_rows(cities + airport_rows(len(cities)), alternate_names=True)


def _first(g: Gazetteer, q: str) -> tuple[str, dict[str, Any]]:
    place, matched = g.search(q, 8)[0]
    return place.name, matched


def test_other_names_codes_and_devanagari(names: Gazetteer) -> None:
    assert _first(names, "bangalore") == (
        "Bengaluru",
        {"name": "Bangalore", "field": "alternateName", "typos": 0},
    )
    assert _first(names, "पुणे")[0] == "Pune"
    assert _first(names, "münch")[0] == "Munich"
    assert _first(names, "munchen")[0] == "Munich"  # accents folded both ways
    assert _first(names, "MÜNCHEN")[0] == "Munich"
    blr = names.search("BLR", 8)
    assert blr[0][0].name == "Bengaluru" and blr[0][1]["field"] == "iata"
    airports = [(p.name, m) for p, m in blr if p.kind == "airport"]
    assert any(m == {"name": "BLR", "field": "iata", "typos": 0} for _, m in airports)
    assert any(m["field"] == "icao" for p, m in names.search("VOBL", 3) if p.kind == "airport")
    # the place's own name first: Pune's own name, not an alternate, answers "pune"
    assert _first(names, "pune") == ("Pune", {"name": "Pune", "field": "name", "typos": 0})


def test_typos_from_five_and_nine_characters(names: Gazetteer) -> None:
    assert _first(names, "bangalroe") == (
        "Bengaluru",
        {"name": "Bangalore", "field": "alternateName", "typos": 1},
    )
    assert _first(names, "hethrow")[0].endswith("Heathrow Airport")
    name, matched = _first(names, "bengalruuu")  # 10 characters: two typos allowed
    assert name == "Bengaluru" and matched["typos"] == 2
    # four characters: no typo allowed (only exact prefixes), five: one
    assert all(m["typos"] == 0 for _, m in names.search("hetr", 8))
    assert any(m["typos"] == 1 for _, m in names.search("hethr", 8))
    assert typos_allowed("abcd") == 0 and typos_allowed("abcde") == 1
    assert typos_allowed("abcdefgh") == 1 and typos_allowed("abcdefghi") == 2
    # exact matches rank before any typo
    ranks = [m["typos"] for _, m in names.search("munche", 8)]
    assert ranks == sorted(ranks)


def _osa(a: str, b: str) -> int:
    """Optimal string alignment distance, written out plainly."""
    d = [[max(i, j) if min(i, j) == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(
                d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])
            )
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]


def _brute(keys: list[str], q: str, edits: int) -> dict[int, int]:
    out = {}
    for j, key in enumerate(keys):
        if not key.startswith(q[0]):
            continue
        best = min(_osa(key[:length], q) for length in range(1, len(key) + 1))
        if best <= edits:
            out[j] = best
    return out


KEYS = sorted(
    {
        "bangalore", "bangalore city", "bengaluru", "bengal", "bhangal", "mumbai", "mumbay",
        "munchen", "munich", "munchenstein", "muenchen", "monaco", "mangalore", "pune",
        "puna", "poona", "heathrow airport", "hethersett", "kolkata", "kolkatta", "calcutta",
        "bangaon", "banga", "bergen", "berlin", "bern", "beograd", "mnchen", "m",
    }
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(
    base=st.sampled_from(KEYS),
    ops=st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 20), st.sampled_from("aeimnu")), max_size=3
    ),
    cut=st.integers(0, 4),
)
def test_the_walk_equals_brute_force(base: str, ops: list[tuple[int, int, str]], cut: int) -> None:
    q = list(base)
    for op, at, ch in ops:  # insert, delete, substitute or swap somewhere after the first
        at = 1 + at % max(1, len(q))
        if op == 0:
            q.insert(at, ch)
        elif op == 1 and at < len(q):
            del q[at]
        elif op == 2 and at < len(q):
            q[at] = ch
        elif op == 3 and at + 1 < len(q):
            q[at], q[at + 1] = q[at + 1], q[at]
    text = "".join(q)[: max(1, len(q) - cut)]
    for edits in (1, 2):
        assert near_prefixes(KEYS, text, edits) == _brute(KEYS, text, edits), (text, edits)


ADMIN = {"Authorization": "Bearer places-names-admin-token"}


@pytest.fixture(scope="module")
def live(built_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    data_dir = tmp_path_factory.mktemp("names") / "data"
    shutil.copytree(built_data_dir, data_dir)
    with running_lookup(data_dir, timeout=120) as url:
        yield url


@pytest.mark.parametrize(
    ("q", "name", "field"),
    [
        ("bangalore", "Bengaluru", "alternateName"),
        ("BLR", "Bengaluru", "iata"),
        ("पुणे", "Pune", "alternateName"),
        ("münch", "Munich", "alternateName"),
        ("Munchen", "Munich", "alternateName"),
        ("bangalroe", "Bengaluru", "alternateName"),
        ("São Paulo", "São Paulo", "name"),
    ],
)
def test_named_over_http(live: str, q: str, name: str, field: str) -> None:
    r = httpx.get(f"{live}/v1/places/named", params={"q": q, "limit": 5}, timeout=120)
    assert r.status_code == 200, r.text
    first = r.json()["results"][0]
    assert first["name"] == name and first["matched"]["field"] == field
    assert first["kind"] == "city" and first["population"] > 1_000_000


def test_named_over_http_airport_code_and_refusals(live: str) -> None:
    r = httpx.get(f"{live}/v1/places/named", params={"q": "blr", "limit": 10}, timeout=120)
    airports = [p for p in r.json()["results"] if p["kind"] == "airport"]
    assert airports and airports[0]["matched"] == {"name": "BLR", "field": "iata", "typos": 0}
    assert httpx.get(f"{live}/v1/places/named", params={"q": "x" * 101}).status_code == 400
    bad = httpx.get(f"{live}/v1/places/named", params={"q": "pun", "limit": "0"})
    assert bad.status_code == 400 and bad.json()["error"]
