"""Case-insensitive keys and short domains (issue 27 items 6 and 3), over a real
``lookup serve`` on SQLite, and on PostgreSQL with the Redis cache tier.

As Shlink's "loose" mode: ``IPL-FINAL`` and ``ipl-final`` are one key — the second
claim is a 409, any spelling resolves, the owner's spelling is shown. As Shlink's
domains: a link lives on one domain, the same alias on two domains are two links,
``GET /{key}`` follows the ``Host`` (an unknown host is the default domain), and a
domain's "invalid short URL redirect" takes a visitor of a missing, expired or deleted
key there; without one, a browser gets the HTML page and an API client the JSON.
"""

from __future__ import annotations

import csv
import io
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import running_lookup

ADMIN = "case-and-domains-admin-token"
GO, SH = "go.example", "sh.example"


class Live:
    def __init__(self, url: str) -> None:
        self.url = url
        self.client = httpx.Client(base_url=url, timeout=30)
        self.alice = self._owner()
        self.bob = self._owner()
        self.admin = {"Authorization": f"Bearer {ADMIN}"}

    def _owner(self) -> dict[str, str]:
        token = self.client.post("/v1/tokens").json()["token"]
        return {"Authorization": f"Bearer {token}"}

    def create(self, who: dict[str, str], **body: Any) -> httpx.Response:
        return self.client.post("/v1/links", json=body, headers=who)

    def go(self, path: str, host: str | None = None, **headers: str) -> httpx.Response:
        if host is not None:
            headers["Host"] = host
        return self.client.get(path, headers=headers, follow_redirects=False)


@pytest.fixture(scope="module", params=["sqlite", "postgres+redis"])
def live(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Live]:
    env = {
        "LOOKUP_SHORTENER_RATE_OWNER": "100000/1",
        "LOOKUP_SHORTENER_RATE_IP": "100000/1",
        "LOOKUP_SHORTENER_RATE_ANON": "100000/1",
        "LOOKUP_SHORTENER_RATE_MISSES": "100000/1",
        "LOOKUP_SHORTENER_DOMAINS": f"{GO},{SH}",
        "LOOKUP_ADMIN_TOKEN": ADMIN,
        # the Host guard (DNS rebinding) must let the short domains through too
        "LOOKUP_ALLOWED_HOSTS": f"127.0.0.1,{GO},{SH},other.example",
    }
    data_dir: Path = tmp_path_factory.mktemp("case-domains") / "data"
    if request.param == "postgres+redis":
        import psycopg

        server = request.getfixturevalue("postgres_server")
        name = f"t_dom_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(server.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        env["LOOKUP_SHORTENER_STORE"] = server.url.rsplit("/", 1)[0] + f"/{name}"
        redis = request.getfixturevalue("redis_server")
        env["LOOKUP_CACHE_URL"] = redis.url
    with running_lookup(data_dir, env) as url:
        yield Live(url)


# -- item 6: one key whatever its case -----------------------------------------------------


def test_an_alias_differing_only_by_case_is_a_conflict(live: Live) -> None:
    alias = f"ipl-final-{uuid.uuid4().hex[:6]}"
    r = live.create(live.alice, longUrl="https://example.com/alice", customAlias=alias)
    assert r.status_code == 201, r.text
    for spelling in (alias.upper(), alias.title(), alias):
        r = live.create(live.bob, longUrl="https://example.com/bob", customAlias=spelling)
        assert r.status_code == 409, r.text
        assert r.json()["error"] == "ALIAS_TAKEN"


def test_every_spelling_resolves_and_the_owners_spelling_is_kept(live: Live) -> None:
    alias = f"Summer-Sale-{uuid.uuid4().hex[:6]}"
    r = live.create(live.alice, longUrl="https://example.com/sale", customAlias=alias)
    assert r.status_code == 201 and r.json()["key"] == alias
    for spelling in (alias, alias.lower(), alias.upper(), alias.swapcase()):
        got = live.go(f"/{spelling}")
        assert got.status_code == 302 and got.headers["location"] == "https://example.com/sale"
        view = live.client.get(f"/v1/links/{spelling}", headers=live.alice)
        assert view.status_code == 200 and view.json()["key"] == alias  # as its owner wrote it
        assert view.json()["shortUrl"] == f"{live.url}/{alias}"
    # QR and history answer any spelling too; the QR carries the owner's spelling
    assert live.client.get(f"/v1/links/{alias.upper()}/qr.svg").status_code == 200
    history = live.client.get(f"/v1/links/{alias.lower()}/history", headers=live.alice)
    assert history.status_code == 200 and history.json()[0]["action"] == "create"


