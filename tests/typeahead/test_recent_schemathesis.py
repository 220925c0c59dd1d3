"""Schemathesis over ``/v1/suggest/recent`` (issue 27 item 9): generated requests, good and
bad, with a valid device token, never get a 5xx, and refused input is a JSON error."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import schemathesis
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import negative_data_rejection

from tests.conftest import serve_in_thread
from tests.typeahead.test_schemathesis import HANG_GUARD_S, OPENAPI, _app, _json_error

from .conftest import Built

schema = schemathesis.openapi.from_dict(OPENAPI).include(path_regex=r"^/v1/suggest/recent")
schema.config.generation.update(
    modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE], max_examples=25, deterministic=True
)


@pytest.fixture(scope="module")
def served(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    data_dir = tmp_path_factory.mktemp("recent-schemathesis") / "data"
    shutil.copytree(built.data_dir, data_dir)
    with serve_in_thread(_app(data_dir)) as url:
        token = httpx.post(f"{url}/v1/suggest/recent/token", timeout=30).json()["token"]
        yield url, token


def test_the_recent_operations_are_documented() -> None:
    assert {"get", "delete"} <= set(OPENAPI["paths"]["/v1/suggest/recent"])
    assert "post" in OPENAPI["paths"]["/v1/suggest/recent/token"]


@pytest.mark.timeout(HANG_GUARD_S)
@schema.parametrize()
def test_no_5xx_and_bad_input_gets_a_json_error(case: Any, served: tuple[str, str]) -> None:
    url, token = served
    response = case.call_and_validate(
        base_url=url,
        headers={"Authorization": f"Bearer {token}"},
        checks=[not_a_server_error, negative_data_rejection],
        timeout=30,
    )
    label = f"{case.method} {case.formatted_path}"
    assert response.status_code < 500, (label, response.text[:300])
    if 400 <= response.status_code < 500:
        _json_error(response, label)
