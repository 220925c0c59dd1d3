"""Schemathesis against the real app's ``/openapi.json``: every shortener operation, with
schema-valid and schema-violating inputs, bounded in time.

Properties: no 5xx ever; input the schema forbids is refused with a 4xx; and every 4xx
the shortener's API answers is the app-wide JSON error ``{"error": CODE, "message": ...}``.
The app is served by uvicorn on a free loopback port (lifespan and all, as ``lookup
serve`` runs it) and schemathesis sends real HTTP requests; the schema is the app's own
OpenAPI document, checked to equal what the running server's ``GET /openapi.json`` serves. Requests
carry a real owner's bearer token (the admin token for the blocklist and the metrics) so
that owner-only paths are reached too; :func:`test_admin_and_revoked_tokens_are_refused`
checks the refusals the tokens guard (401, 403, TOKEN_REVOKED) on every operation.
"""

from __future__ import annotations

import secrets
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
import uvicorn
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import negative_data_rejection
from starlette.testclient import TestClient

from lookup.kit.admin import load_admin_token_in
from lookup.kit.ratelimit import RatePolicy
from lookup.server import create_app
from lookup.shortener import Limits, ShortenerConfig
from lookup.shortener.http import mount

BASE_URL = "http://127.0.0.1:8000"
TOKEN = "schemathesis-owner-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
#: Examples per operation and mode. The run is bounded by construction: 15 operations
#: with positive and negative inputs make about 900 requests (7–15 s on the shared
#: 2-core machine); the timeout below only guards against a hang.
MAX_EXAMPLES = 40
HANG_GUARD_S = 60.0


class Deployment:
    """The app (built at import, so that its OpenAPI document can be loaded then), its
    data directory and admin token; :meth:`start` serves it over loopback HTTP."""

    def __init__(self) -> None:
        self.tmp = tempfile.TemporaryDirectory(prefix="schemathesis-")
        big = RatePolicy.per(10_000_000, 1)
        config = ShortenerConfig(
            data_dir=Path(self.tmp.name),
            base_url=BASE_URL,
            limits=Limits(anonymous=big, owner=big, ip=big, misses=big, passwords=big),
            scanner=False,
            aggregator="thread",
        )
        self.app = create_app(
            config.data_dir, base_url=BASE_URL, subsystems=[lambda m: mount(m, config=config)]
        )
        self.admin_token = load_admin_token_in(Path(self.tmp.name) / "shortener")
        self.url = ""
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Serve the app on a free loopback port (lifespan on); add some links."""
        from lookup.kit.ports import free_port

        port = free_port()
        config = uvicorn.Config(
            self.app, host="127.0.0.1", port=port, lifespan="on", log_level="warning"
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.02)
        self.url = f"http://127.0.0.1:{port}"
        for i in range(5):  # real links of our owner, so that owner paths have data
            httpx.post(
                f"{self.url}/v1/links",
                json={"longUrl": f"https://example.com/st/{i}", "customAlias": f"st-link-{i}"},
                headers=AUTH,
            ).raise_for_status()

    def close(self) -> None:
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=30)
        self.tmp.cleanup()


DEPLOYMENT = Deployment()
# Read through the ASGI app without starting its lifespan (no threads at collection time).
OPENAPI = TestClient(DEPLOYMENT.app).get("/openapi.json").json()
#: The app's OpenAPI document: the shortener's operations, positive and negative inputs.
schema = schemathesis.openapi.from_dict(OPENAPI).include(
    path_regex=r"^/v1/(links|shortener|tokens)"
)
schema.config.generation.update(
    modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE],
    max_examples=MAX_EXAMPLES,
    deterministic=True,
)


@pytest.fixture(scope="module")
def deployment() -> Iterator[Deployment]:
    DEPLOYMENT.start()
    served = httpx.get(f"{DEPLOYMENT.url}/openapi.json").json()
    assert served == OPENAPI  # what schemathesis reads is what the server publishes
    yield DEPLOYMENT
    DEPLOYMENT.close()


def _assert_json_error(response: Any, label: str) -> None:
    """A 4xx is the app-wide JSON error body, with a specific code and a message."""
    content_type = response.headers.get("content-type", "")
    if isinstance(content_type, list):
        content_type = content_type[0]
    assert "application/json" in content_type, (label, response.status_code, content_type)
    body = response.json()
    assert isinstance(body, dict), (label, body)
    assert isinstance(body.get("error"), str) and body["error"], (label, body)
    assert isinstance(body.get("message"), str) and body["message"], (label, body)


@pytest.mark.timeout(HANG_GUARD_S)
@schema.parametrize()
def test_no_5xx_and_bad_input_gets_a_json_error(case: Any, deployment: Deployment) -> None:
    # The blocklist and the metrics take the admin token; revoke and rotate a token of
    # their own (they would end our owner's); everything else our owner's token.
    if case.path.startswith("/v1/shortener/"):
        headers = {"Authorization": f"Bearer {deployment.admin_token}"}
    elif case.path in ("/v1/tokens/revoke", "/v1/tokens/rotate"):
        headers = {"Authorization": f"Bearer throwaway-{secrets.token_urlsafe(16)}"}
    else:
        headers = AUTH
    response = case.call_and_validate(
        base_url=deployment.url,
        headers=headers,
        checks=[not_a_server_error, negative_data_rejection],
        timeout=30,
    )
    label = f"{case.method} {case.formatted_path}"
    assert response.status_code < 500, (label, response.text[:500])
    if 400 <= response.status_code < 500:
        _assert_json_error(response, label)


def test_admin_and_revoked_tokens_are_refused(deployment: Deployment) -> None:
    """Every admin operation answers 401 without a token and 403 with an owner's; every
    operation that reads an owner token answers a revoked one 401 TOKEN_REVOKED."""
    revoked = f"revoked-{secrets.token_urlsafe(16)}"
    answer = httpx.post(
        f"{deployment.url}/v1/tokens/revoke", headers={"Authorization": f"Bearer {revoked}"}
    )
    assert answer.status_code == 200
    checked = 0
    for path, methods in OPENAPI["paths"].items():
        if not path.startswith(("/v1/links", "/v1/shortener", "/v1/tokens/")):
            continue
        url = deployment.url + path.replace("{key}", "st-link-0")
        for method in methods:
            if path.startswith("/v1/shortener/"):
                bare = httpx.request(method, url, json={})
                assert bare.status_code == 401, (method, path, bare.text)
                owner = httpx.request(method, url, json={}, headers=AUTH)
                assert owner.status_code == 403, (method, path, owner.text)
                _assert_json_error(owner, f"{method} {path}")
            elif not path.endswith((".png", ".svg")):
                gone = httpx.request(
                    method, url, json={}, headers={"Authorization": f"Bearer {revoked}"}
                )
                assert gone.status_code == 401, (method, path, gone.text)
                assert gone.json()["error"] == "TOKEN_REVOKED", (method, path)
            checked += 1
    assert checked >= 15
