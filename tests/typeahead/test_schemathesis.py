"""Schemathesis against the typeahead's OpenAPI operations, served over loopback HTTP.

Two runs over every typeahead operation of the app's own ``/openapi.json``: with the admin
token (positive and negative inputs: no 5xx, and every 4xx the app-wide JSON error), and
without any token (positive inputs: every mutating management operation answers ``401
UNAUTHORIZED`` and changes nothing; reads and ``POST /v1/searches`` stay open).
"""

from __future__ import annotations

import shutil
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

from lookup.kit.admin import server_admin_token
from lookup.kit.ratelimit import RatePolicy
from lookup.server import create_app
from lookup.typeahead.http import install
from lookup.typeahead.serving import SuggestService
from tests.conftest import serve_in_thread

from .conftest import Built

MAX_EXAMPLES = 25
HANG_GUARD_S = 60.0
#: Operations anybody may call: reads, and a person's submitted search.
OPEN = {("POST", "/v1/searches")}


def _app(data_dir: Path) -> Any:
    service = SuggestService.from_data_dir(data_dir)
    big = RatePolicy.per(10_000_000, 1)  # the fuzzer is one client; limits are tested apart
    return create_app(data_dir, subsystems=[lambda m: install(m, service, search_rate=big)])


_EMPTY = tempfile.TemporaryDirectory(prefix="ta-schema-")
OPENAPI = TestClient(_app(Path(_EMPTY.name))).get("/openapi.json").json()
schema = schemathesis.openapi.from_dict(OPENAPI).include(path_regex=r"^/v1/(typeahead|searches)")
schema.config.generation.update(
    modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE],
    max_examples=MAX_EXAMPLES,
    deterministic=True,
)
unauthenticated = schemathesis.openapi.from_dict(OPENAPI).include(
    path_regex=r"^/v1/(typeahead|searches)"
)
unauthenticated.config.generation.update(
    modes=[GenerationMode.POSITIVE], max_examples=5, deterministic=True
)


class Served:
    def __init__(self, url: str, data_dir: Path) -> None:
        self.url = url
        self.admin = {"Authorization": f"Bearer {server_admin_token(data_dir)}"}


@pytest.fixture(scope="module")
def served(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    data_dir = tmp_path_factory.mktemp("ta-schemathesis") / "data"
    shutil.copytree(built.data_dir, data_dir)
    with serve_in_thread(_app(data_dir)) as url:
        yield Served(url, data_dir)


def _json_error(response: Any, label: str) -> dict[str, Any]:
    assert "application/json" in response.headers.get("content-type", ""), label
    body = response.json()
    assert isinstance(body.get("error"), str) and body.get("message"), (label, body)
    return body  # type: ignore[no-any-return]


@pytest.mark.timeout(HANG_GUARD_S)
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


@pytest.mark.timeout(HANG_GUARD_S)
@unauthenticated.parametrize()
def test_mutating_operations_need_the_admin_token(case: Any, served: Served) -> None:
    response = case.call(base_url=served.url, timeout=30)
    label = f"{case.method} {case.formatted_path}"
    assert response.status_code < 500, (label, response.text[:300])
    if case.method.upper() == "GET" or (case.method.upper(), case.path) in OPEN:
        assert response.status_code != 401, label
    else:
        assert response.status_code == 401, (label, response.status_code, response.text[:300])
        assert _json_error(response, label)["error"] == "UNAUTHORIZED"
