"""The shortener's modules form no import cycle, and the domain service imports no edge.

The composition root (``lookup.shortener.app``) wires analytics and the scanner into the
service at construction, so the service needs neither, and neither needs the service.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import lookup.shortener
from tests.sourcetree import parse_file

PACKAGE = Path(lookup.shortener.__file__).parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent.parent).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """Every ``lookup.shortener`` module ``path`` imports anywhere (TYPE_CHECKING too)."""
    tree = parse_file(path)
    here = _module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                root = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*root, base] if base else root)
            names = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        found.update(n for n in names if n.startswith("lookup.shortener"))
    return found


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        if name == "lookup.shortener":
            continue  # the package's lazy re-exports import nothing at import time
        graph[name] = {
            m for m in _imports(path) if m in modules and m not in (name, "lookup.shortener")
        }
    return graph


def test_the_shortener_modules_import_no_cycle() -> None:
    graph = _graph()
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt) :] + [nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)


def test_the_domain_service_imports_no_edge_and_no_neighbour() -> None:
    imported = _graph()["lookup.shortener.service"]
    forbidden = {
        "lookup.shortener.analytics",
        "lookup.shortener.scanner",
        "lookup.shortener.http",
        "lookup.shortener.app",
        "lookup.shortener.api",
        "lookup.shortener.parse",
        "lookup.shortener.views",
        "lookup.shortener.transfer",
    }
    assert not {m for m in imported if any(m == f or m.startswith(f + ".") for f in forbidden)}
    graph = _graph()
    for name in ("lookup.shortener.analytics", "lookup.shortener.scanner"):
        assert "lookup.shortener.service" not in graph[name]


@pytest.mark.parametrize(
    "module",
    [
        "lookup.shortener.service",
        "lookup.shortener.analytics",
        "lookup.shortener.scanner",
        "lookup.shortener.app",
        "lookup.shortener.http",
    ],
)
def test_each_module_imports_alone(module: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", f"import {module}"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr


def test_the_composition_root_is_a_live_service(shortener: Any) -> None:
    from lookup.kit.service import LiveService

    assert isinstance(shortener, LiveService)
    assert shortener.status()["status"] == "ready"
    shortener.close()
    shortener.close()  # safe twice
