"""Owner tokens can be revoked and rotated (issue 11, item 3).

``POST /v1/tokens/revoke`` revokes the bearer token presented (RFC 7009's revocation,
as a bearer call); ``POST /v1/tokens/rotate`` mints a successor that owns the same
links and revokes the old one in the same transaction. A revoked token gets ``401
TOKEN_REVOKED`` at once on every endpoint that reads a token — in this server and in
another one over the same store (a second process's caches hold nothing stale).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

OWNER_ENDPOINTS: list[tuple[str, str, dict[str, Any]]] = [
    ("GET", "/v1/links", {}),
    ("GET", "/v1/links/export.csv", {}),
    ("POST", "/v1/links/import", {"content": "longUrl\nhttps://example.com/i\n"}),
    ("POST", "/v1/links", {"json": {"longUrl": "https://example.com/new"}}),
    ("GET", "/v1/links/{key}", {}),
    ("PATCH", "/v1/links/{key}", {"json": {"tags": ["x"]}}),
    ("GET", "/v1/links/{key}/history", {}),
    ("GET", "/v1/links/{key}/stats", {}),
    ("DELETE", "/v1/links/{key}", {}),
    ("POST", "/v1/tokens/rotate", {}),
    ("POST", "/v1/tokens/revoke", {}),
]


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _mint(client: Any) -> str:
    answer = client.post("/v1/tokens")
    assert answer.status_code == 201
    return str(answer.json()["token"])


def _every_endpoint_refuses(client: Any, token: str, key: str) -> None:
    for method, path, kwargs in OWNER_ENDPOINTS:
        answer = client.request(method, path.format(key=key), headers=_bearer(token), **kwargs)
        assert answer.status_code == 401, (method, path, answer.status_code, answer.text)
        assert answer.json()["error"] == "TOKEN_REVOKED", (method, path)


def test_a_revoked_token_gets_401_on_every_endpoint_at_once(app: Any) -> None:
    token = _mint(app.client)
    key = app.client.post(
        "/v1/links", json={"longUrl": "https://example.com/mine"}, headers=_bearer(token)
    ).json()["key"]
    assert app.client.get("/v1/links", headers=_bearer(token)).status_code == 200
    revoked = app.client.post("/v1/tokens/revoke", headers=_bearer(token))
    assert revoked.status_code == 200 and revoked.json()["revoked"] is True
    _every_endpoint_refuses(app.client, token, key)
    # The link itself still redirects: revoking a token is not deleting its links.
    assert app.client.get(f"/{key}", follow_redirects=False).status_code == 302


def test_rotation_keeps_the_links_and_revokes_the_old_token(app: Any) -> None:
    old = _mint(app.client)
    key = app.client.post(
        "/v1/links", json={"longUrl": "https://example.com/kept"}, headers=_bearer(old)
    ).json()["key"]
    owner_before = app.client.get(f"/v1/links/{key}", headers=_bearer(old)).json()
    assert owner_before["longUrl"] == "https://example.com/kept" and "maxClicks" in owner_before
    rotated = app.client.post("/v1/tokens/rotate", headers=_bearer(old))
    assert rotated.status_code == 201, rotated.text
    new = rotated.json()["token"]
    assert new != old
    listing = app.client.get("/v1/links", headers=_bearer(new))
    assert listing.status_code == 200
    assert [link["key"] for link in listing.json()["links"]] == [key]
    patched = app.client.patch(f"/v1/links/{key}", json={"tags": ["rotated"]}, headers=_bearer(new))
    assert patched.status_code == 200 and patched.json()["tags"] == ["rotated"]
    _every_endpoint_refuses(app.client, old, key)
    # The successor can be rotated and revoked in turn.
    newer = app.client.post("/v1/tokens/rotate", headers=_bearer(new)).json()["token"]
    assert app.client.get("/v1/links", headers=_bearer(new)).status_code == 401
    assert app.client.post("/v1/tokens/revoke", headers=_bearer(newer)).status_code == 200
    assert app.client.get("/v1/links", headers=_bearer(newer)).status_code == 401


def test_revocation_reaches_another_server_over_the_same_store(
    make_app: Callable[..., Any],
) -> None:
    first, second = make_app(), make_app()  # two servers, one data directory
    token = _mint(first.client)
    key = first.client.post(
        "/v1/links", json={"longUrl": "https://example.com/two"}, headers=_bearer(token)
    ).json()["key"]
    assert second.client.get(f"/v1/links/{key}/history", headers=_bearer(token)).status_code == 200
    assert second.client.get("/v1/links", headers=_bearer(token)).status_code == 200
    assert first.client.post("/v1/tokens/revoke", headers=_bearer(token)).status_code == 200
    _every_endpoint_refuses(second.client, token, key)


def test_revoke_and_rotate_need_a_token(app: Any) -> None:
    for path in ("/v1/tokens/revoke", "/v1/tokens/rotate"):
        answer = app.client.post(path)
        assert answer.status_code == 401 and answer.json()["error"] == "UNAUTHORIZED"


def test_a_token_rotates_once(app: Any) -> None:
    old = _mint(app.client)
    answers = [app.client.post("/v1/tokens/rotate", headers=_bearer(old)) for _ in range(2)]
    assert [a.status_code for a in answers] == [201, 401]
