"""The domain blocklist's old import paths still give the same objects as the seam's
package for one release, for notebooks and outside code: ``blocklist_pg`` is an alias
module, and ``lookup.shortener.blocklist`` — a module that became the seam's package —
still has every name it had."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

from tests.aliases import check_alias
from tests.sourcetree import parse_file

#: ``lookup.shortener.blocklist`` was a module and is now the seam's package (a package
#: takes the name of the module it replaces): every name the module had is still there,
#: the file backend's imported on first use.
BLOCKLIST_MODULE = {
    "lookup.shortener.blocklist": ("BlocklistSource", "Clean", "open_blocklist_source"),
    "lookup.shortener.blocklist.file": ("TEMPLATE", "FileBlocklistSource"),
}

ROOT = Path(__file__).resolve().parents[2]


def test_the_old_postgres_path_gives_the_new_object() -> None:
    check_alias(
        "lookup.shortener.blocklist_pg",
        {"lookup.shortener.blocklist.postgres": ("PostgresBlocklistSource",)},
    )


def test_the_blocklist_package_keeps_every_name_of_the_old_module() -> None:
    from lookup.shortener.blocklist import TEMPLATE, FileBlocklistSource  # the old spelling

    package = importlib.import_module("lookup.shortener.blocklist")
    for new, names in BLOCKLIST_MODULE.items():
        module = importlib.import_module(new)
        for name in names:
            assert getattr(package, name) is getattr(module, name), name
    file = importlib.import_module("lookup.shortener.blocklist.file")
    assert (FileBlocklistSource, TEMPLATE) == (file.FileBlocklistSource, file.TEMPLATE)


def test_no_module_of_lookup_or_the_dashboard_imports_an_old_path() -> None:
    """Inside ``lookup/`` and ``app/`` the backends are imported from the seam's package
    (the old paths are for notebooks and outside code, for one release)."""
    moved = set(BLOCKLIST_MODULE["lookup.shortener.blocklist.file"])
    bad = []
    for path in sorted([*(ROOT / "lookup").rglob("*.py"), *(ROOT / "app").rglob("*.py")]):
        rel = path.relative_to(ROOT).as_posix()
        if rel == "lookup/shortener/blocklist_pg.py":
            continue
        for node in ast.walk(parse_file(path)):
            if not isinstance(node, ast.ImportFrom):
                continue
            names = {a.name for a in node.names}
            if node.module == "lookup.shortener.blocklist_pg" or (
                node.module == "lookup.shortener.blocklist" and names & moved
            ):
                bad.append(f"{rel}:{node.lineno} from {node.module} import {sorted(names)}")
    assert not bad, "\n".join(bad)
