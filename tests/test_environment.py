"""environment.yml and pyproject.toml name the same dependencies."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _name(spec: str) -> str:
    """The normalised distribution name of a requirement string (PEP 503)."""
    bare = re.split(r"[\[<>=!~;\s]", spec.strip(), maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", bare).lower()


def _pyproject() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = {_name(d) for d in project["dependencies"]}
    for extra in project["optional-dependencies"].values():
        names |= {_name(d) for d in extra}
    return names


def _environment() -> set[str]:
    names = set()
    in_pip = False
    for line in (ROOT / "environment.yml").read_text().splitlines():
        stripped = line.strip()
        if stripped.startswith("- pip:"):
            in_pip = True
            continue
        if in_pip and stripped.startswith("- ") and not stripped.startswith("- -e"):
            names.add(_name(stripped[2:]))
    return names


def test_every_dependency_is_named_in_both_files() -> None:
    py, env = _pyproject(), _environment()
    assert py - env == set(), f"in pyproject.toml but not environment.yml: {sorted(py - env)}"
    assert env - py == set(), f"in environment.yml but not pyproject.toml: {sorted(env - py)}"


def test_python_versions_agree() -> None:
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert requires == ">=3.11"
    assert "python>=3.11" in (ROOT / "environment.yml").read_text()
