"""The shortener over the real app: the redirect contract, owner API, limits and hostile input."""

from __future__ import annotations

import json
import struct
import xml.etree.ElementTree as ET
import zlib
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lookup.kit.admin import load_admin_token_in
from lookup.kit.http import MAX_BODY_BYTES
from lookup.kit.ratelimit import RatePolicy
from lookup.shortener.model import ClickContext

CC_302 = "max-age=0, s-maxage=60"


def _error(resp: Any, status: int, code: str | None = None) -> dict:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"].startswith("application/json")
    body = resp.json()
    assert isinstance(body.get("error"), str) and isinstance(body.get("message"), str)
    if code is not None:
        assert body["error"] == code, body
    return body


def _create(app: Any, headers: dict | None = None, **body: Any) -> dict:
    resp = app.client.post("/v1/links", json=body, headers=headers or {})
    assert resp.status_code == 201, resp.text
    return resp.json()


def test_create_then_redirect(app: Any) -> None:
    resp = app.client.post(
        "/v1/links", json={"longUrl": "https://example.com/tickets/final?utm_source=whatsapp"}
    )
    assert resp.status_code == 201
    body = resp.json()
    assert set(body) >= {"key", "shortUrl", "longUrl", "expiresAt"}
    assert resp.headers["location"] == f"/v1/links/{body['key']}"
    for name in ("RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"):
        assert resp.headers[name].isdigit()
    hop = app.client.get(f"/{body['key']}", follow_redirects=False)
    assert hop.status_code == 302
    assert hop.headers["location"] == "https://example.com/tickets/final?utm_source=whatsapp"
    assert hop.headers["cache-control"] == CC_302
    head = app.client.head(f"/{body['key']}", follow_redirects=False)
    assert head.status_code == 302 and head.headers["location"] == hop.headers["location"]


def test_a_301_link_carries_a_bounded_max_age(app: Any) -> None:
    key = _create(app, longUrl="https://example.com/", redirectType=301, maxAge=600)["key"]
    hop = app.client.get(f"/{key}", follow_redirects=False)
    assert hop.status_code == 301 and hop.headers["cache-control"] == "public, max-age=600"


def test_unknown_and_deleted_keys(app: Any, auth: dict) -> None:
    resp = app.client.get("/aB3dE5g", follow_redirects=False)
    _error(resp, 404, "NOT_FOUND")
    assert resp.headers["cache-control"] == "no-store"
    key = _create(app, auth, longUrl="https://example.com/")["key"]
    assert app.client.get(f"/{key}", follow_redirects=False).status_code == 302  # now cached
    assert app.client.delete(f"/v1/links/{key}", headers=auth).json()["status"] == "DELETED"
    _error(app.client.get(f"/{key}", follow_redirects=False), 410, "LINK_DELETED")
    _error(app.client.get(f"/{key}+"), 410, "LINK_DELETED")
    _error(app.client.delete(f"/v1/links/{key}", headers=auth), 410, "LINK_GONE")


def test_expiry_by_date_is_exact_to_the_second(app: Any, clock: Any) -> None:
    expires = clock.now + 60
    body = _create(app, longUrl="https://example.com/", expiresAt="2030-01-15T08:00:00Z")
    assert body["expiresAt"] == "2030-01-15T08:00:00Z"
    key = _create(app, longUrl="https://example.com/", expiresAt=expires)["key"]
    clock.advance(59.999)
    assert app.client.get(f"/{key}", follow_redirects=False).status_code == 302
    clock.advance(0.001)
    _error(app.client.get(f"/{key}", follow_redirects=False), 410, "LINK_EXPIRED")


def test_expiry_by_clicks_after_the_nth(app: Any) -> None:
    key = _create(app, longUrl="https://example.com/", maxClicks=3)["key"]
    statuses = [app.client.get(f"/{key}", follow_redirects=False).status_code for _ in range(5)]
    assert statuses == [302, 302, 302, 410, 410]
    assert app.service.store.get(key).clicks == 3


