"""What every seam's contract test checks of the seam's registry, written once.

A seam package (``lookup.shortener.links``, ``lookup.kit.secrets``, …) names its backends
in ``BACKENDS = {scheme: "module:Class"}``. Its contract test parametrises over that
registry, says in ``FRESH`` how to get a fresh, empty store of each scheme, and checks
that every registered class opens from a URL (and is the port) and that importing the
port loads no backend — with the functions below.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

#: How to get the URL of a fresh, empty store of one scheme: a function of a temp dir, or
#: the name of the fixture that gives one on a real server.
Fresh = Callable[[Path], str] | str


def fresh_url(request: pytest.FixtureRequest, tmp_path: Path, fresh: Mapping[str, Fresh]) -> str:
    """The URL of a fresh store of the scheme ``request.param`` names; the test fails if
    the scheme is registered but ``fresh`` has no recipe for it."""
    recipe = fresh.get(request.param)
    if recipe is None:
        pytest.fail(f"{request.param!r} is registered: say in FRESH how to get a fresh one")
    if isinstance(recipe, str):
        return str(request.getfixturevalue(recipe))
    return recipe(tmp_path)


def check_registered(
    backends: Iterable[str], backend: Callable[[str], Any], port: type | None = None
) -> None:
    """Every scheme of ``backends`` names a class with ``from_url`` (and a subclass of
    ``port``, a runtime-checkable Protocol, when given)."""
    for scheme in backends:
        found = backend(scheme)
        assert callable(getattr(found, "from_url", None)), scheme
        if port is not None:
            assert issubclass(found, port), scheme


def check_port_imports_no_backend(package: str, drivers: tuple[str, ...] = ("psycopg",)) -> None:
    """Importing ``package`` (a seam's port) in a fresh interpreter loads none of its
    backend modules and none of ``drivers``: a backend is imported when a URL names it."""
    prefixes = (f"{package}.", *drivers)
    code = (
        f"import sys, {package}\n"
        "print(','.join(sorted(m for m in sys.modules if m.startswith("
        f"{prefixes!r}))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == ""
