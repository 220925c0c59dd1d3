"""Schemathesis against the crawler's control and health operations, over loopback HTTP.

With the admin token (positive and negative inputs): no 5xx, every 4xx the app-wide JSON
error. Without a token: ``POST /crawler/controls`` answers ``401`` and issues nothing.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import negative_data_rejection
from starlette.testclient import TestClient

from lookup.crawler import Sandbox, crawl
from lookup.crawler.controls import controls_url, open_crawl_controls
from lookup.crawler.store import crawl_state_url
from lookup.kit.admin import load_admin_token
from lookup.server import create_app
from tests.conftest import serve_in_thread
from tests.crawler.conftest import test_config

SUBSYSTEMS = ["lookup.crawler.http:mount"]
_EMPTY = tempfile.TemporaryDirectory(prefix="crawler-schema-")
OPENAPI = TestClient(create_app(_EMPTY.name, subsystems=SUBSYSTEMS)).get("/openapi.json").json()
schema = schemathesis.openapi.from_dict(OPENAPI).include(path_regex=r"^/crawler/")
schema.config.generation.update(
    modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE], max_examples=25, deterministic=True
)
unauthenticated = schemathesis.openapi.from_dict(OPENAPI).include(path_regex=r"^/crawler/")
unauthenticated.config.generation.update(
    modes=[GenerationMode.POSITIVE], max_examples=5, deterministic=True
)


class Served:
    def __init__(self, url: str, data_dir: Path) -> None:
        self.url = url
        self.data_dir = data_dir
        self.admin = {"Authorization": f"Bearer {load_admin_token(data_dir)}"}


@pytest.fixture(scope="module")
def served(web: Sandbox, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    data = tmp_path_factory.mktemp("crawler-schemathesis") / "data"
    crawl(test_config(data / "crawls" / "c1", web, max_pages=20))
    with serve_in_thread(create_app(data, subsystems=SUBSYSTEMS)) as url:
        yield Served(url, data)


def _json_error(response: Any, label: str) -> dict[str, Any]:
    assert "application/json" in response.headers.get("content-type", ""), label
    body = response.json()
    assert isinstance(body.get("error"), str) and body.get("message"), (label, body)
    return body  # type: ignore[no-any-return]


@pytest.mark.timeout(60)
@schema.parametrize()
def test_no_5xx_and_bad_input_gets_a_json_error(case: Any, served: Served) -> None:
    response = case.call_and_validate(
        base_url=served.url,
        headers=served.admin,
        checks=[not_a_server_error, negative_data_rejection],
        timeout=30,
    )
    label = f"{case.method} {case.formatted_path}"
    assert response.status_code < 500, (label, response.text[:300])
    if 400 <= response.status_code < 500:
        _json_error(response, label)


@pytest.mark.timeout(60)
@unauthenticated.parametrize()
def test_issuing_needs_the_admin_token(case: Any, served: Served) -> None:
    controls = open_crawl_controls(controls_url(crawl_state_url(served.data_dir / "crawls" / "c1")))
    try:
        before = len(controls.since(0))
        response = case.call(base_url=served.url, timeout=30)
        label = f"{case.method} {case.formatted_path}"
        assert response.status_code < 500, (label, response.text[:300])
        if case.method.upper() == "GET":
            assert response.status_code != 401, label
        else:
            assert response.status_code == 401, (label, response.status_code)
            assert _json_error(response, label)["error"] == "UNAUTHORIZED"
            assert len(controls.since(0)) == before
    finally:
        controls.close()
