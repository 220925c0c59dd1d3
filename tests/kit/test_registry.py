"""Scheme registries (``kit/registry.py``): a backend is imported only when its scheme is
asked for, and an unknown scheme is refused naming the accepted ones."""

from __future__ import annotations

import subprocess
import sys

import pytest

from lookup.kit.engines.storeurl import StoreUrl
from lookup.kit.registry import backend_for, load_backend

BACKENDS = {
    "sqlite": "lookup.kit.engines.storeurl:StoreUrl",  # any importable "module:Class" will do
    "postgresql": "lookup.kit.no_such_module:Nothing",
}


def test_a_registered_scheme_resolves_to_its_class() -> None:
    assert load_backend(BACKENDS, "sqlite") is StoreUrl
    found, parsed = backend_for(BACKENDS, "sqlite:///tmp/x.sqlite3")
    assert found is StoreUrl and parsed.scheme == "sqlite" and parsed.path is not None


def test_an_unknown_scheme_is_refused_naming_the_accepted_ones() -> None:
    with pytest.raises(ValueError, match=r"expected one of: sqlite:///path/to/file, postgresql"):
        load_backend(BACKENDS, "mongodb")
    with pytest.raises(ValueError, match=r"unsupported store URL 'mongodb://x'.*sqlite"):
        backend_for(BACKENDS, "mongodb://x")  # refused before anything is imported


def test_nothing_is_imported_until_a_scheme_is_asked_for() -> None:
    code = (
        "import sys\n"
        "from lookup.kit.registry import backend_for\n"
        "try:\n"
        "    backend_for({'sqlite': 'lookup.kit.engines.sqlite:connect'}, 'memory:')\n"
        "except ValueError:\n"
        "    pass\n"
        "print('lookup.kit.engines.sqlite' in sys.modules, 'sqlite3' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.split() == ["False", "False"]
