"""Redirect rules over a real ``lookup serve`` (issue 27 item 2), Shlink's shape.

``PUT /v1/links/{key}/redirect-rules`` sets the ordered rules; ``GET /{key}`` goes to the
first rule whose conditions all hold (device, browser, language, country, query
parameter, time window), else to the link's own destination; refusals are 400s naming
the rule and the field; the link's stats count clicks per rule. The server trusts
``X-Forwarded-For`` from loopback (``LOOKUP_TRUST_FORWARDED_FOR``), so a test can speak
for a visitor from India or the United States; the country comes from ``iptocc``'s data.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import running_lookup

IPHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/17.1 Mobile/15E148 Safari/604.1"
)
ANDROID = (
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/120.0.0.0 Mobile Safari/537.36"
)
FIREFOX = "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:121.0) Gecko/20100101 Firefox/121.0"


class Live:
    def __init__(self, url: str, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.client = httpx.Client(base_url=url, timeout=30)
        token = self.client.post("/v1/tokens").json()["token"]
        self.owner = {"Authorization": f"Bearer {token}"}

    def create(self, long_url: str = "https://example.com/default") -> str:
        r = self.client.post("/v1/links", json={"longUrl": long_url}, headers=self.owner)
        assert r.status_code == 201, r.text
        return str(r.json()["key"])

    def put(self, key: str, rules: Any) -> httpx.Response:
        body = {"redirectRules": rules}
        return self.client.put(f"/v1/links/{key}/redirect-rules", json=body, headers=self.owner)

    def go(self, target: str, **headers: str) -> str:
        r = self.client.get(target, headers=headers, follow_redirects=False)
        assert r.status_code == 302, (target, r.status_code, r.text)
        return r.headers["location"]


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    data_dir = tmp_path_factory.mktemp("rules") / "data"
    env = {
        "LOOKUP_SHORTENER_RATE_OWNER": "100000/1",
        "LOOKUP_SHORTENER_RATE_IP": "100000/1",
        "LOOKUP_TRUST_FORWARDED_FOR": "127.0.0.1,::1",
    }
    with running_lookup(data_dir, env) as url:
        yield Live(url, data_dir)


def cond(kind: str, value: str, key: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": kind, "matchValue": value}
    if key is not None:
        out["matchKey"] = key
    return out


RULES = [
    {"longUrl": "https://apps.apple.com/app/1", "conditions": [cond("device", "ios")]},
    {"longUrl": "https://play.google.com/store/1", "conditions": [cond("device", "android")]},
    {"longUrl": "https://example.com/es", "conditions": [cond("language", "es")]},
    {"longUrl": "https://example.in/", "conditions": [cond("country", "IN")]},
    {"longUrl": "https://example.com/mail", "conditions": [cond("query-param", "mail", "src")]},
    {"longUrl": "https://example.com/firefox", "conditions": [cond("browser", "firefox")]},
]


def test_rules_pick_the_destination_first_match_wins(live: Live) -> None:
    key = live.create()
    r = live.put(key, RULES)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["defaultLongUrl"] == "https://example.com/default"
    assert [rule["priority"] for rule in body["redirectRules"]] == [1, 2, 3, 4, 5, 6]
    assert live.go(f"/{key}", **{"user-agent": IPHONE}) == "https://apps.apple.com/app/1"
    assert live.go(f"/{key}", **{"user-agent": ANDROID}) == "https://play.google.com/store/1"
    # an iPhone in Spanish still takes the iOS rule: it comes first
    spanish_iphone = {"user-agent": IPHONE, "accept-language": "es-ES"}
    assert live.go(f"/{key}", **spanish_iphone) == "https://apps.apple.com/app/1"
    assert live.go(f"/{key}", **{"accept-language": "es-AR,en;q=0.5"}) == "https://example.com/es"
    assert live.go(f"/{key}", **{"accept-language": "en, es;q=0.5"}) == (
        "https://example.com/default"
    )
    assert live.go(f"/{key}", **{"x-forwarded-for": "49.44.0.1"}) == "https://example.in/"
    assert live.go(f"/{key}", **{"x-forwarded-for": "8.8.8.8"}) == "https://example.com/default"
    assert live.go(f"/{key}?src=mail") == "https://example.com/mail?src=mail"
    assert live.go(f"/{key}", **{"user-agent": FIREFOX}) == "https://example.com/firefox"
    assert live.go(f"/{key}") == "https://example.com/default"
    # the answer depends on the visitor: no shared or lasting copy of it
    r = live.client.get(f"/{key}", follow_redirects=False)
    assert r.headers["cache-control"] == "no-store"


def test_the_link_and_its_rules_read_back(live: Live) -> None:
    key = live.create()
    window = [
        cond("valid-since", "2020-01-01T00:00:00Z"),
        cond("valid-until", "2100-01-01T00:00:00Z"),
    ]
    assert (
        live.put(key, [{"longUrl": "https://example.com/now", "conditions": window}]).status_code
        == 200
    )
    view = live.client.get(f"/v1/links/{key}", headers=live.owner).json()
    (rule,) = view["redirectRules"]
    assert rule["conditions"][0] == {
        "type": "valid-since",
        "matchKey": None,
        "matchValue": "2020-01-01T00:00:00Z",
    }
    assert "redirectRules" not in live.client.get(f"/v1/links/{key}").json()  # owner only
    got = live.client.get(f"/v1/links/{key}/redirect-rules", headers=live.owner).json()
    assert got["redirectRules"] == view["redirectRules"]
    assert live.go(f"/{key}") == "https://example.com/now"
    past = [cond("valid-until", "2020-01-01T00:00:00Z")]
    live.put(key, [{"longUrl": "https://example.com/then", "conditions": past}])
    assert live.go(f"/{key}") == "https://example.com/default"


def test_bad_rules_are_400s_naming_rule_and_field(live: Live) -> None:
    key = live.create()
    ok = {"longUrl": "https://example.com/ok", "conditions": [cond("device", "ios")]}
    cases = [
        ([ok, {"longUrl": "http://192.168.1.1/", "conditions": [cond("device", "ios")]}],
         "PRIVATE_ADDRESS", 1, "longUrl"),
        ([{"longUrl": "http://[::1]:8000/", "conditions": [cond("device", "ios")]}],
         "PRIVATE_ADDRESS", 0, "longUrl"),
        ([{"longUrl": "https://ok.example/", "conditions": [cond("planet", "mars")]}],
         "INVALID_RULE", 0, "conditions[0].type"),
        ([ok, ok, {"longUrl": "https://ok.example/", "conditions": [cond("country", "India")]}],
         "INVALID_RULE", 2, "conditions[0].matchValue"),
    ]  # fmt: skip
    for rules, code, index, field in cases:
        r = live.put(key, rules)
        assert r.status_code == 400, r.text
        body = r.json()
        assert (body["error"], body["rule"], body["field"]) == (code, index, field), body
    assert live.go(f"/{key}", **{"user-agent": IPHONE}) == "https://example.com/default"
    # who may: the owner only
    r = live.client.put(f"/v1/links/{key}/redirect-rules", json={"redirectRules": []})
    assert r.status_code == 401
    other = {"Authorization": "Bearer " + live.client.post("/v1/tokens").json()["token"]}
    r = live.client.put(
        f"/v1/links/{key}/redirect-rules", json={"redirectRules": []}, headers=other
    )
    assert r.status_code == 403
    r = live.client.put(
        f"/v1/links/{key}/redirect-rules",
        content=b'{"redirectRules": []}',
        headers={**live.owner, "content-type": "text/plain"},
    )
    assert r.status_code == 415


def test_a_blocked_domain_cannot_come_in_through_a_rule(live: Live) -> None:
    """The blocklist the destination obeys, edited live by the admin, binds rules too."""
    key = live.create()
    admin = (live.data_dir / "shortener" / "admin.token").read_text().strip()
    edit = live.client.post(
        "/v1/shortener/blocklist",
        json={"add": ["blocked-for-rules.example"]},
        headers={"Authorization": f"Bearer {admin}"},
    )
    assert edit.status_code == 200, edit.text
    rule = {
        "longUrl": "https://www.blocked-for-rules.example/",
        "conditions": [cond("device", "ios")],
    }
    r = live.put(key, [rule])
    assert r.status_code == 400, r.text
    assert (r.json()["error"], r.json()["rule"], r.json()["field"]) == (
        "BLOCKED_DOMAIN",
        0,
        "longUrl",
    )


def test_clicks_record_the_rule_and_the_stats_count_them(live: Live) -> None:
    key = live.create()
    live.put(key, RULES[:2])
    for ua, n in ((IPHONE, 3), (ANDROID, 2), (FIREFOX, 4)):
        for _ in range(n):
            live.go(f"/{key}", **{"user-agent": ua})
    stats = live.client.get(f"/v1/links/{key}/stats", headers=live.owner).json()
    rules = {row["value"]: row["clicks"] for row in stats["breakdowns"]["rules"]}
    assert rules == {"1": 3, "2": 2, "default": 4}
    plain = live.create()
    live.go(f"/{plain}", **{"user-agent": IPHONE})
    stats = live.client.get(f"/v1/links/{plain}/stats", headers=live.owner).json()
    assert stats["breakdowns"]["rules"] == [] and stats["totals"]["clicks"] == 1


def test_the_endpoints_are_in_the_openapi_document(live: Live) -> None:
    doc = live.client.get("/openapi.json").json()
    ops = doc["paths"]["/v1/links/{key}/redirect-rules"]
    assert {"get", "put"} <= set(ops)
    schema = ops["put"]["requestBody"]["content"]["application/json"]["schema"]
    assert "redirectRules" in schema["properties"]
