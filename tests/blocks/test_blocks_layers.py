"""``lookup/blocks`` stands on the foundation only: ``lookup.kit``, ``lookup.settings``,
``lookup.errors`` and itself — never a system, the edge, the dashboard or Jupyter."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

from tests.sourcetree import parse_file

ROOT = Path(__file__).resolve().parents[2]
ALLOWED = ("lookup.kit", "lookup.settings", "lookup.errors", "lookup.blocks")


def _lookup_imports(path: Path) -> list[str]:
    tree = parse_file(path)
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names += [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    return [n for n in names if n == "lookup" or n.startswith("lookup.")]


def test_blocks_import_only_the_foundation() -> None:
    bad = []
    for path in sorted((ROOT / "lookup/blocks").rglob("*.py")):
        for name in _lookup_imports(path):
            if name in ("lookup", "lookup.settings"):
                continue  # ``import lookup`` (for its path) and ``from lookup import settings``
            if not any(name == p or name.startswith(p + ".") for p in ALLOWED):
                bad.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not bad, "\n".join(bad)


def test_importing_the_ids_block_pulls_in_no_system_and_no_streamlit() -> None:
    code = (
        "import sys, lookup.blocks.ids, lookup.blocks.ids.drill, lookup.blocks.ids.locality\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith(('lookup.', "
        "'streamlit')))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    systems = ("shortener", "typeahead", "geo", "crawler", "search")
    assert not [m for m in out if m.startswith("streamlit")]
    assert not [m for m in out if m.split(".")[1] in systems], out
    assert importlib.import_module("lookup.blocks").__doc__


def test_every_public_name_resolves_and_the_snowflake_alone_stays_light() -> None:
    ids = importlib.import_module("lookup.blocks.ids")
    assert sorted(ids.__all__) == sorted(set(ids.__all__))
    for name in ids.__all__:
        assert getattr(ids, name) is not None, name
    code = (
        "import sys, lookup.blocks.ids.snowflake, lookup.blocks.ids.formats\n"
        "print('etcd3gw' in sys.modules, 'lookup.blocks.ids.workers' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["False", "False"]
