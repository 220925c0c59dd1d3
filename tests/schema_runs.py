"""Schemathesis runs shared by the search and places suites: one system's OpenAPI
operations over loopback HTTP, with the admin token, without one, and with another.

* **with the admin token** (positive and negative inputs): never a 5xx, bad input is
  refused, and every 4xx is the app-wide JSON error ``{"error", "message"}``;
* **without a token** (positive inputs): every mutating operation answers ``401
  UNAUTHORIZED`` — the status its OpenAPI document declares — and reads stay open;
* **with someone else's token**: every mutating operation answers ``403 FORBIDDEN``.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import schemathesis
from schemathesis import GenerationMode
from starlette.testclient import TestClient

READS = {"GET", "HEAD", "OPTIONS"}
OTHER_TOKEN = {"Authorization": "Bearer someone-elses-token-0123456789"}


def openapi_of(make_app: Callable[[Path], Any]) -> dict[str, Any]:
    """The OpenAPI document of an app over an empty data directory (no lifespan run)."""
    with tempfile.TemporaryDirectory(prefix="schema-") as empty:
        return dict(TestClient(make_app(Path(empty))).get("/openapi.json").json())


def schemas(document: dict[str, Any], path_regex: str, max_examples: int) -> tuple[Any, Any]:
    """``(fuzzed, positive)``: the operations under ``path_regex``, once with positive and
    negative inputs, once with a few positive ones (for the token runs)."""
    fuzzed = schemathesis.openapi.from_dict(document).include(path_regex=path_regex)
    fuzzed.config.generation.update(
        modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE],
        max_examples=max_examples,
        deterministic=True,
    )
    positive = schemathesis.openapi.from_dict(document).include(path_regex=path_regex)
    positive.config.generation.update(
        modes=[GenerationMode.POSITIVE], max_examples=3, deterministic=True
    )
    return fuzzed, positive


def json_error(response: Any, label: str) -> dict[str, Any]:
    """The JSON error body of a 4xx (assertion error if it is not one)."""
    assert "application/json" in response.headers.get("content-type", ""), label
    body = response.json()
    assert isinstance(body.get("error"), str) and body.get("message"), (label, body)
    return dict(body)


def declared(case: Any, status: int) -> bool:
    """Whether the operation's OpenAPI document declares ``status``."""
    responses = case.operation.definition.raw.get("responses", {})
    return str(status) in responses


def check_refusal(case: Any, response: Any, status: int, code: str) -> None:
    """A mutating operation refused with ``status``/``code`` (declared), a read not."""
    label = f"{case.method} {case.formatted_path}"
    assert response.status_code < 500, (label, response.text[:300])
    if case.method.upper() in READS:
        assert response.status_code not in (401, 403), label
        return
    assert response.status_code == status, (label, response.status_code, response.text[:300])
    assert json_error(response, label)["error"] == code
    assert declared(case, status), f"{label} does not declare {status} in its OpenAPI document"
