"""Every mutating typeahead endpoint takes the admin token (issue 11, items 5 and 17).

Without a token: 401 ``UNAUTHORIZED``; with another bearer token: 403 ``FORBIDDEN``; in
both cases nothing changes (the blocklist, the active version). With the admin token the
call goes through. The single server and the shard router mount the same guard.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from lookup.kit.admin import server_admin_token
from lookup.server import create_app
from lookup.typeahead.http import install
from lookup.typeahead.serving import SuggestService

#: (method, path, request options): every mutating endpoint of the single server.
MUTATING: list[tuple[str, str, dict[str, Any]]] = [
    ("POST", "/v1/typeahead/blocklist", {"json": {"terms": ["iphone"]}}),
    ("DELETE", "/v1/typeahead/blocklist", {"params": {"term": "iphone"}}),
    ("POST", "/v1/typeahead/snapshots/en-IN/rollback", {}),
    ("POST", "/v1/typeahead/snapshots/en-IN/activate", {"json": {"version": "x"}}),
    ("POST", "/v1/typeahead/snapshots/reload", {}),
    ("POST", "/v1/typeahead/snapshots/en-IN/canary", {"json": {"version": "x"}}),
    ("DELETE", "/v1/typeahead/snapshots/en-IN/canary", {}),
]


@pytest.fixture
def client(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    monkeypatch.delenv("LOOKUP_ADMIN_TOKEN", raising=False)
    service = SuggestService.from_data_dir(data_dir)
    app = create_app(data_dir, subsystems=[lambda m: install(m, service)])
    with TestClient(app) as c:
        yield c


def _state(client: TestClient) -> tuple[Any, Any]:
    return (
        client.get("/v1/typeahead/blocklist").json()["terms"],
        client.get("/v1/typeahead/snapshots").json(),
    )


@pytest.mark.parametrize(("method", "path", "options"), MUTATING)
def test_a_mutating_endpoint_refuses_without_the_admin_token(
    client: TestClient, method: str, path: str, options: dict[str, Any]
) -> None:
    before = _state(client)
    bare = client.request(method, path, **options)
    assert bare.status_code == 401 and bare.json()["error"] == "UNAUTHORIZED", bare.text
    other = client.request(
        method, path, headers={"Authorization": "Bearer someone-elses-token-123"}, **options
    )
    assert other.status_code == 403 and other.json()["error"] == "FORBIDDEN", other.text
    assert _state(client) == before


def test_the_admin_token_goes_through(client: TestClient, data_dir: Path) -> None:
    admin = {"Authorization": f"Bearer {server_admin_token(data_dir)}"}
    added = client.post("/v1/typeahead/blocklist", json={"terms": ["iphone"]}, headers=admin)
    assert added.status_code == 200 and "iphone" in added.json()["terms"]
    assert "iphone" not in client.get("/v1/suggest?q=iph").json()["suggestions"]
    removed = client.delete("/v1/typeahead/blocklist", params={"term": "iphone"}, headers=admin)
    assert removed.status_code == 200
    assert client.post("/v1/typeahead/snapshots/reload", headers=admin).status_code == 200
