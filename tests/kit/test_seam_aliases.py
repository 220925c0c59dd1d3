"""The old import paths of the kit's seams (secrets, id blocks, leadership) still give the
same objects as the seams' packages for one release, for notebooks and outside code."""

from __future__ import annotations

import importlib

import pytest

from tests.aliases import check_alias
from tests.sourcetree import parse_file

OLD_TO_NEW = {
    "lookup.kit.secretstore": {
        "lookup.kit.secrets": ("SecretStore", "check_name", "open_secret_store", "random_bytes"),
        "lookup.kit.secrets.file": ("FileSecretStore",),
    },
    "lookup.kit.secretstore_pg": {"lookup.kit.secrets.postgres": ("PostgresSecretStore",)},
    "lookup.kit.secretfile": {"lookup.kit.secrets.file": ("read_or_create_secret",)},
    "lookup.kit.ids_pg": {"lookup.kit.idblocks.postgres": ("PostgresIdAllocator",)},
    "lookup.kit.leader": {
        "lookup.kit.leadership": ("Leadership", "open_leadership"),
        "lookup.kit.leadership.solo": ("SoloLeadership",),
    },
    "lookup.kit.leader_pg": {"lookup.kit.leadership.postgres": ("PostgresLeadership",)},
}

#: ``lookup.kit.ids`` keeps the key permutation and base62; the allocator's names moved.
IDS_MOVED = {
    "lookup.kit.idblocks": ("IdAllocator", "IdBlock", "open_id_allocator"),
    "lookup.kit.idblocks.sqlite": ("SqliteIdAllocator",),
}


@pytest.mark.parametrize("old", sorted(OLD_TO_NEW))
def test_an_old_path_gives_the_new_objects(old: str) -> None:
    check_alias(old, OLD_TO_NEW[old])


def test_the_allocator_names_still_come_from_kit_ids() -> None:
    from lookup.kit.ids import (  # the spellings notebooks and outside code use
        IdAllocator,
        IdBlock,
        SqliteIdAllocator,
        open_id_allocator,
    )

    old = {
        "IdAllocator": IdAllocator,
        "IdBlock": IdBlock,
        "SqliteIdAllocator": SqliteIdAllocator,
        "open_id_allocator": open_id_allocator,
    }
    for new, names in IDS_MOVED.items():
        module = importlib.import_module(new)
        for name in names:
            assert old[name] is getattr(module, name), name


def test_no_module_of_lookup_imports_an_old_path() -> None:
    """Inside ``lookup/`` the seams are imported from their packages (the aliases are for
    notebooks and outside code, for one release)."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    old = {*OLD_TO_NEW, "lookup.kit.ids"}
    bad = []
    for path in sorted((root / "lookup").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.removesuffix(".py").replace("/", ".") in old:
            continue
        for node in ast.walk(parse_file(path)):
            if isinstance(node, ast.ImportFrom) and node.module in old:
                names = {a.name for a in node.names}
                moved = {n for ns in IDS_MOVED.values() for n in ns}
                if node.module != "lookup.kit.ids" or names & moved:
                    bad.append(f"{rel}:{node.lineno} from {node.module} import {sorted(names)}")
    assert not bad, "\n".join(bad)
