"""Schemathesis against the search engine's OpenAPI operations (``/search/…`` management
and status), served over loopback HTTP on a built four-shard index: no 5xx, JSON errors,
and the admin token's 401/403 on every mutating operation (see :mod:`tests.schema_runs`)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import negative_data_rejection

from lookup.kit.admin import admin_token_path
from lookup.server import create_app
from tests.conftest import serve_in_thread
from tests.schema_runs import OTHER_TOKEN, check_refusal, json_error, openapi_of, schemas

ADMIN_TOKEN = "search-schemathesis-admin-token"
SEARCH = ["lookup.search.http:mount"]

fuzzed, positive = schemas(
    openapi_of(lambda d: create_app(d, subsystems=SEARCH)), r"^/search/", max_examples=15
)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, index_4: Path) -> Iterator[str]:
    data = tmp_path_factory.mktemp("search-schema") / "data"
    shutil.copytree(index_4, data / "search")
    admin_token_path(data).parent.mkdir(parents=True)
    admin_token_path(data).write_text(ADMIN_TOKEN + "\n")
    with serve_in_thread(create_app(data, subsystems=SEARCH)) as url:
        yield url


@pytest.mark.timeout(60)
@fuzzed.parametrize()
def test_no_5xx_and_bad_input_gets_a_json_error(case: Any, served: str) -> None:
    response = case.call_and_validate(
        base_url=served,
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
        checks=[not_a_server_error, negative_data_rejection],
        timeout=30,
    )
    label = f"{case.method} {case.formatted_path}"
    assert response.status_code < 500, (label, response.text[:300])
    if 400 <= response.status_code < 500:
        json_error(response, label)


@pytest.mark.timeout(60)
@positive.parametrize()
def test_mutating_operations_without_a_token_get_401(case: Any, served: str) -> None:
    check_refusal(case, case.call(base_url=served, timeout=30), 401, "UNAUTHORIZED")


@pytest.mark.timeout(60)
@positive.parametrize()
def test_mutating_operations_with_another_token_get_403(case: Any, served: str) -> None:
    response = case.call(base_url=served, headers=OTHER_TOKEN, timeout=30)
    check_refusal(case, response, 403, "FORBIDDEN")
