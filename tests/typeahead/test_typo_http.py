"""Typo tolerance, scores and highlights over real HTTP: ``lookup serve`` on the query log
the project generates (issue 27 items 7 and 11).

The misspellings of the issue find what a person meant; corrected suggestions are marked
(``typos``) and come after the exact ones; every suggestion carries its score; with
``highlight=true`` each carries the ranges to bold. The served corrections equal a
brute-force scan of every key of the snapshot.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from lookup.typeahead import querylog, run
from lookup.typeahead.fuzzy import TYPO, TypoPolicy, corrections, prefix_distance
from lookup.typeahead.serving import SuggestService
from tests.conftest import running_lookup, shared_build

EVENTS = 300_000  # as tests/typeahead/test_cited_examples.py: the generator's own log


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    def build(target: Path) -> None:
        log = querylog.generate(EVENTS, seed=querylog.DEFAULT_SEED)
        assert run(target, querylog.write(log, querylog.log_path(target))).ok

    return shared_build(tmp_path_factory, "typo-data", build)


@pytest.fixture(scope="module")
def api(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    import shutil

    served = tmp_path_factory.mktemp("typo-serve") / "data"
    shutil.copytree(data_dir, served)
    with running_lookup(served) as url, httpx.Client(base_url=url, timeout=30) as client:
        yield client


def _suggest(api: httpx.Client, **params: str) -> dict:  # type: ignore[type-arg]
    r = api.get("/v1/suggest", params=params)
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("market", "typed", "meant"),
    [
        ("en-IN", "ipohne", "iphone"),  # two letters swapped: one typo (OSA)
        ("en-IN", "iphomw", "iphone"),  # two slips onto neighbouring keys
        ("en-IN", "biriyani", "biryani"),  # one letter too many, eight letters: two allowed
        ("hi-IN", "dilli", "दिल्ली"),  # Hindi in Latin letters, walked as Devanagari too
        ("hi-IN", "mosam", "मौसम"),
    ],
)
def test_a_misspelt_prefix_finds_what_was_meant(
    api: httpx.Client, market: str, typed: str, meant: str
) -> None:
    body = _suggest(api, q=typed, market=market)
    assert any(meant in s for s in body["suggestions"]), body
    assert len(body["typos"]) == len(body["suggestions"]) == len(body["scores"])
    hits = [t for s, t in zip(body["suggestions"], body["typos"], strict=True) if meant in s]
    assert all(t > 0 for t in hits), body  # marked as corrected
    assert body["complete"] is False


def test_a_prefix_that_finds_something_is_left_alone_by_default(api: httpx.Client) -> None:
    body = _suggest(api, q="iphone 16 pro", market="en-IN")
    assert 0 < len(body["suggestions"]) < 10 and "typos" not in body, body


def test_common_prefixes_are_answered_as_before_with_scores(api: httpx.Client) -> None:
    body = _suggest(api, q="weather", market="en-IN")
    assert "typos" not in body and "highlights" not in body
    assert len(body["suggestions"]) == 10 == len(body["scores"])
    assert body["scores"] == sorted(body["scores"], reverse=True)
    assert all(s.startswith("weather") for s in body["suggestions"])


def test_highlights_bold_the_prefix_or_the_corrected_span(api: httpx.Client) -> None:
    body = _suggest(api, q="weat", market="en-IN", highlight="true")
    assert body["highlights"] == [[[0, 4]]] * len(body["suggestions"])
    body = _suggest(api, q="ipohne", market="en-IN", highlight="1")
    for s, ranges in zip(body["suggestions"], body["highlights"], strict=True):
        assert ranges == [[0, 6]], (s, ranges)  # "iphone" of "iphone 15"
    assert "highlights" not in _suggest(api, q="weat", highlight="false")


@pytest.mark.parametrize(
    ("query", "code"),
    [
        ("q=ip&highlight=maybe", "INVALID_PARAMETER"),
        ("q=ip&higlight=true", "UNKNOWN_PARAMETER"),
        ("q=ip&typos=0", "UNKNOWN_PARAMETER"),
    ],
)
def test_bad_parameters_are_refused(api: httpx.Client, query: str, code: str) -> None:
    r = api.get(f"/v1/suggest?{query}")
    assert r.status_code == 400, r.text
    assert r.json()["error"] == code
    if code == "UNKNOWN_PARAMETER":
        assert "highlight" in r.json()["message"]  # names the accepted ones


def test_the_new_fields_are_documented(api: httpx.Client) -> None:
    doc = api.get("/openapi.json").json()["paths"]["/v1/suggest"]["get"]
    assert "highlight" in {p["name"] for p in doc["parameters"]}
    props = doc["responses"]["200"]["content"]["application/json"]["schema"]["properties"]
    assert {"scores", "typos", "highlights"} <= props.keys()


def test_the_settings_fill_short_pages_or_switch_it_off(data_dir: Path, tmp_path: Path) -> None:
    import shutil

    served = tmp_path / "data"
    shutil.copytree(data_dir, served)
    with running_lookup(served, env={"LOOKUP_TYPEAHEAD_TYPO_BELOW": "10"}) as url:
        body = httpx.get(f"{url}/v1/suggest", params={"q": "iphone 16 pro"}, timeout=30).json()
    typos = body["typos"]  # the exact ones first, then the corrected ones
    assert typos[0] == 0 and max(typos) > 0 and typos == sorted(typos), body
    for s, t in zip(body["suggestions"], typos, strict=True):
        assert s.startswith("iphone 16 pro") == (t == 0), body
    with running_lookup(served, env={"LOOKUP_TYPEAHEAD_TYPO_TOLERANCE": "off"}) as url:
        body = httpx.get(f"{url}/v1/suggest", params={"q": "ipohne"}, timeout=30).json()
    assert body["suggestions"] == [] and "typos" not in body


@pytest.mark.parametrize(
    ("market", "typed"), [("en-IN", "ipohne"), ("en-IN", "biriyani"), ("hi-IN", "kya haal")]
)
def test_served_corrections_equal_a_scan_of_every_key(
    data_dir: Path, market: str, typed: str
) -> None:
    service = SuggestService.from_data_dir(data_dir)
    snap = service.snapshot(market)
    policy = TypoPolicy(budget=10**9)
    got, variants = corrections(snap, typed, 10, frozenset(), policy)
    assert variants == () or market == "hi-IN"
    allowed = policy.typos(len(typed)) * TYPO
    best: dict[int, int] = {}
    for key, target in snap.reader.iter_keys():
        cost = min(prefix_distance(q, key)[0] for q in (typed, *variants))
        if 0 < cost <= allowed:
            best[target] = min(best.get(target, cost), cost)
    exact = {t for key, t in snap.reader.iter_keys() if key.startswith(typed)}
    want = sorted(
        ((t, c) for t, c in best.items() if t not in exact), key=lambda tc: (tc[1], tc[0])
    )[:10]
    assert [(c.target, c.cost) for c in got if c.target not in exact] == want
    service.close()
