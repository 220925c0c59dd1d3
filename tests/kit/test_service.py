"""Every live service has the one lifecycle: ``status()`` for /healthz, ``close()`` to stop."""

from __future__ import annotations

import importlib
import inspect

import pytest

from lookup.kit.service import LiveService

SERVICES = [
    "lookup.shortener.app:Shortener",
    "lookup.typeahead.serving:SuggestService",
    "lookup.geo.service:PlacesService",
    "lookup.search.service:SearchService",
]


@pytest.mark.parametrize("target", SERVICES)
def test_each_live_service_has_status_and_close(target: str) -> None:
    module, _, name = target.partition(":")
    cls = getattr(importlib.import_module(module), name)
    for method in ("status", "close"):
        fn = getattr(cls, method, None)
        assert callable(fn), f"{name} has no {method}()"
        params = [p for p in inspect.signature(fn).parameters.values() if p.name != "self"]
        assert all(p.default is not p.empty for p in params), f"{name}.{method} needs arguments"
    assert issubclass(cls, LiveService)


def test_the_health_endpoint_asks_each_system_the_same_way(tmp_path) -> None:
    from starlette.testclient import TestClient

    from lookup.server import create_app

    with TestClient(create_app(tmp_path)) as client:
        systems = client.get("/healthz").json()["systems"]
    assert set(systems) >= {"shortener", "typeahead", "places", "search"}
    assert all("status" in report for report in systems.values()), systems
