"""``GET /search`` and the search management endpoints, through the real app."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from lookup.kit.admin import admin_token_path
from lookup.search import analyze_query
from lookup.server import create_app

SEARCH = ["lookup.search.http:mount"]
ADMIN_TOKEN = "search-admin-token-for-tests"
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


@pytest.fixture
def client(tmp_path: Path, index_4: Path) -> Iterator[TestClient]:
    data = tmp_path / "data"
    shutil.copytree(index_4, data / "search")
    admin_token_path(data).parent.mkdir(parents=True)
    admin_token_path(data).write_text(ADMIN_TOKEN + "\n")
    with TestClient(create_app(data, subsystems=SEARCH), raise_server_exceptions=False) as c:
        yield c


def test_search_answers_exactly_the_design_contract(client: TestClient) -> None:
    r = client.get("/search", params={"q": "return value", "page": 1, "limit": 5})
    assert r.status_code == 200
    body = r.json()
    assert list(body) == [
        "query",
        "estimatedTotal",
        "tookMs",
        "results",
        "shardsQueried",
        "shardsAnswered",
    ]
    assert body["query"] == "return value"
    assert body["shardsQueried"] == body["shardsAnswered"] == 4
    assert 0 < len(body["results"]) <= 5 and body["estimatedTotal"] >= len(body["results"])
    for item in body["results"]:
        contract = [k for k in item if k != "moreFromSite"]  # added only when it says something
        assert contract == ["url", "title", "snippet", "score", "crawledAt", "cachedUrl"]
        assert item["crawledAt"].endswith("Z")
    scores = [i["score"] for i in body["results"]]
    assert scores == sorted(scores, reverse=True)
    page2 = client.get("/search", params={"q": "return value", "page": 2, "limit": 5}).json()
    assert {i["url"] for i in page2["results"]}.isdisjoint({i["url"] for i in body["results"]})


def test_explain_and_trace(client: TestClient) -> None:
    body = client.get("/search", params={"q": "heap", "explain": "true", "trace": "1"}).json()
    ex = body["results"][0]["explain"]
    assert {"terms", "bm25", "signals", "docLength", "avgDocLength"} <= set(ex)
    assert ex["terms"][0]["term"] == "heap" and ex["terms"][0]["tf"] >= 1
    assert len(body["fanout"]["shards"]) == 4


@pytest.mark.parametrize(
    ("params", "status", "code"),
    [
        ({}, 400, "EMPTY_QUERY"),
        ({"q": ""}, 400, "EMPTY_QUERY"),
        ({"q": "   "}, 400, "EMPTY_QUERY"),
        ({"q": "x" * 501}, 400, "QUERY_TOO_LONG"),
        ({"q": " ".join(f"word{i}" for i in range(40))}, 400, "QUERY_TOO_LONG"),
        ({"q": "heap", "page": "two"}, 400, "INVALID_PARAMETER"),
        ({"q": "heap", "page": "0"}, 400, "INVALID_PAGE"),
        ({"q": "heap", "limit": "0"}, 400, "INVALID_LIMIT"),
        ({"q": "heap", "limit": "101"}, 400, "INVALID_LIMIT"),
        ({"q": "heap", "page": "11", "limit": "100"}, 400, "PAGE_TOO_DEEP"),
        ({"q": "heap", "page": "99999999999999999999"}, 400, "PAGE_TOO_DEEP"),
        ({"q": "heap", "explain": "maybe"}, 400, "INVALID_PARAMETER"),
        ({"q": "heap", "deadlineMs": "0"}, 400, "INVALID_PARAMETER"),
        ({"q": "heap", "deadlineMs": "soon"}, 400, "INVALID_PARAMETER"),
        ({"q": "heap", "trackTotalHits": "-1"}, 400, "INVALID_PARAMETER"),
        ({"q": "heap", "trackTotalHits": "lots"}, 400, "INVALID_PARAMETER"),
    ],
)
def test_bad_queries_get_4xx_json(client: TestClient, params: dict, status: int, code: str) -> None:
    r = client.get("/search", params=params)
    assert r.status_code == status, r.text
    assert r.json()["error"] == code and r.json()["message"]


@pytest.mark.parametrize(
    "q",
    [
        "!!!",
        "the and of",
        "\u0000\u0001",
        "🙂 🙃",
        "\u202e\u200d",
        "%ED%A0%80",
        "ﾃｽﾄ",
        "日本語の検索",
        "'; DROP TABLE pages; --",
        "<script>alert(1)</script>",
        "a" * 500,
    ],
)
def test_odd_queries_get_sensible_answers(client: TestClient, q: str) -> None:
    """An odd query means exactly its index terms: nothing when it has none, else the same
    answer as those words typed plainly; it is echoed as sent and never breaks a snippet."""
    # typo tolerance measures a word as typed (TABLE has 5 letters, its term tabl 4): off
    r = client.get("/search", params={"q": q, "typos": "false"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["query"] == q
    terms = analyze_query(q)
    if not terms:
        assert body["results"] == [] and body["estimatedTotal"] == 0
        return
    plain = client.get("/search", params={"q": " ".join(terms), "typos": "false"}).json()
    assert [i["url"] for i in body["results"]] == [i["url"] for i in plain["results"]]
    assert body["estimatedTotal"] == plain["estimatedTotal"]
    for item in body["results"]:
        assert "<script" not in item["snippet"] and "<script" not in item["title"]


def test_raw_invalid_utf8_in_the_query_string(client: TestClient) -> None:
    r = client.get("/search?q=%ED%A0%80%FF&limit=3")
    assert r.status_code == 200
    assert r.json()["results"] == []


def test_not_built_names_the_command(tmp_path: Path) -> None:
    with TestClient(create_app(tmp_path / "empty", subsystems=SEARCH)) as c:
        r = c.get("/search", params={"q": "heap"})
        assert r.status_code == 503
        assert r.json()["error"] == "NOT_BUILT" and "lookup index" in r.json()["message"]
        assert c.get("/search/shards").status_code == 503
        assert c.get("/healthz").json()["systems"]["search"]["status"] == "NOT_BUILT"


def test_fault_switch_endpoints_drive_partial_results(client: TestClient) -> None:
    r = client.put("/search/shards/2/fault", json={"mode": "dead"}, headers=ADMIN)
    assert r.status_code == 200 and r.json()["replicas"][0]["fault"]["mode"] == "dead"
    body = client.get("/search", params={"q": "return value", "deadlineMs": 50}).json()
    assert body["shardsAnswered"] == 3 and body["shardsQueried"] == 4
    status = client.get("/search/shards").json()
    assert status["shards"][2]["deadlineMisses"] == 1 and status["recent"]
    assert client.delete("/search/shards/faults", headers=ADMIN).status_code == 200
    assert client.get("/search", params={"q": "return value"}).json()["shardsAnswered"] == 4
    r = client.put(
        "/search/shards/0/fault", json={"mode": "slow", "replica": 0, "delayMs": 5}, headers=ADMIN
    )
    assert r.json()["replicas"][0]["fault"] == {"mode": "slow", "delayMs": 5.0, "probability": 1.0}
    assert (
        client.put("/search/shards/9/fault", json={"mode": "dead"}, headers=ADMIN).status_code
        == 404
    )
    assert (
        client.put(
            "/search/shards/0/fault", json={"mode": "dead", "replica": 5}, headers=ADMIN
        ).status_code
        == 404
    )
    bad = client.put("/search/shards/0/fault", json={"mode": "melt"}, headers=ADMIN)
    assert bad.status_code == 422 and bad.json()["error"] == "INVALID_REQUEST"
    broken = client.put(
        "/search/shards/0/fault",
        content=b"{",
        headers={"content-type": "application/json", **ADMIN},
    )
    assert broken.status_code == 400 and broken.json()["error"] == "MALFORMED_JSON"
    r = client.put("/search/coordinator", json={"deadlineMs": 120, "hedging": False}, headers=ADMIN)
    assert r.json()["deadlineMs"] == 120 and r.json()["hedging"] is False
    assert client.post("/search/shards/reset", headers=ADMIN).json()["shards"][0]["queries"] == 0


def test_delete_endpoint_removes_a_page_at_once(client: TestClient) -> None:
    first = client.get("/search", params={"q": "return value"}).json()["results"][0]
    r = client.delete("/search/docs", params={"url": first["url"]}, headers=ADMIN)
    assert r.status_code == 200 and r.json()["deleted"] is True
    after = client.get("/search", params={"q": "return value"}).json()["results"]
    assert first["url"] not in [i["url"] for i in after]
    assert (
        client.delete(
            "/search/docs", params={"url": "http://nope.test/"}, headers=ADMIN
        ).status_code
        == 404
    )
    assert client.delete("/search/docs", headers=ADMIN).json()["error"] == "MISSING_URL"
    assert client.get("/search/status").json()["realtime"]["pendingDeletions"] == 1


def test_search_is_reachable_with_every_subsystem_mounted(tmp_path: Path, index_4: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(index_4, data / "search")
    with TestClient(create_app(data), raise_server_exceptions=False) as c:
        r = c.get("/search", params={"q": "heap"})
        assert r.status_code == 200 and r.json()["results"]
        assert c.get("/healthz").json()["systems"]["search"]["status"] == "ok"


@pytest.mark.parametrize(
    "q", ['"return value"', '"', '""', '"the of"', 'a "b', "“return value”", '"' * 499 + "x"]
)
def test_quoted_phrases_over_http(client: TestClient, q: str) -> None:
    r = client.get("/search", params={"q": q})
    assert r.status_code == 200, r.text
    body = r.json()
    if q in ('"return value"', "“return value”"):
        loose = client.get("/search", params={"q": "return value"}).json()
        assert 0 < body["estimatedTotal"] < loose["estimatedTotal"]
        assert all("<em>" in i["snippet"] for i in body["results"])
    else:
        assert body["estimatedTotal"] >= 0


MUTATING = [
    ("PUT", "/search/shards/0/fault", {"json": {"mode": "dead"}}),
    ("DELETE", "/search/shards/faults", {}),
    ("POST", "/search/shards/reset", {}),
    ("PUT", "/search/coordinator", {"json": {"deadlineMs": 1}}),
    ("DELETE", "/search/docs", {"params": {"url": "http://docs.sandbox.test/"}}),
]


@pytest.mark.parametrize(("method", "path", "kw"), MUTATING)
def test_every_mutating_endpoint_needs_the_admin_token(
    client: TestClient, method: str, path: str, kw: dict[str, object]
) -> None:
    before = client.get("/search/shards").json()
    none = client.request(method, path, **kw)  # type: ignore[arg-type]
    assert none.status_code == 401 and none.json()["error"] == "UNAUTHORIZED"
    wrong = client.request(method, path, headers={"Authorization": "Bearer guess"}, **kw)  # type: ignore[arg-type]
    assert wrong.status_code == 403 and wrong.json()["error"] == "FORBIDDEN"
    after = client.get("/search/shards").json()
    assert after["deadlineMs"] == before["deadlineMs"]
    assert [r["fault"] for r in after["shards"][0]["replicas"]] == [
        r["fault"] for r in before["shards"][0]["replicas"]
    ]
    assert client.get("/search/status").json()["realtime"]["pendingDeletions"] == 0
    assert client.request(method, path, headers=ADMIN, **kw).status_code in (200, 404)  # type: ignore[arg-type]


def test_pruned_pages_equal_exhaustive_ones_and_the_total_says_its_relation(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``trackTotalHits`` (Elasticsearch's ``track_total_hits``) over HTTP: below the
    threshold the shards take their top k by dynamic pruning (forced here on every query
    shape: these lists are short) and serve exactly the pages of scoring every match
    (``trackTotalHits=true``); the total is exact, or a lower bound with ``gte``.

    Scored on the numpy path: beside the compiled kernels the planner prunes OR alone and
    only where MaxScore leaves most postings unscored (issue 24; tests/search/test_pruning.py
    covers that choice), so AND pages would never be pruned here."""
    from lookup.search import kernels, pruning, shard

    monkeypatch.setattr(kernels, "ready", lambda: False)
    monkeypatch.setattr(shard, "PRUNE_MIN_POSTINGS", 0)
    monkeypatch.setattr(shard, "AND_SEED", 0)
    monkeypatch.setattr(shard, "PROBE_RATIO", 0)
    monkeypatch.setattr(pruning, "PROBE_RATIO", 0)
    monkeypatch.setattr(pruning, "AND_SEED", 2)
    relations = set()
    for q in ("heap", "list sort", "return value", "thread lock queue", "file path", "os"):
        for page in (1, 2):
            params = {"q": q, "page": page, "limit": 5}
            exact = client.get("/search", params={**params, "trackTotalHits": "true"}).json()
            default = client.get("/search", params=params).json()
            pruned = client.get("/search", params={**params, "trackTotalHits": "0"}).json()
            assert "totalRelation" not in exact and "totalRelation" not in default
            assert default["estimatedTotal"] == exact["estimatedTotal"]  # under 10,000: exact
            want = [(r["url"], r["score"]) for r in exact["results"]]
            assert [(r["url"], r["score"]) for r in pruned["results"]] == want, (q, page)
            assert [(r["url"], r["score"]) for r in default["results"]] == want, (q, page)
            relations.add(pruned.get("totalRelation", "eq"))
            if pruned.get("totalRelation") == "gte":
                assert len(pruned["results"]) <= pruned["estimatedTotal"]
                assert pruned["estimatedTotal"] <= exact["estimatedTotal"], q
            else:
                assert pruned["estimatedTotal"] == exact["estimatedTotal"], q
    assert relations == {"eq", "gte"}  # both cases were seen