def test_retarget_is_visible_on_the_next_click(app: Any, auth: dict) -> None:
    key = _create(app, auth, longUrl="https://old.example/")["key"]
    assert (
        app.client.get(f"/{key}", follow_redirects=False).headers["location"]
        == "https://old.example/"
    )
    resp = app.client.patch(
        f"/v1/links/{key}", json={"longUrl": "https://new.example/"}, headers=auth
    )
    assert resp.status_code == 200 and resp.json()["longUrl"] == "https://new.example/"
    assert "RateLimit-Remaining" in resp.headers
    assert (
        app.client.get(f"/{key}", follow_redirects=False).headers["location"]
        == "https://new.example/"
    )
    history = app.client.get(f"/v1/links/{key}/history", headers=auth).json()
    assert [h["action"] for h in history] == ["create", "retarget"]


def test_disabled_link_gets_a_warning_page_and_never_a_location(app: Any) -> None:
    key = _create(app, longUrl="https://phish.example/login")["key"]
    assert app.client.get(f"/{key}", follow_redirects=False).status_code == 302
    app.service.set_scan_verdict(key, "MALICIOUS")  # what the scanner will call
    resp = app.client.get(f"/{key}", follow_redirects=False)
    assert resp.status_code == 403 and "location" not in resp.headers
    assert resp.headers["content-type"].startswith("text/html")
    assert "has been disabled" in resp.text and "phish.example" in resp.text
    assert "<a " not in resp.text.split("<body>")[1]  # nothing to click through
    preview = app.client.get(f"/{key}+")
    assert preview.status_code == 403 and 'id="continue"' not in preview.text


def test_preview_page_shows_destination_verdict_and_a_button(app: Any) -> None:
    key = _create(app, longUrl="https://example.com/<script>?a=1&b=2")["key"]
    resp = app.client.get(f"/{key}+")
    assert resp.status_code == 200 and "location" not in resp.headers
    assert "https://example.com/&lt;script&gt;?a=1&amp;b=2" in resp.text  # escaped, never raw
    assert "<script>" not in resp.text
    assert "PENDING" in resp.text and f'href="/{key}"' in resp.text
    assert resp.headers["x-frame-options"] == "DENY"
    assert app.service.clicks_emitted == 0  # a preview is not a click


def test_password_protected_link(app: Any) -> None:
    key = _create(app, longUrl="https://secret.example/doc", password="correct horse")["key"]
    form = app.client.get(f"/{key}", follow_redirects=False)
    assert form.status_code == 200 and "location" not in form.headers
    assert 'type="password"' in form.text and "secret.example" not in form.text
    assert "secret.example" not in app.client.get(f"/{key}+").text
    wrong = app.client.post(f"/{key}", data={"password": "wrong"}, follow_redirects=False)
    assert (
        wrong.status_code == 403
        and "Wrong password" in wrong.text
        and "location" not in wrong.headers
    )
    empty = app.client.post(f"/{key}", content=b"\xff\xfe", follow_redirects=False)
    assert empty.status_code == 403
    right = app.client.post(f"/{key}", data={"password": "correct horse"}, follow_redirects=False)
    assert right.status_code == 303 and right.headers["location"] == "https://secret.example/doc"
    as_json = app.client.post(f"/{key}", json={"password": "correct horse"}, follow_redirects=False)
    assert as_json.status_code == 303
    assert app.client.get(f"/v1/links/{key}").json()["longUrl"] is None  # hidden from the public


def test_password_guessing_is_rate_limited(make_app: Callable[..., Any], limits: Any) -> None:
    limits.passwords = RatePolicy.per(3, 60)
    app = make_app(limits=limits)
    key = _create(app, longUrl="https://secret.example/", password="pw")["key"]
    codes = [app.client.post(f"/{key}", data={"password": "guess"}).status_code for _ in range(4)]
    assert codes == [403, 403, 403, 429]


