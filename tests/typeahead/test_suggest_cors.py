"""What a Typesense or Meilisearch user reaches for first with ``/v1/suggest`` (issue 27,
item 11), over a real ``lookup serve``: a browser app on another origin may call it when
the operator lists that origin (CORS, ``LOOKUP_SUGGEST_CORS_ORIGINS``); market codes are
case-insensitive (``EN-in`` is ``en-IN``); and the hot routes the framework does not see
(``/v1/suggest``, ``/{key}``) are documented in ``/openapi.json``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import running_lookup

ALLOWED = "https://app.example"


@pytest.fixture
def live(data_dir: Path) -> Iterator[str]:
    env = {"LOOKUP_SUGGEST_CORS_ORIGINS": f"{ALLOWED}, https://other.example"}
    with running_lookup(data_dir, env, timeout=120) as url:
        yield url


def test_an_allowed_origin_may_call_suggest_and_others_may_not(live: str) -> None:
    r = httpx.get(f"{live}/v1/suggest", params={"q": "ip"}, headers={"Origin": ALLOWED})
    assert r.status_code == 200 and r.json()["suggestions"]
    assert r.headers["access-control-allow-origin"] == ALLOWED
    assert "origin" in r.headers["vary"].lower()
    other = httpx.get(
        f"{live}/v1/suggest", params={"q": "ip"}, headers={"Origin": "https://evil.example"}
    )
    assert other.status_code == 200 and "access-control-allow-origin" not in other.headers
    assert "origin" in other.headers["vary"].lower()  # a shared cache must keep them apart

    preflight = {
        "Origin": ALLOWED,
        "Access-Control-Request-Method": "GET",
        "Access-Control-Request-Headers": "x-client-id",
    }
    r = httpx.options(f"{live}/v1/suggest", headers=preflight)
    assert r.status_code == 204
    assert r.headers["access-control-allow-origin"] == ALLOWED
    assert set(r.headers["access-control-allow-methods"].split(", ")) == {"GET", "HEAD"}
    assert "x-client-id" in r.headers["access-control-allow-headers"].lower()
    assert int(r.headers["access-control-max-age"]) > 0
    refused = httpx.options(
        f"{live}/v1/suggest", headers={**preflight, "Origin": "https://evil.example"}
    )
    assert refused.status_code == 403 and refused.json()["error"] == "ORIGIN_NOT_ALLOWED"


def test_market_codes_are_case_insensitive(live: str) -> None:
    want = httpx.get(f"{live}/v1/suggest", params={"q": "ip", "market": "en-IN"}).json()
    for spelling in ("EN-in", "en-in", "en_IN", " en-IN"):
        got = httpx.get(f"{live}/v1/suggest", params={"q": "ip", "market": spelling})
        assert got.status_code == 200, (spelling, got.text)
        assert got.json()["suggestions"] == want["suggestions"]
    unknown = httpx.get(f"{live}/v1/suggest", params={"q": "ip", "market": "xx-YY"})
    assert unknown.status_code == 400 and "en-IN" in unknown.json()["message"]


def test_the_hot_routes_are_in_the_openapi_document(live: str) -> None:
    paths = httpx.get(f"{live}/openapi.json").json()["paths"]
    suggest = paths["/v1/suggest"]["get"]
    assert {p["name"] for p in suggest["parameters"]} == {"q", "market", "limit", "highlight"}
    assert "200" in suggest["responses"] and "400" in suggest["responses"]
    redirect = paths["/{key}"]["get"]
    assert {"301", "302", "404", "410"} <= set(redirect["responses"])