def test_a_change_through_one_spelling_reaches_every_cached_spelling(live: Live) -> None:
    alias = f"cache-{uuid.uuid4().hex[:6]}"
    r = live.create(live.alice, longUrl="https://example.com/v1", customAlias=alias)
    assert r.status_code == 201
    spellings = [alias.upper(), alias, alias.capitalize()]
    for s in spellings:  # every spelling now in the in-process cache (and the Redis tier)
        assert live.go(f"/{s}").headers["location"] == "https://example.com/v1"
    patch = live.client.patch(
        f"/v1/links/{alias.swapcase()}",
        json={"longUrl": "https://example.com/v2"},
        headers=live.alice,
    )
    assert patch.status_code == 200, patch.text
    for s in spellings:
        assert live.go(f"/{s}").headers["location"] == "https://example.com/v2"
    # someone else's token may not change it, whichever spelling they use
    refused = live.client.delete(f"/v1/links/{alias.upper()}", headers=live.bob)
    assert refused.status_code == 403
    gone = live.client.delete(f"/v1/links/{alias.upper()}", headers=live.alice)
    assert gone.status_code == 200 and gone.json()["status"] == "DELETED"
    for s in spellings:
        assert live.go(f"/{s}", accept="application/json").status_code == 410


def test_generated_keys_are_lower_case(live: Live) -> None:
    keys = [
        live.create(live.alice, longUrl=f"https://example.com/{i}").json()["key"] for i in range(20)
    ]
    assert all(k == k.lower() and len(k) == 7 for k in keys)
    assert len(set(keys)) == 20
    assert live.go(f"/{keys[0].upper()}").headers["location"] == "https://example.com/0"


def test_stats_answer_any_spelling(live: Live) -> None:
    alias = f"Stats-{uuid.uuid4().hex[:6]}"
    live.create(live.alice, longUrl="https://example.com/s", customAlias=alias)
    live.go(f"/{alias.lower()}")
    r = live.client.get(f"/v1/links/{alias.upper()}/stats", headers=live.alice)
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "ACTIVE"


# -- item 3: several domains -----------------------------------------------------------------


def test_the_same_alias_on_two_domains_is_two_links(live: Live) -> None:
    alias = f"promo-{uuid.uuid4().hex[:6]}"
    home = live.create(live.alice, longUrl="https://example.com/home", customAlias=alias)
    go = live.create(live.bob, longUrl="https://example.com/go", customAlias=alias, domain=GO)
    assert home.status_code == 201 and go.status_code == 201, go.text
    assert go.json()["domain"] == GO and go.json()["key"] == alias
    assert go.json()["shortUrl"] == f"http://{GO}/{alias}"
    assert go.headers["location"] == f"/v1/links/{alias}?domain={GO}"
    assert home.json()["shortUrl"] == f"{live.url}/{alias}"
    # the Host picks the link; an unknown host is the default domain; a port is ignored
    assert live.go(f"/{alias}", host=GO).headers["location"] == "https://example.com/go"
    assert live.go(f"/{alias.upper()}", host=f"{GO.upper()}:8080").headers["location"] == (
        "https://example.com/go"
    )
    assert live.go(f"/{alias}").headers["location"] == "https://example.com/home"
    assert live.go(f"/{alias}", host="other.example").headers["location"] == (
        "https://example.com/home"
    )
    assert live.go(f"/{alias}", host=SH, accept="application/json").status_code == 404
    # a case variant on the same domain is taken; on the third domain it is free
    clash = live.create(
        live.alice, longUrl="https://example.com/x", customAlias=alias.upper(), domain=GO
    )
    assert clash.status_code == 409
    third = live.create(
        live.alice, longUrl="https://example.com/sh", customAlias=alias.upper(), domain=SH
    )
    assert third.status_code == 201
    # the management API names a link by key and ?domain=
    view = live.client.get(f"/v1/links/{alias}", params={"domain": GO}, headers=live.bob)
    assert view.status_code == 200 and view.json()["longUrl"] == "https://example.com/go"
    plain = live.client.get(f"/v1/links/{alias}", headers=live.bob).json()
    assert plain["longUrl"] == "https://example.com/home" and plain["domain"] != GO
    patch = live.client.patch(
        f"/v1/links/{alias.upper()}",
        params={"domain": GO},
        json={"longUrl": "https://example.com/go2"},
        headers=live.bob,
    )
    assert patch.status_code == 200, patch.text
    assert live.go(f"/{alias}", host=GO).headers["location"] == "https://example.com/go2"
    assert live.go(f"/{alias}").headers["location"] == "https://example.com/home"
    qr = live.client.get(f"/v1/links/{alias}/qr.png", params={"domain": GO})
    assert qr.status_code == 200 and qr.headers["content-type"] == "image/png"


