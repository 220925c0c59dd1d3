"""HTTP: /v1/suggest on the fast path and the typeahead management API, through the real app."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from lookup.kit.admin import server_admin_token
from lookup.server import create_app
from lookup.typeahead.http import install
from lookup.typeahead.serving import SuggestService
from lookup.typeahead.trending import TrendingPolicy

from .conftest import Built
from .test_trending import Clock


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def service(data_dir: Path, clock: Clock) -> SuggestService:
    policy = TrendingPolicy(floor=300, min_users=20, refresh_s=0.0)
    return SuggestService.from_data_dir(data_dir, clock=clock, trending=policy)


@pytest.fixture
def client(data_dir: Path, service: SuggestService) -> Iterator[TestClient]:
    """A client holding the admin token (the management calls here are an operator's;
    tests/typeahead/test_admin_http.py checks the refusals without it)."""
    app = create_app(data_dir, subsystems=[lambda m: install(m, service, trust_forwarded_for=True)])
    admin = {"Authorization": f"Bearer {server_admin_token(data_dir)}"}
    with TestClient(app, headers=admin) as c:
        yield c


def test_suggest_contract(client: TestClient, service: SuggestService) -> None:
    r = client.get("/v1/suggest", params={"q": "ip", "market": "en-IN", "limit": 10})
    assert r.status_code == 200
    assert r.headers["cache-control"] == "public, max-age=300"
    assert r.headers["content-type"].startswith("application/json")
    body = r.json()
    assert set(body) == {"q", "version", "complete", "suggestions", "scores"}
    assert body["q"] == "ip" and body["version"] == service.snapshot("en-IN").version
    assert body["suggestions"] == service.lookup("ip", "en-IN").suggestions
    assert body["suggestions"] and body["complete"] == service.lookup("ip", "en-IN").complete


@pytest.mark.parametrize(
    "q, market",
    [("", "en-IN"), ("s", "en-IN"), ("क", "hi-IN"), ("kia", "hi-IN"), ("क्", "hi-IN")],
)
def test_empty_one_char_devanagari_and_latin_hindi(
    client: TestClient, service: SuggestService, q: str, market: str
) -> None:
    r = client.get(f"/v1/suggest?q={quote(q)}&market={market}")
    assert r.status_code == 200
    assert r.json()["suggestions"] == service.lookup(q, market).suggestions
    assert r.json()["suggestions"]


def test_defaults_and_head(client: TestClient) -> None:
    assert client.get("/v1/suggest?q=ip").json()["suggestions"]  # market defaults to en-IN
    assert client.get("/v1/suggest").json()["q"] == ""
    head = client.head("/v1/suggest?q=ip")
    assert head.status_code == 200 and head.content == b""
    r = client.post("/v1/suggest?q=ip")
    assert r.status_code == 405 and r.json()["error"] == "METHOD_NOT_ALLOWED"


@pytest.mark.parametrize(
    "query, status, code",
    [
        ("q=" + "a" * 101, 400, "QUERY_TOO_LONG"),
        ("q=" + "%61" * 2000, 400, "QUERY_TOO_LONG"),
        ("q=ab%00cd", 400, "INVALID_QUERY"),
        ("q=ab%07", 400, "INVALID_QUERY"),
        ("q=%FF%FE", 400, "INVALID_QUERY"),
        ("q=%E0%A4", 400, "INVALID_QUERY"),  # a truncated Devanagari sequence
        ("q=ip&market=xx-XX", 400, "UNKNOWN_MARKET"),
        ("q=ip&limit=0", 400, "INVALID_LIMIT"),
        ("q=ip&limit=11", 400, "INVALID_LIMIT"),
        ("q=ip&limit=ten", 400, "INVALID_LIMIT"),
        ("q=ip&limit=-1", 400, "INVALID_LIMIT"),
    ],
)
def test_bad_input_is_a_4xx_json_error(
    client: TestClient, query: str, status: int, code: str
) -> None:
    r = client.get("/v1/suggest?" + query)
    assert r.status_code == status, r.text
    assert r.json()["error"] == code and r.json()["message"]
    assert r.headers["cache-control"] == "no-store"


def test_not_built_is_503_naming_the_command(tmp_path: Path) -> None:
    app = create_app(tmp_path, subsystems=["lookup.typeahead.http:mount"])
    with TestClient(app) as c:
        r = c.get("/v1/suggest?q=ip")
        assert r.status_code == 503
        assert r.json()["error"] == "NOT_BUILT" and "lookup typeahead build" in r.json()["message"]
        assert c.get("/healthz").json()["systems"]["typeahead"]["status"] == "NOT_BUILT"


def test_hot_blocklist_api_is_effective_at_once(client: TestClient) -> None:
    first = client.get("/v1/suggest?q=i").json()["suggestions"][0]
    r = client.post("/v1/typeahead/blocklist", json={"terms": [first.upper()]})
    assert r.status_code == 200 and first in r.json()["terms"]
    assert first not in client.get("/v1/suggest?q=i").json()["suggestions"]
    listed = client.get("/v1/typeahead/blocklist").json()
    assert first in listed["terms"] and "make a bomb" in listed["builtin"]
    assert client.delete("/v1/typeahead/blocklist", params={"term": first}).status_code == 200
    assert client.get("/v1/suggest?q=i").json()["suggestions"][0] == first
    assert client.delete("/v1/typeahead/blocklist", params={"term": first}).status_code == 404
    r = client.delete("/v1/typeahead/blocklist", params={"term": "make a bomb"})
    assert r.status_code == 409 and r.json()["error"] == "BUILTIN_TERM"
    for bad in ({}, {"terms": "x"}, {"terms": []}, {"terms": [1]}, {"terms": ["a\x00"]}):
        r = client.post("/v1/typeahead/blocklist", json=bad)
        assert 400 <= r.status_code < 500 and r.json()["error"]
    r = client.post(
        "/v1/typeahead/blocklist",
        content=b"{not json",
        headers={"content-type": "application/json"},
    )
    assert r.status_code == 400 and r.json()["error"] == "MALFORMED_JSON"


def test_searches_trend_over_http(client: TestClient, clock: Clock) -> None:
    # 40 people on 40 networks (behind the trusted proxy), without the admin token.
    public = TestClient(client.app)
    for i in range(400):
        if i % 80 == 0:
            clock.advance(60)
        r = public.post(
            "/v1/searches",
            json={"q": "Brand New Thing", "market": "en-IN"},
            headers={"X-Forwarded-For": f"198.51.{i % 40}.7"},
        )
        assert r.status_code == 202
    assert client.get("/v1/suggest?q=bra").json()["suggestions"][0] == "brand new thing"
    terms = client.get("/v1/typeahead/trending?market=en-IN").json()["terms"]
    assert terms[0]["q"] == "brand new thing" and terms[0]["count"] == 400
    clock.advance(11 * 60)
    assert "brand new thing" not in client.get("/v1/suggest?q=bra").json()["suggestions"]


@pytest.mark.parametrize(
    "payload, code",
    [
        ({"market": "en-IN"}, "INVALID_QUERY"),
        ({"q": "  ", "market": "en-IN"}, "INVALID_QUERY"),
        ({"q": "x" * 101}, "INVALID_QUERY"),
        ({"q": "a\x01b"}, "INVALID_QUERY"),
        ({"q": "ok", "market": "zz-ZZ"}, "UNKNOWN_MARKET"),
        ({"q": "ok", "market": 5}, "UNKNOWN_MARKET"),
        ({"q": "ok", "userId": 5}, "INVALID_REQUEST"),
    ],
)
def test_bad_searches(client: TestClient, payload: dict, code: str) -> None:  # type: ignore[type-arg]
    r = client.post("/v1/searches", json=payload)
    assert r.status_code == 400 and r.json()["error"] == code


def test_snapshot_management(client: TestClient, service: SuggestService, data_dir: Path) -> None:
    from .test_serving import publish_variant

    status = client.get("/v1/typeahead/snapshots").json()["markets"]
    current = status["en-IN"]["current"]["version"]
    assert status["en-IN"]["previous"] is None and status["en-IN"]["current"]["bytesPerQuery"] < 150
    v = publish_variant(
        data_dir,
        "en-IN",
        ["zzz top", *service.snapshot("en-IN").strings()],
        "20991231T000000Z-aa11bb",
    )
    r = client.post("/v1/typeahead/snapshots/en-IN/activate", json={"version": v})
    assert r.status_code == 200 and r.json() == {
        "market": "en-IN",
        "version": v,
        "previous": current,
    }
    assert client.get("/v1/suggest?q=zz").json()["version"] == v
    r = client.post("/v1/typeahead/snapshots/en-IN/rollback")
    assert r.status_code == 200 and r.json()["version"] == current
    assert client.get("/v1/suggest?q=zz").json()["version"] == current
    assert client.post("/v1/typeahead/snapshots/hi-IN/rollback").status_code == 409
    assert client.post("/v1/typeahead/snapshots/xx-XX/rollback").status_code == 404
    r = client.post("/v1/typeahead/snapshots/en-IN/activate", json={"version": "nope"})
    assert r.status_code == 404
    bad = publish_variant(data_dir, "en-IN", ["make a bomb now"], "20991231T000000Z-cc22dd")
    r = client.post("/v1/typeahead/snapshots/en-IN/activate", json={"version": bad})
    assert r.status_code == 409 and r.json()["error"] == "VALIDATION_FAILED"
    assert client.get("/v1/suggest?q=zz").json()["version"] == current
    assert client.post("/v1/typeahead/snapshots/reload").status_code == 200


def _radix_walk(keys: set[str], p: str) -> list[int]:
    """The depths of the nodes a radix-trie walk to ``p`` visits, from the keys alone: the
    root, every depth below ``len(p)`` where keys under it branch or one ends, and ``p``."""
    depths = [0]
    for d in range(1, len(p)):
        under = [k for k in keys if k.startswith(p[:d])]
        if p[:d] in keys or len({k[d] for k in under if len(k) > d}) > 1:
            depths.append(d)
    return [*depths, len(p)]


@pytest.mark.parametrize("q", ["iph", "i", "ip", "s", "sa"])
def test_trace_endpoint(client: TestClient, built: Built, q: str) -> None:
    r = client.get("/v1/typeahead/trace", params={"q": q, "market": "en-IN"})
    assert r.status_code == 200
    body = r.json()
    build = built.builds["en-IN"]
    keys = {k for k, _, _ in build.keys}
    assert any(k.startswith(q) for k in keys), q
    path = body["path"]
    assert body["found"] and body["nodesVisited"] == len(path)
    assert [step["depth"] for step in path] == _radix_walk(keys, q)  # the oracle's walk
    assert "".join(step["label"] for step in path) == q  # the labels spell the prefix
    # The stored list: the best ten suggestions any key under the prefix leads to.
    ids = sorted({t for k, t, _ in build.keys if k.startswith(q)})[:10]
    assert body["stored"] == [build.strings[t] for t in ids]
    assert client.get("/v1/typeahead/trace", params={"q": "a\x00"}).status_code == 400
    assert (
        client.get("/v1/typeahead/trace", params={"q": "a", "market": "xx-XX"}).status_code == 400
    )


def test_mounted_in_the_default_app(data_dir: Path) -> None:
    from lookup.server import SUBSYSTEMS

    assert "lookup.typeahead.http:mount" in SUBSYSTEMS
    with TestClient(create_app(data_dir)) as c:
        assert c.get("/v1/suggest?q=ip").status_code == 200
        health = c.get("/healthz").json()["systems"]["typeahead"]
        assert health["status"] == "ok" and set(health["markets"]) == {"en-IN", "hi-IN"}
