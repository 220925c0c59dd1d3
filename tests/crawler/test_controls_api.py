"""The crawler's control and health endpoints over real HTTP (uvicorn on loopback)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from lookup.crawler import Sandbox, crawl
from lookup.kit.admin import load_admin_token
from lookup.kit.storeurl import parse_store_url
from lookup.server import create_app
from tests.conftest import serve_in_thread
from tests.crawler.conftest import test_config


@pytest.fixture(scope="module")
def api(web: Sandbox, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """The API over a data directory holding one finished crawl of the small sandbox."""
    data = tmp_path_factory.mktemp("data")
    crawl(test_config(data / "crawls" / "c1", web, max_pages=40))
    token = load_admin_token(data)
    app = create_app(data, subsystems=["lookup.crawler.http:mount"])
    with serve_in_thread(app) as url:
        yield url, token


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_issuing_needs_the_admin_token(api: tuple[str, str]) -> None:
    url, _ = api
    body = {"command": "block-host", "target": "shop.sandbox.test"}
    r = httpx.post(f"{url}/crawler/controls", json=body)
    assert r.status_code == 401 and r.json()["error"] == "UNAUTHORIZED"
    r = httpx.post(f"{url}/crawler/controls", json=body, headers=_auth("wrong"))
    assert r.status_code == 403 and r.json()["error"] == "FORBIDDEN"


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"command": "block-host", "target": "not a host"}, 400, "BAD_HOST"),
        ({"command": "recrawl", "target": "javascript:alert(1)"}, 400, "BAD_URL"),
        ({"command": "block-pattern", "target": ""}, 400, "BAD_PATTERN"),
        ({"command": "set-delay", "target": "a.test", "value": -2}, 422, "INVALID_REQUEST"),
        ({"command": "nope"}, 422, "INVALID_REQUEST"),
    ],
)
def test_bad_commands_get_a_json_error(
    api: tuple[str, str], body: dict[str, object], status: int, code: str
) -> None:
    url, token = api
    r = httpx.post(f"{url}/crawler/controls", json=body, headers=_auth(token))
    assert r.status_code == status, r.text
    assert r.json()["error"] == code


def test_a_command_shows_in_the_state_and_the_health_view(api: tuple[str, str]) -> None:
    url, token = api
    r = httpx.post(
        f"{url}/crawler/controls",
        json={"command": "block-host", "target": "news.sandbox.test", "note": "asked us to stop"},
        headers=_auth(token),
    )
    assert r.status_code == 200, r.text
    version = r.json()["issued"]["version"]
    r = httpx.post(
        f"{url}/crawler/controls",
        json={"command": "set-delay", "target": "docs.sandbox.test", "value": 4},
        headers=_auth(token),
    )
    state = httpx.get(f"{url}/crawler/controls").json()
    assert "news.sandbox.test" in state["state"]["blockedHosts"]
    assert state["state"]["delays"]["docs.sandbox.test"] == 4.0
    assert any(rec["version"] == version for rec in state["log"])
    health = httpx.get(f"{url}/crawler/health").json()
    rows = {h["host"].split(":")[0]: h for h in health["hosts"]}
    assert rows["news.sandbox.test"]["blocked"] == "news.sandbox.test"
    assert rows["docs.sandbox.test"]["delay_override"] == 4.0
    docs = rows["docs.sandbox.test"]
    assert docs["requests"] >= 1 and docs["robots"] is not None
    assert docs["requests_by_kind"].get("robots") == 1


def test_health_counts_match_the_fetch_log(api: tuple[str, str]) -> None:
    """Oracle: the per-host request counts are the crawl's own fetch table, counted by SQL."""
    import sqlite3

    url, _ = api
    rows = httpx.get(f"{url}/crawler/health", params={"crawl": "c1"}).json()["hosts"]
    state = httpx.get(f"{url}/crawler/controls").json()["crawl"]
    path = parse_store_url(state).path
    assert path is not None
    with sqlite3.connect(path) as db:
        want = dict(db.execute("SELECT host, count(*) FROM fetches GROUP BY host"))
    assert {h["host"]: h["requests"] for h in rows if h["requests"]} == want
    one = rows[0]["host"]
    assert httpx.get(f"{url}/crawler/hosts/{one}").json()["host"] == one


def test_unknown_crawls_and_hosts_are_404(api: tuple[str, str]) -> None:
    url, _ = api
    r = httpx.get(f"{url}/crawler/health", params={"crawl": "nope"})
    assert r.status_code == 404 and r.json()["error"] == "NO_SUCH_CRAWL"
    r = httpx.get(f"{url}/crawler/health", params={"crawl": "../etc"})
    assert r.status_code == 400 and r.json()["error"] == "BAD_CRAWL"
    r = httpx.get(f"{url}/crawler/hosts/nowhere.test")
    assert r.status_code == 404 and r.json()["error"] == "NO_SUCH_HOST"


def test_no_crawl_yet_is_404(tmp_path: Path) -> None:
    app = create_app(tmp_path, subsystems=["lookup.crawler.http:mount"])
    with serve_in_thread(app) as url:
        r = httpx.get(f"{url}/crawler/controls")
    assert r.status_code == 404 and r.json()["error"] == "NO_CRAWL"
