"""The rule store's contract, run on every backend of its registry (SQLite, PostgreSQL),
and the redirect rules end to end on a fleet's PostgreSQL store.

PostgreSQL comes from the session's throw-away server (``postgres_db``: a new database
per test), as the link store's contract does.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lookup.kit.engines.storeurl import sqlite_url
from lookup.shortener import Shortener, ShortenerConfig
from lookup.shortener.links import open_link_store
from lookup.shortener.rules import BACKENDS, RuleStore, open_rule_store
from lookup.shortener.rules.model import Condition, Rule
from tests.shortener.conftest import App, generous_limits, no_dns

ANDROID = (
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 Chrome/120.0 Mobile Safari/537.36"
)


def test_every_scheme_is_tested() -> None:
    assert set(BACKENDS) == {"sqlite", "postgresql"}


@pytest.fixture(params=sorted(BACKENDS))
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return sqlite_url(tmp_path / "links.sqlite3")
    return str(request.getfixturevalue("postgres_db"))


@pytest.fixture
def store(store_url: str) -> Iterator[RuleStore]:
    opened = open_rule_store(store_url)
    yield opened
    opened.close()


def _rules(n: int, url: str = "https://r.example/") -> tuple[Rule, ...]:
    return tuple(
        Rule(
            f"{url}{i}",
            (Condition("device", "ios"), Condition("query-param", f"v{i}", "utm_source")),
        )
        for i in range(n)
    )


def test_put_get_replace_and_remove(store: RuleStore) -> None:
    assert store.get("abc") == ()
    store.put("abc", _rules(3), 1.0)
    assert store.get("abc") == _rules(3)  # order kept
    store.put("abc", _rules(1, "https://s.example/"), 2.0)
    assert store.get("abc") == _rules(1, "https://s.example/")  # replaced whole
    store.put("xyz", _rules(2), 3.0)
    assert store.keys_with_rules(["abc", "xyz", "nope"]) == {"abc", "xyz"}
    store.put("abc", (), 4.0)
    assert store.get("abc") == () and store.keys_with_rules(["abc"]) == set()
    assert store.keys_with_rules([]) == set()
    store.ping()


def test_keys_are_exact_and_unicode_survives(store: RuleStore) -> None:
    rule = (Rule("https://r.example/ü", (Condition("query-param", "ça va", "q"),)),)
    store.put("Abc", rule, 1.0)
    assert store.get("Abc") == rule and store.get("abc") == ()


def test_a_reader_never_sees_half_a_list(store: RuleStore) -> None:
    lists = [_rules(n) for n in (1, 5, 9)]
    stop = threading.Event()
    seen: list[Any] = []

    def read() -> None:
        while not stop.is_set():
            seen.append(store.get("k"))

    readers = [threading.Thread(target=read) for _ in range(2)]
    for t in readers:
        t.start()
    for i in range(60):
        store.put("k", lists[i % 3], float(i))
    stop.set()
    for t in readers:
        t.join()
    assert {len(s) for s in seen} <= {0, 1, 5, 9}
    assert all(s in ((), *lists) for s in seen)


def test_the_links_table_gets_no_column(store_url: str, store: RuleStore) -> None:
    """Rules live in their own table: the links table is as the link store made it."""
    links = open_link_store(store_url)
    try:
        with links._read() as conn:  # type: ignore[attr-defined]
            cur = conn.execute("SELECT * FROM links WHERE 1 = 0")
            names = {d[0] for d in cur.description}
    finally:
        links.close()
    assert not {n for n in names if "rule" in n}


@pytest.fixture
def pg_app(postgres_db: str, tmp_path: Path) -> Iterator[App]:
    config = ShortenerConfig(
        data_dir=tmp_path / "data",
        base_url="http://127.0.0.1:8000",
        store_url=postgres_db,
        limits=generous_limits(),
        scanner=False,
        analytics=False,
        resolve_host=no_dns,
    )
    app = App(config)
    yield app
    app.close()


def test_rules_redirect_on_the_fleets_postgresql_store(pg_app: App) -> None:
    c = pg_app.client
    auth = {"Authorization": "Bearer pg-owner-token-0123456789"}
    key = c.post("/v1/links", json={"longUrl": "https://example.com/"}, headers=auth).json()["key"]
    rules = [
        {
            "longUrl": "https://play.example/app",
            "conditions": [{"type": "device", "matchValue": "android"}],
        },
        {
            "longUrl": "https://example.com/campaign",
            "conditions": [{"type": "query-param", "matchKey": "src", "matchValue": "mail"}],
        },
    ]
    r = c.put(f"/v1/links/{key}/redirect-rules", json={"redirectRules": rules}, headers=auth)
    assert r.status_code == 200, r.text
    go = c.get(f"/{key}", headers={"user-agent": ANDROID}, follow_redirects=False)
    assert go.headers["location"] == "https://play.example/app"
    go = c.get(f"/{key}?src=mail", follow_redirects=False)
    assert go.headers["location"] == "https://example.com/campaign?src=mail"
    assert c.get(f"/{key}", follow_redirects=False).headers["location"] == "https://example.com/"
    # another process of the fleet reads the same rules from the shared database
    other = Shortener(pg_app.shortener.config)
    try:
        assert other.rules.get(key) == pg_app.shortener.rules.get(key)
        assert len(other.rules.get(key)) == 2
    finally:
        other.close()
