"""The shared HTTP app: health, OpenAPI, and one JSON error format for every bad request."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from lookup.kit.http import MAX_BODY_BYTES, ApiError
from lookup.server import Mounts, create_app


def _probe_mount(mounts: Mounts) -> None:
    """A tiny subsystem used to exercise the mounting seams."""
    from fastapi import Body

    @mounts.api.post("/v1/echo")
    async def echo(payload: dict = Body(...)) -> dict:  # noqa: B008
        return {"got": payload}

    @mounts.api.get("/v1/boom")
    async def boom() -> dict:
        raise RuntimeError("a bug")

    async def fast(request):  # type: ignore[no-untyped-def]
        if request.path_params["name"] == "teapot":
            raise ApiError(418, "TEAPOT", "short and stout")
        return PlainTextResponse("fast:" + request.path_params["name"])

    mounts.fast_routes.append(Route("/fast/{name}", fast))
    mounts.health["probe"] = lambda: {"status": "ready"}


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> TestClient:
    app = create_app(tmp_path_factory.mktemp("data"), subsystems=[_probe_mount])
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


def _assert_error(resp, status: int, code: str | None = None) -> dict:  # type: ignore[no-untyped-def]
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert set(body) >= {"error", "message"}
    assert isinstance(body["error"], str) and body["error"].isupper()
    if code:
        assert body["error"] == code
    return body


def test_healthz_reports_mounted_systems(client: TestClient) -> None:
    resp = client.get("/healthz")
    assert resp.status_code == 200
    body = resp.json()
    assert body["status"] == "ok"
    assert body["systems"]["probe"] == {"status": "ready"}


def test_openapi_document_lists_routes(client: TestClient) -> None:
    doc = client.get("/openapi.json").json()
    assert doc["openapi"].startswith("3.")
    assert "/healthz" in doc["paths"] and "/v1/echo" in doc["paths"]


def test_unknown_route_is_json_404(client: TestClient) -> None:
    _assert_error(client.get("/no/such/route"), 404, "NOT_FOUND")


def test_wrong_method_is_json_405(client: TestClient) -> None:
    _assert_error(client.delete("/healthz"), 405, "METHOD_NOT_ALLOWED")


def test_malformed_json_is_400(client: TestClient) -> None:
    resp = client.post("/v1/echo", content=b'{"a": ', headers={"content-type": "application/json"})
    _assert_error(resp, 400, "MALFORMED_JSON")


def test_wrong_type_is_422_with_details(client: TestClient) -> None:
    resp = client.post("/v1/echo", json=[1, 2, 3])
    body = _assert_error(resp, 422, "INVALID_REQUEST")
    assert body["details"]


def test_oversized_body_is_413(client: TestClient) -> None:
    resp = client.post("/v1/echo", content=b"x" * (MAX_BODY_BYTES + 1))
    _assert_error(resp, 413, "PAYLOAD_TOO_LARGE")


def test_streamed_oversized_body_is_413(client: TestClient) -> None:
    def chunks():  # no Content-Length: the limit is enforced while reading
        for _ in range(MAX_BODY_BYTES // 1024 + 2):
            yield b"y" * 1024

    resp = client.post("/v1/echo", content=chunks())
    _assert_error(resp, 413, "PAYLOAD_TOO_LARGE")


def test_bug_in_a_route_is_json_500_without_traceback(client: TestClient) -> None:
    resp = client.get("/v1/boom")
    body = _assert_error(resp, 500, "INTERNAL")
    assert "Traceback" not in resp.text and "a bug" not in body["message"]


def test_fast_path_routes_and_their_errors(client: TestClient) -> None:
    assert client.get("/fast/abc").text == "fast:abc"
    _assert_error(client.get("/fast/teapot"), 418, "TEAPOT")


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    method=st.sampled_from(["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]),
    path=st.text(
        alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="?#"),
        max_size=40,
    ),
    body=st.one_of(
        st.binary(max_size=300),
        st.text(max_size=100).map(lambda s: s.encode("utf-8")),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
            lambda inner: (
                st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4)
            ),
            max_leaves=10,
        ).map(lambda v: json.dumps(v).encode()),
    ),
    content_type=st.sampled_from(
        ["application/json", "text/plain", "", "application/x-www-form-urlencoded"]
    ),
)
def test_malformed_requests_never_5xx(
    client: TestClient, method: str, path: str, body: bytes, content_type: str
) -> None:
    from urllib.parse import quote

    url = "/" + quote(path.lstrip("/"), safe="/")
    headers = {"content-type": content_type} if content_type else {}
    resp = client.request(method, url, content=body, headers=headers)
    assert resp.status_code < 500, (method, url, resp.status_code, resp.text)
    if resp.status_code >= 400:
        assert "error" in resp.json()


@pytest.mark.parametrize(
    "path", ["/v1/echo", "/healthz", "/%00", "/..%2f..%2fetc/passwd", "/" + "a" * 5000]
)
def test_hostile_paths(client: TestClient, path: str) -> None:
    resp = client.get(path)
    assert resp.status_code < 500