def test_a_domain_must_be_one_of_the_servers(live: Live) -> None:
    r = live.create(live.alice, longUrl="https://example.com/", domain="evil.example")
    assert r.status_code == 400 and r.json()["error"] == "INVALID_DOMAIN"
    r = live.create(live.alice, longUrl="https://example.com/", domain=7)
    assert r.status_code == 400 and r.json()["error"] == "INVALID_DOMAIN"
    r = live.client.get("/v1/links/abc-def", params={"domain": "evil.example"})
    assert r.status_code == 400 and r.json()["error"] == "INVALID_DOMAIN"
    # naming the default domain is the same as naming none
    default = live.url.split("://", 1)[1]
    made = live.create(live.alice, longUrl="https://example.com/d", domain=default)
    assert made.status_code == 201 and made.json()["shortUrl"].startswith(live.url)


def test_listing_filters_by_domain(live: Live) -> None:
    owner = live._owner()
    live.create(owner, longUrl="https://example.com/a")
    live.create(owner, longUrl="https://example.com/b", domain=GO)
    live.create(owner, longUrl="https://example.com/c", domain=GO)
    every = live.client.get("/v1/links", headers=owner).json()["links"]
    assert len(every) == 3
    on_go = live.client.get("/v1/links", params={"domain": GO}, headers=owner).json()["links"]
    assert sorted(i["longUrl"] for i in on_go) == ["https://example.com/b", "https://example.com/c"]
    assert all(i["domain"] == GO for i in on_go)
    default = live.client.get(
        "/v1/links", params={"domain": live.url.split("://")[1]}, headers=owner
    )
    assert [i["longUrl"] for i in default.json()["links"]] == ["https://example.com/a"]


def test_fallback_redirect_per_domain_else_page_or_json(live: Live) -> None:
    domains = live.client.get("/v1/domains").json()
    assert [d["domain"] for d in domains][1:] == [GO, SH] and domains[0]["isDefault"] is True
    body = {"domain": GO, "invalidShortUrlRedirect": "https://go.example.org/missing"}
    assert live.client.put("/v1/shortener/domains/redirect", json=body).status_code == 401
    bad = {"domain": GO, "invalidShortUrlRedirect": "javascript:alert(1)"}
    assert (
        live.client.put("/v1/shortener/domains/redirect", json=bad, headers=live.admin).status_code
        == 400
    )
    r = live.client.put("/v1/shortener/domains/redirect", json=body, headers=live.admin)
    assert r.status_code == 200, r.text
    missing = f"nope-{uuid.uuid4().hex[:6]}"
    # on go.example: the fallback, for a browser and an API client alike
    for accept in ("text/html", "application/json"):
        got = live.go(f"/{missing}", host=GO, accept=accept)
        assert (
            got.status_code == 302 and got.headers["location"] == "https://go.example.org/missing"
        )
        assert got.headers["cache-control"] == "no-store"
    # a deleted or expired link of that domain too
    alias = f"old-{uuid.uuid4().hex[:6]}"
    live.create(live.alice, longUrl="https://example.com/old", customAlias=alias, domain=GO)
    live.client.delete(f"/v1/links/{alias}", params={"domain": GO}, headers=live.alice)
    assert live.go(f"/{alias}", host=GO).headers["location"] == "https://go.example.org/missing"
    short = live.create(
        live.alice, longUrl="https://example.com/soon", domain=GO, expiresAt=time.time() + 1.5
    ).json()["key"]
    time.sleep(2)
    assert live.go(f"/{short}", host=GO).headers["location"] == "https://go.example.org/missing"
    # elsewhere: today's answers
    page = live.go(f"/{missing}", host=SH, accept="text/html")
    assert page.status_code == 404 and page.headers["content-type"].startswith("text/html")
    api = live.go(f"/{missing}", accept="application/json")
    assert api.status_code == 404 and api.json()["error"] == "NOT_FOUND"
    # removed: back to the page
    off = {"domain": GO, "invalidShortUrlRedirect": None}
    assert (
        live.client.put("/v1/shortener/domains/redirect", json=off, headers=live.admin).status_code
        == 200
    )
    assert live.go(f"/{missing}", host=GO, accept="application/json").status_code == 404


def test_csv_carries_the_domain_and_import_applies_the_case_rule(live: Live) -> None:
    owner = live._owner()
    alias = f"Csv-{uuid.uuid4().hex[:6]}"
    live.create(owner, longUrl="https://example.com/csv", customAlias=alias, domain=GO)
    text = live.client.get("/v1/links/export.csv", headers=owner).text
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [(r["key"], r["customAlias"], r["domain"]) for r in rows] == [(alias, alias, GO)]
    assert rows[0]["shortUrl"] == f"http://{GO}/{alias}"
    again = "longUrl,customAlias,domain\r\n" + "\r\n".join(
        [
            f"https://example.com/1,{alias.lower()},{GO}",  # taken on go.example, any case
            f"https://example.com/2,{alias.upper()},",  # free on the default domain
            f"https://example.com/3,{alias.lower()},",  # the row before took it
        ]
    )
    headers = {**owner, "content-type": "text/csv"}
    result = live.client.post("/v1/links/import", content=again, headers=headers).json()
    assert [r["status"] for r in result["rows"]] == [409, 201, 409], result
