"""The link list, bulk create and foreign CSV imports over a real ``lookup serve``
(issue 27 item 4), on the embedded SQLite stores and on a throw-away PostgreSQL.

Links are made through ``POST /v1/links/bulk``, clicked through real redirects, and
listed with ``search``, ``sort``, ``order``, ``createdFrom``/``createdTo``; each item's
click count must equal what ``GET /v1/links/{key}/stats`` says, since both read the same
counters. Bulk items are refused exactly as single creates are (private address,
blocklist, alias rule); an atomic bulk refuses all or makes all. CSV exports of Shlink and
Bitly import by their own column names.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import running_lookup

ADMIN = "admin-token-for-the-link-list-tests-0123456789"


class Live:
    def __init__(self, url: str) -> None:
        self.client = httpx.Client(base_url=url, timeout=60)
        token = self.client.post("/v1/tokens").json()["token"]
        self.owner = {"Authorization": f"Bearer {token}"}

    def bulk(self, body: Any) -> httpx.Response:
        return self.client.post("/v1/links/bulk", json=body, headers=self.owner)

    def listing(self, **params: Any) -> httpx.Response:
        return self.client.get("/v1/links", params=params, headers=self.owner)

    def keys(self, **params: Any) -> list[str]:
        r = self.listing(**params)
        assert r.status_code == 200, r.text
        return [item["key"] for item in r.json()["links"]]


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def live(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Live]:
    env = {
        "LOOKUP_SHORTENER_RATE_OWNER": "100000/1",
        "LOOKUP_SHORTENER_RATE_IP": "100000/1",
        "LOOKUP_SHORTENER_BULK_MAX": "20",
        "LOOKUP_ADMIN_TOKEN": ADMIN,
    }
    data_dir: Path = tmp_path_factory.mktemp(f"list-{request.param}") / "data"
    if request.param == "postgres":
        import uuid

        import psycopg

        server = request.getfixturevalue("postgres_server")
        name = f"t_live_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(server.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        env["LOOKUP_SHORTENER_STORE"] = server.url.rsplit("/", 1)[0] + f"/{name}"
    with running_lookup(data_dir, env) as url:
        yield Live(url)


def test_bulk_then_click_then_list_by_clicks(live: Live) -> None:
    urls = [f"https://example.com/shop/item-{i}?ref=Mail" for i in range(6)]
    r = live.bulk({"links": [{"longUrl": u, "tags": ["bulk"]} for u in urls], "atomic": True})
    assert r.status_code == 201, r.text
    made = r.json()
    assert made["created"] == 6 and made["failed"] == 0 and made["atomic"] is True
    keys = [item["key"] for item in made["items"]]
    assert [item["index"] for item in made["items"]] == list(range(6))
    for n, key in enumerate(keys):  # link i gets (i * 2) % 5 clicks, through the redirect
        for _ in range((n * 2) % 5):
            assert live.client.get(f"/{key}", follow_redirects=False).status_code == 302
    listed = live.listing(tag="bulk", sort="clicks", order="desc", limit=100).json()["links"]
    counts = {item["key"]: item["clicks"]["total"] for item in listed}
    assert counts == {key: (n * 2) % 5 for n, key in enumerate(keys)}
    expected = sorted(keys, key=lambda k: (counts[k], k), reverse=True)
    assert [item["key"] for item in listed] == expected
    for key in keys:  # the list and the stats read the same counters
        stats = live.client.get(f"/v1/links/{key}/stats", headers=live.owner).json()
        assert stats["totals"]["total"] == counts[key]
    clicked = [item for item in listed if item["clicks"]["total"]]
    assert all(item["clicks"]["lastClickAt"] for item in clicked)
    # paging by two keeps the order, and a cursor holds its sort and filters
    got, cursor = [], None
    while True:
        params = {"tag": "bulk", "sort": "clicks", "limit": 2}
        page = live.listing(**params, **({"cursor": cursor} if cursor else {})).json()
        got += [item["key"] for item in page["links"]]
        cursor = page["nextCursor"]
        if cursor is None:
            break
        other = live.listing(tag="bulk", sort="created", cursor=cursor)
        assert other.status_code == 400 and other.json()["error"] == "CURSOR_MISMATCH"
        narrowed = live.listing(tag="bulk", sort="clicks", search="x", cursor=cursor)
        assert narrowed.status_code == 400 and narrowed.json()["error"] == "CURSOR_MISMATCH"
    assert got == expected
    asc = live.keys(tag="bulk", sort="lastClick", order="asc", limit=100)
    assert asc[-1] in {keys[0], keys[5]}  # never clicked: last


def test_search_and_date_range(live: Live) -> None:
    made = live.bulk([
        {"longUrl": "https://example.com/Monsoon-Sale", "tags": ["find"]},
        {"longUrl": "https://example.com/m%C3%BCnchen/hotel", "tags": ["find"]},
        {"longUrl": "https://example.com/other", "customAlias": "monsoon-deals", "tags": ["find"]},
    ]).json()  # fmt: skip
    assert made["created"] == 3, made
    first, second, third = (item["key"] for item in made["items"])
    assert set(live.keys(tag="find", search="MONSOON")) == {first, third}
    assert live.keys(tag="find", search="münchen") == [second]  # as typed, stored encoded
    assert live.keys(tag="find", search="100%") == []  # wildcards are literal
    assert set(live.keys(tag="find", createdFrom="2000-01-01", createdTo="2999-12-31")) == {
        first, second, third,
    }  # fmt: skip
    assert live.keys(tag="find", createdTo="2000-01-01") == []
    for params, code in (
        ({"createdFrom": "last tuesday"}, "INVALID_RANGE"),
        ({"createdFrom": "2026-12-08", "createdTo": "2026-12-01"}, "INVALID_RANGE"),
        ({"sort": "popularity"}, "INVALID_SORT"),
        ({"order": "sideways"}, "INVALID_ORDER"),
        ({"searchTerm": "x"}, "UNKNOWN_PARAMETER"),
        ({"cursor": "not-a-cursor"}, "INVALID_CURSOR"),
    ):
        r = live.listing(**params)
        assert r.status_code == 400 and r.json()["error"] == code, (params, r.text)


def test_bulk_items_are_checked_as_single_creates(live: Live) -> None:
    r = live.client.post(
        "/v1/shortener/blocklist", json={"add": ["blocked-for-bulk.example"]},
        headers={"Authorization": f"Bearer {ADMIN}"},
    )  # fmt: skip
    assert r.status_code == 200, r.text
    bad = [
        {"longUrl": "http://10.0.0.1/admin"},
        {"longUrl": "http://[::ffff:127.0.0.1]/"},
        {"longUrl": "https://blocked-for-bulk.example/x"},
        {"longUrl": "https://example.com/", "customAlias": "docs"},
        {"longUrl": "https://example.com/", "unknown": 1},
    ]
    singles = []
    for body in bad:
        one = live.client.post("/v1/links", json=body, headers=live.owner)
        singles.append((one.status_code, one.json()["error"]))
    r = live.bulk(bad + [{"longUrl": "https://example.com/fine"}])
    assert r.status_code == 200, r.text
    items = r.json()["items"]
    assert [(i["status"], i["error"]) for i in items[:5]] == singles
    assert items[5]["status"] == 201
    assert r.json()["created"] == 1 and r.json()["failed"] == 5
    shape = live.bulk([{"longUrl": "https://example.com/"}, "not an object"])
    assert shape.status_code == 400 and shape.json()["error"] == "MALFORMED_JSON"  # whole

    before = live.keys(limit=500)
    atomic = live.bulk({"links": [{"longUrl": "https://example.com/a"}, bad[0]], "atomic": True})
    assert atomic.status_code == 400 and atomic.json()["error"] == "BULK_REJECTED"
    assert [i["status"] for i in atomic.json()["items"]] == [0, singles[0][0]]
    twice = [{"longUrl": "https://example.com/a", "customAlias": "same-alias-twice"}] * 2
    dup = live.bulk({"links": twice, "atomic": True})
    assert dup.status_code == 409 and dup.json()["error"] == "BULK_REJECTED"
    assert live.keys(limit=500) == before  # nothing was made

    too_many = live.bulk([{"longUrl": "https://example.com/"}] * 21)
    assert too_many.status_code == 413 and too_many.json()["error"] == "TOO_MANY_ITEMS"
    for body, code in (([], "EMPTY_BULK"), ({"links": [], "atomic": "yes"}, "INVALID_ATOMIC")):
        r = live.bulk(body)
        assert r.status_code == 400 and r.json()["error"] == code
    anonymous = live.client.post("/v1/links/bulk", json=[{"longUrl": "https://example.com/"}])
    assert anonymous.status_code == 401


def test_csv_from_shlink_and_bitly(live: Live) -> None:
    shlink = (
        "createdAt,domain,shortCode,shortUrl,longUrl,title,tags,visits\r\n"
        "2024-01-02T10:00:00+00:00,,spring-promo,https://s.test/spring-promo,"
        "https://example.com/spring,Spring,Summer Sale|promo,12\r\n"
        "2024-01-03T10:00:00+00:00,,aB3dE9x,https://s.test/aB3dE9x,https://example.com/x,,,0\r\n"
    )
    r = live.client.post(
        "/v1/links/import", content=shlink.encode(),
        headers={**live.owner, "Content-Type": "text/csv"},
    )  # fmt: skip
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["format"] == "shlink" and body["created"] == 2, body
    assert body["rows"][0]["key"] == "spring-promo"  # a short code the alias rule takes
    promo = live.client.get("/v1/links/spring-promo", headers=live.owner).json()
    assert promo["tags"] == ["summer-sale", "promo"]
    importer = "Long URL,Short code,Domain,Title,Tags\nhttps://example.com/imp,imp-code,,T,a|b\n"
    r = live.client.post(
        "/v1/links/import", content=importer.encode(),
        headers={**live.owner, "Content-Type": "text/csv"},
    )  # fmt: skip
    assert r.json()["format"] == "shlink" and r.json()["rows"][0]["key"] == "imp-code"
    bitly = (
        "id,link,long_url,title,created_at,tags\n"
        "bit.ly/3xYz1Ab,https://bit.ly/3xYz1Ab,https://example.com/from-bitly,Hi,"
        "2024-05-01T00:00:00+0000,news\n"
        "bit.ly/private,https://bit.ly/private,http://192.168.1.1/,,2024-05-01T00:00:00+0000,\n"
    )
    r = live.client.post(
        "/v1/links/import", content=bitly.encode(),
        headers={**live.owner, "Content-Type": "text/csv"},
    )  # fmt: skip
    body = r.json()
    assert body["format"] == "bitly" and body["created"] == 1 and body["failed"] == 1, body
    assert body["rows"][1]["status"] == 400
    unknown = live.client.post(
        "/v1/links/import", content=b"url,slug\nhttps://example.com/,x\n",
        headers={**live.owner, "Content-Type": "text/csv"},
    )  # fmt: skip
    assert unknown.status_code == 400 and unknown.json()["error"] == "INVALID_CSV"
    message = unknown.json()["message"]
    assert "Bitly" in message and "Shlink" in message and "longUrl" in message


def test_the_new_parameters_are_documented(live: Live) -> None:
    doc = live.client.get("/openapi.json").json()
    assert "post" in doc["paths"]["/v1/links/bulk"]
    names = {p["name"] for p in doc["paths"]["/v1/links"]["get"]["parameters"]}
    assert {"search", "sort", "order", "createdFrom", "createdTo"} <= names