def test_a_cache_hit_never_touches_sqlite(app: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    key = _create(app, longUrl="https://example.com/hot")["key"]

    def broken(*_: Any, **__: Any) -> None:
        raise AssertionError("the store was read on a cache hit")

    monkeypatch.setattr(app.service.store, "get", broken)
    monkeypatch.setattr(app.service.store, "_conn", broken)
    for _ in range(3):
        assert app.client.get(f"/{key}", follow_redirects=False).status_code == 302


def test_click_hook_gets_what_analytics_needs_and_cannot_break_redirects(app: Any) -> None:
    clicks: list[ClickContext] = []
    app.service.on_click = clicks.append
    key = _create(app, longUrl="https://example.com/")["key"]
    headers = {
        "User-Agent": "Mozilla/5.0 (iPhone)",
        "Referer": "https://t.co/x",
        "CF-IPCountry": "IN",
    }
    app.client.get(f"/{key}", headers=headers, follow_redirects=False)
    (ctx,) = clicks
    assert (ctx.key, ctx.user_agent, ctx.referer, ctx.country, ctx.status) == (
        key,
        "Mozilla/5.0 (iPhone)",
        "https://t.co/x",
        "IN",
        302,
    )
    assert ctx.client_ip and ctx.ts == app.service.clock()

    def broken(_: ClickContext) -> None:
        raise RuntimeError("buffer exploded")

    app.service.on_click = broken
    assert app.client.get(f"/{key}", follow_redirects=False).status_code == 302
    assert app.service.click_hook_errors == 1


def test_routes_of_the_server_are_not_swallowed_by_the_redirect(app: Any) -> None:
    assert app.client.get("/healthz").json()["systems"]["shortener"]["status"] == "ready"
    assert app.client.get("/docs").status_code == 200
    assert app.client.get("/redoc").status_code == 200
    spec = app.client.get("/openapi.json").json()
    create = spec["paths"]["/v1/links"]["post"]
    assert "longUrl" in create["requestBody"]["content"]["application/json"]["schema"]["properties"]
    for path in (
        "/v1/links/{key}",
        "/v1/links/{key}/qr.png",
        "/v1/links/export.csv",
        "/v1/links/import",
    ):
        assert path in spec["paths"]
    _error(app.client.get("/favicon.ico"), 404)


def test_owner_endpoints_need_the_owner(app: Any, auth: dict) -> None:
    other = {"Authorization": "Bearer another-owner-token-000000"}
    key = _create(app, auth, longUrl="https://example.com/", tags=["launch"])["key"]
    _error(app.client.get("/v1/links"), 401, "UNAUTHORIZED")
    _error(
        app.client.get("/v1/links", headers={"Authorization": "Basic abc"}), 401, "INVALID_TOKEN"
    )
    _error(
        app.client.get("/v1/links", headers={"Authorization": "Bearer short"}), 401, "INVALID_TOKEN"
    )
    _error(app.client.patch(f"/v1/links/{key}", json={"tags": []}), 401)
    _error(app.client.patch(f"/v1/links/{key}", json={"tags": []}, headers=other), 403, "FORBIDDEN")
    _error(app.client.delete(f"/v1/links/{key}", headers=other), 403, "FORBIDDEN")
    _error(app.client.get(f"/v1/links/{key}/history", headers=other), 403)
    mine = app.client.get("/v1/links", headers=auth).json()
    assert [link["key"] for link in mine["links"]] == [key] and mine["nextCursor"] is None
    assert app.client.get("/v1/links", headers=other).json()["links"] == []
    full = app.client.get(f"/v1/links/{key}", headers=auth).json()
    public = app.client.get(f"/v1/links/{key}").json()
    assert full["tags"] == ["launch"] and "tags" not in public
    assert public["longUrl"] == "https://example.com/"
    _error(app.client.get("/v1/links/nothing-here"), 404, "NOT_FOUND")


def test_minted_tokens_work_and_are_not_stored(app: Any) -> None:
    minted = app.client.post("/v1/tokens").json()
    headers = {"Authorization": f"Bearer {minted['token']}"}
    _create(app, headers, longUrl="https://example.com/")
    assert len(app.client.get("/v1/links", headers=headers).json()["links"]) == 1
    raw = b"".join(p.read_bytes() for p in app.shortener.dir.glob("links.sqlite3*"))
    assert minted["token"].encode() not in raw and minted["ownerId"].encode() in raw


def test_idempotency_over_http(app: Any, auth: dict) -> None:
    headers = {**auth, "Idempotency-Key": "3f1c9e2a-7b44-4d0e-9a61-2c8e5d7f1b03"}
    body = {"longUrl": "https://example.com/x", "customAlias": "ipl-final"}
    first = app.client.post("/v1/links", json=body, headers=headers)
    again = app.client.post("/v1/links", json=body, headers=headers)
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json() and again.headers["idempotent-replayed"] == "true"
    _error(
        app.client.post(
            "/v1/links", json={**body, "longUrl": "https://x.example/"}, headers=headers
        ),
        422,
        "IDEMPOTENCY_KEY_REUSED",
    )
    _error(app.client.post("/v1/links", json=body, headers=auth), 409, "ALIAS_TAKEN")


def test_anonymous_creation_is_rate_limited_hardest(
    make_app: Callable[..., Any], limits: Any, auth: dict
) -> None:
    limits.anonymous = RatePolicy.per(2, 60)
    limits.owner = RatePolicy.per(5, 60)
    app = make_app(limits=limits)
    statuses = [
        app.client.post("/v1/links", json={"longUrl": "https://e.example/"}).status_code
        for _ in range(3)
    ]
    assert statuses == [201, 201, 429]
    refused = app.client.post("/v1/links", json={"longUrl": "https://e.example/"})
    body = _error(refused, 429, "RATE_LIMITED")
    assert (
        refused.headers["RateLimit-Limit"] == "2" and refused.headers["RateLimit-Remaining"] == "0"
    )
    assert refused.headers["Retry-After"] == "30" and refused.headers["RateLimit-Reset"].isdigit()
    assert "retry" in body["message"]
    owned = [
        app.client.post(
            "/v1/links", json={"longUrl": "https://e.example/"}, headers=auth
        ).status_code
        for _ in range(6)
    ]
    assert owned == [201] * 5 + [429]


def test_a_key_guessing_scraper_is_cut_off_but_real_links_still_work(
    make_app: Callable[..., Any], limits: Any
) -> None:
    limits.misses = RatePolicy.per(5, 60)
    app = make_app(limits=limits)
    key = _create(app, longUrl="https://example.com/")["key"]
    codes = [app.client.get(f"/guess{i:03d}", follow_redirects=False).status_code for i in range(8)]
    assert codes == [404] * 5 + [429] * 3
    assert app.client.get("/guess000", follow_redirects=False).status_code == 404  # negative cache
    assert app.client.get(f"/{key}", follow_redirects=False).status_code == 302
    reads = app.service.resolver.stats()["store"]["reads"]
    app.client.get("/guess999", follow_redirects=False)
    assert app.service.resolver.stats()["store"]["reads"] == reads  # refused before the store


def test_qr_codes(app: Any) -> None:
    body = _create(app, longUrl="https://example.com/")
    png = app.client.get(f"/v1/links/{body['key']}/qr.png?scale=4")
    assert png.status_code == 200 and png.headers["content-type"] == "image/png"
    data = png.content
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    assert width == height and width % 4 == 0
    assert zlib.crc32(data[12:29]) == struct.unpack(">I", data[29:33])[0]  # intact header chunk
    modules = width // 4 - 8  # minus the 4-module quiet zone on each side
    assert modules >= 21 and (modules - 17) % 4 == 0  # a real QR version size
    svg = app.client.get(f"/v1/links/{body['key']}/qr.svg")
    assert svg.headers["content-type"].startswith("image/svg+xml")
    assert ET.fromstring(svg.content).tag.endswith("svg")
    _error(app.client.get("/v1/links/not-a-link/qr.png"), 404)
    _error(app.client.get(f"/v1/links/{body['key']}/qr.png?scale=1000"), 422)


def test_csv_export_and_import_over_http(app: Any, auth: dict) -> None:
    _create(app, auth, longUrl="https://example.com/1", customAlias="csv-one", tags=["a"])
    export = app.client.get("/v1/links/export.csv", headers=auth)
    assert export.status_code == 200 and export.headers["content-type"].startswith("text/csv")
    assert "csv-one" in export.text
    csv_body = "longUrl,customAlias,tags\nhttps://example.com/2,csv-two,x;y\nnot a url,,\n"
    resp = app.client.post(
        "/v1/links/import", content=csv_body.encode(), headers={**auth, "Content-Type": "text/csv"}
    )
    assert resp.status_code == 200
    result = resp.json()
    assert result["created"] == 1 and [r["status"] for r in result["rows"]] == [201, 400]
    assert result["rows"][1]["error"] == "INVALID_URL"
    assert app.client.get("/csv-two", follow_redirects=False).status_code == 302
    _error(
        app.client.post("/v1/links/import", content=b"\xff\xfe", headers=auth), 400, "INVALID_CSV"
    )
    _error(
        app.client.post("/v1/links/import", content=b"a,b\n1,2\n", headers=auth), 400, "INVALID_CSV"
    )
    _error(app.client.post("/v1/links/import", content=b"longUrl\n"), 401)


def test_metrics_endpoint(app: Any) -> None:
    key = _create(app, longUrl="https://example.com/")["key"]
    app.client.get(f"/{key}", follow_redirects=False)
    admin = {"Authorization": f"Bearer {load_admin_token_in(app.shortener.dir)}"}
    metrics = app.client.get("/v1/shortener/metrics", headers=admin).json()
    assert metrics["cache"]["l1"]["hits"] >= 1 and metrics["clicks"]["emitted"] == 1


HOSTILE_CREATES: list[tuple[Any, int, str]] = [
    ({"longUrl": "javascript:alert(document.cookie)"}, 400, "INVALID_URL"),
    ({"longUrl": "data:text/html;base64,PHNjcmlwdD4="}, 400, "INVALID_URL"),
    ({"longUrl": "file:///etc/shadow"}, 400, "INVALID_URL"),
    ({"longUrl": "https://example.com/\r\nLocation: https://evil.example"}, 400, "INVALID_URL"),
    ({"longUrl": "https://example.com/%0d%0aSet-Cookie:x=1"}, 201, ""),  # encoded: harmless text
    ({"longUrl": "https://example.com/" + "a" * 3000}, 400, "INVALID_URL"),
    ({"longUrl": "https://example.com", "customAlias": "a" * 200}, 400, "INVALID_ALIAS"),
    ({"longUrl": "https://example.com", "customAlias": "ünï-cødé"}, 400, "INVALID_ALIAS"),
    ({"longUrl": "https://example.com", "customAlias": "../etc"}, 400, "INVALID_ALIAS"),
    ({"longUrl": "https://example.com", "customAlias": "admin"}, 400, "RESERVED_ALIAS"),
    ({"longUrl": "https://example.com", "customAlias": "static"}, 400, "RESERVED_ALIAS"),
    ({"longUrl": "https://\u202eevil.example"}, 400, "INVALID_URL"),
    ({"longUrl": "https://ex\U0001f600.example"}, 400, "INVALID_URL"),
    ({"longUrl": "http://127.0.0.1:8000/other"}, 400, "SELF_REFERENCE"),
    ({"longUrl": ["https://example.com"]}, 400, "INVALID_URL"),
    ({"longUrl": {"href": "https://example.com"}}, 400, "INVALID_URL"),
    ({"longUrl": None}, 400, "INVALID_URL"),
    ({"longUrl": "https://example.com", "maxClicks": 1e308}, 400, "INVALID_MAX_CLICKS"),
    ({"longUrl": "https://example.com", "expiresAt": 1e308}, 400, "INVALID_EXPIRY"),
    ({"longUrl": "https://example.com", "expiresAt": "9999-99-99"}, 400, "INVALID_EXPIRY"),
    ({"longUrl": "https://example.com", "tags": [{"a": 1}]}, 400, "INVALID_TAGS"),
]


@pytest.mark.parametrize(("body", "status", "code"), HOSTILE_CREATES)
def test_hostile_creates(app: Any, body: Any, status: int, code: str) -> None:
    resp = app.client.post("/v1/links", json=body)
    if status == 201:
        assert resp.status_code == 201
        hop = app.client.get(f"/{resp.json()['key']}", follow_redirects=False)
        assert "\r" not in hop.headers["location"] and "set-cookie" not in hop.headers
    else:
        _error(resp, status, code)


@pytest.mark.parametrize(
    ("raw", "content_type"),
    [
        (b"{not json", "application/json"),
        (b"", "application/json"),
        (b"[1, 2]", "application/json"),
        (b'"https://example.com"', "application/json"),
        (b"\xff\xfe\x00", "application/json"),
        (b"[" * 100_00 + b"]" * 100_00, "application/json"),
    ],
)
def test_malformed_bodies_are_400_json(app: Any, raw: bytes, content_type: str) -> None:
    _error(
        app.client.post("/v1/links", content=raw, headers={"Content-Type": content_type}),
        400,
        "MALFORMED_JSON",
    )


def test_a_body_not_sent_as_json_is_415(app: Any) -> None:
    """A cross-site form can post urlencoded, multipart or text/plain, never JSON (issue 24)."""
    raw = b"longUrl=https://example.com"
    resp = app.client.post(
        "/v1/links", content=raw, headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    _error(resp, 415, "UNSUPPORTED_MEDIA_TYPE")


def test_oversized_bodies_are_413(app: Any, auth: dict) -> None:
    huge = json.dumps({"longUrl": "https://example.com/", "tags": ["x" * (MAX_BODY_BYTES + 10)]})
    _error(
        app.client.post("/v1/links", content=huge, headers={"Content-Type": "application/json"}),
        413,
    )
    big_csv = b"longUrl\n" + b"https://example.com/\n" * 5000
    _error(app.client.post("/v1/links/import", content=big_csv, headers=auth), 413)


@pytest.mark.parametrize(
    "path",
    [
        "/%0d%0aSet-Cookie:x",
        "/abc%00def",
        "/" + "a" * 5000,
        "/ab+cd",
        "/a+",
        "/..%2f..%2fetc",
        "/v1/links/%ff",
    ],
)
def test_odd_paths_are_4xx_json(app: Any, path: str) -> None:
    resp = app.client.get(path, follow_redirects=False)
    assert 400 <= resp.status_code < 500
    _error(resp, resp.status_code)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=10,
)
create_bodies = st.fixed_dictionaries(
    {},
    optional={
        "longUrl": st.one_of(
            json_values, st.sampled_from(["https://example.com/", "http://a.example/x"])
        ),
        "customAlias": st.one_of(json_values, st.from_regex(r"[a-z0-9-]{3,10}", fullmatch=True)),
        "expiresAt": json_values,
        "maxClicks": json_values,
        "password": json_values,
        "redirectType": st.one_of(json_values, st.sampled_from([301, 302])),
        "maxAge": json_values,
        "tags": json_values,
    },
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.one_of(create_bodies, json_values))
def test_fuzzed_creates_never_5xx(app: Any, body: Any) -> None:
    resp = app.client.post(
        "/v1/links", content=json.dumps(body), headers={"Content-Type": "application/json"}
    )
    assert resp.status_code < 500, resp.text
    if resp.status_code >= 400:
        _error(resp, resp.status_code)


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(json_values)
def test_fuzzed_patches_never_5xx(app: Any, auth: dict, patch: Any) -> None:
    key = "fuzz-target"
    if app.service.store.get(key) is None:
        _create(app, auth, longUrl="https://example.com/", customAlias=key)
    resp = app.client.patch(
        f"/v1/links/{key}",
        content=json.dumps(patch),
        headers={**auth, "Content-Type": "application/json"},
    )
    assert resp.status_code < 500, resp.text
    if resp.status_code >= 400:
        _error(resp, resp.status_code)


def test_routes_mounted_after_the_shortener_are_never_shadowed(
    make_config: Callable[..., Any],
) -> None:
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route
    from starlette.testclient import TestClient

    from lookup.server import create_app
    from lookup.shortener.http import mount

    config = make_config()
    holder: dict[str, Any] = {}

    def later(mounts: Any) -> None:
        @mounts.api.get("/typeahead-ui")
        async def ui() -> dict:
            return {"ui": True}

        async def fast(_: Any) -> PlainTextResponse:
            return PlainTextResponse("fast")

        mounts.fast_routes.append(Route("/nearby", fast))

    def shortener(mounts: Any) -> None:
        holder["service"] = mount(mounts, config=config)

    app = create_app(config.data_dir, base_url=config.base_url, subsystems=[shortener, later])
    client = TestClient(app, raise_server_exceptions=False)  # no lifespan: the lazy path
    assert client.get("/typeahead-ui").json() == {"ui": True}
    assert client.get("/nearby").text == "fast"
    resp = client.post("/v1/links", json={"longUrl": "https://e.example/", "customAlias": "nearby"})
    _error(resp, 400, "RESERVED_ALIAS")
    holder["service"].close()
