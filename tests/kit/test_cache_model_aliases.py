"""The old import paths of the shared cache and the model store (``lookup.kit.cache``,
``cache_redis``, ``models``) still give the same objects as the seams' packages
(``lookup.kit.sharedcache``, ``lookup.kit.modelstore``) for one release, for notebooks,
tests, benchmarks and outside code."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from tests.aliases import check_alias
from tests.sourcetree import parse_file

ROOT = Path(__file__).resolve().parents[2]

#: The old modules that only re-export now.
OLD_TO_NEW = {
    "lookup.kit.cache_redis": {
        "lookup.kit.sharedcache.redis": ("FILL_SCRIPT", "INVALIDATE_SCRIPT", "RedisSharedCache"),
    },
}

#: ``lookup.kit.cache`` keeps the in-process pieces (``TTLCache``, ``MISSING``,
#: single-flight); the shared cache's names moved to the seam's package.
CACHE_KEPT = ("MISSING", "AsyncSingleFlight", "SingleFlight", "TTLCache")
CACHE_MOVED = {
    "lookup.kit.sharedcache": (
        "CacheRead", "InvalidationOutbox", "SharedCache", "VersionedSharedCache",
        "open_shared_cache",
    ),
    "lookup.kit.sharedcache.memory": ("MemorySharedCache",),  # loaded on first use
    "lookup.kit.sharedcache.null": ("NullSharedCache",),  # loaded on first use
}  # fmt: skip

#: ``lookup.kit.models.ModelStore`` is the directory store, now ``FileModelStore`` (in the
#: package, ``ModelStore`` names the port).
MODELS_MOVED = {
    "lookup.kit.modelstore": {"open_model_store": "open_model_store"},
    "lookup.kit.modelstore.file": {"ModelStore": "FileModelStore"},
    "lookup.kit.modelstore.slot": {"ActiveModel": "ActiveModel", "ModelSlot": "ModelSlot"},
}

#: Modules another change is editing at the same time, still on an old path (the alias
#: keeps them working): move them to the package, then drop them from here.
NOT_YET_MOVED = {"lookup/geo/http.py"}


@pytest.mark.parametrize("old", sorted(OLD_TO_NEW))
def test_an_old_path_gives_the_new_objects(old: str) -> None:
    check_alias(old, OLD_TO_NEW[old])


def test_the_shared_cache_names_still_come_from_kit_cache() -> None:
    cache = importlib.import_module("lookup.kit.cache")
    for new, names in CACHE_MOVED.items():
        module = importlib.import_module(new)
        for name in names:
            assert getattr(cache, name) is getattr(module, name), name
    from lookup.kit.cache import MemorySharedCache, NullSharedCache  # the old spellings

    assert (MemorySharedCache.name, NullSharedCache.name) == ("memory", "none")
    lazy = {"MemorySharedCache", "NullSharedCache"}
    moved = {n for names in CACHE_MOVED.values() for n in names} - lazy
    assert sorted(cache.__all__) == sorted({*CACHE_KEPT, *moved})


def test_the_memory_tier_keeps_the_in_process_cache_of_kit_cache() -> None:
    """The memory tier is built on ``kit.cache``'s TTL LRU: one ``MISSING`` everywhere."""
    from lookup.kit.cache import MISSING
    from lookup.kit.sharedcache import memory

    assert memory.MISSING is MISSING


def test_the_model_names_still_come_from_kit_models() -> None:
    models = importlib.import_module("lookup.kit.models")
    for new, names in MODELS_MOVED.items():
        module = importlib.import_module(new)
        for old_name, new_name in names.items():
            assert getattr(models, old_name) is getattr(module, new_name), old_name
    assert sorted(models.__all__) == sorted(n for ns in MODELS_MOVED.values() for n in ns)


def test_the_old_model_store_still_opens_a_directory(tmp_path: Path) -> None:
    from lookup.kit.models import ModelStore  # the spelling the notebooks and tests use
    from lookup.kit.modelstore import ModelStore as Port

    store = ModelStore(tmp_path / "models")
    assert isinstance(store, Port) and store.names() == []


def test_no_module_of_lookup_or_the_dashboard_imports_an_old_path() -> None:
    """Inside ``lookup/`` and ``app/`` the seams are imported from their packages (the
    aliases are for notebooks and outside code, for one release)."""
    import ast

    moved_from_cache = {n for names in CACHE_MOVED.values() for n in names}
    old = {*OLD_TO_NEW, "lookup.kit.models"}
    bad = []
    for path in sorted([*(ROOT / "lookup").rglob("*.py"), *(ROOT / "app").rglob("*.py")]):
        rel = path.relative_to(ROOT).as_posix()
        if rel.removesuffix(".py").replace("/", ".") in {*old, "lookup.kit.cache"}:
            continue
        if rel in NOT_YET_MOVED:
            continue
        for node in ast.walk(parse_file(path)):
            if not isinstance(node, ast.ImportFrom):
                continue
            names = {a.name for a in node.names}
            if node.module in old or (
                node.module == "lookup.kit.cache" and names & moved_from_cache
            ):
                bad.append(f"{rel}:{node.lineno} from {node.module} import {sorted(names)}")
    assert not bad, "\n".join(bad)
