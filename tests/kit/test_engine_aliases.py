"""The kit's engine plumbing lives in ``lookup/kit/engines/``: the old module paths still
give the very same objects for one release, nothing in ``lookup/`` uses them, and the
package knows no domain."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from tests.aliases import check_alias
from tests.sourcetree import parse_file

ROOT = Path(__file__).resolve().parents[2]
_E = "lookup.kit.engines"

OLD_TO_NEW = {
    "lookup.kit.ports": {
        f"{_E}.ports": ("BUS_OFFSET", "BUS_PORT_RANGE", "PORT_RANGE", "free_port", "port_free")
    },
    "lookup.kit.storeurl": {
        f"{_E}.storeurl": ("StoreUrl", "parse_store_url", "spellings", "sqlite_url")
    },
    "lookup.kit.dialects": {
        f"{_E}.dialects": (
            "ENGINES",
            "Connection",
            "Cursor",
            "Engine",
            "SqlDialect",
            "bind_placeholders",
            "executemany",
            "json_array",
        )
    },
    "lookup.kit.sqlite": {
        f"{_E}.sqlite": (
            "STORE_ERRORS",
            "SYNCHRONOUS_LEVELS",
            "ConnectionPool",
            "busy_error",
            "connect",
            "is_read_only_error",
        )
    },
    "lookup.kit.dblock": {f"{_E}.sqlitewriter": ("WalCheckpointer", "writer_lock")},
    "lookup.kit.postgres": {
        f"{_E}.postgres": (
            "CONNECT_TIMEOUT_S",
            "POOL_TIMEOUT_S",
            "PgPool",
            "connect",
            "describe_url",
            "ensure_schema",
            "unavailable",
        )
    },
    "lookup.kit.pgserver": {
        f"{_E}.pgserver": ("PostgresServer", "postgres_available", "postgres_bin")
    },
    "lookup.kit.redisclient": {
        f"{_E}.redis": ("UNAVAILABLE", "describe_redis_url", "redis_client")
    },
    "lookup.kit.redisserver": {f"{_E}.redisserver": ("RedisServer", "redis_available")},
    "lookup.kit.rediscluster": {
        f"{_E}.rediscluster": ("SLOTS", "ClusterNode", "RedisCluster", "cluster_available")
    },
    "lookup.kit.etcd": {
        f"{_E}.etcdserver": ("EtcdServer", "etcd_available"),
        f"{_E}.etcd": ("etcd_client",),
    },
    "lookup.kit.etcdlease": {f"{_E}.etcdlease": ("KeptLease",)},
}

#: What a module of the engine package may import from ``lookup``: no system, no seam.
ENGINE_MAY_IMPORT = ("lookup.settings", "lookup.errors", "lookup.kit.lazy", _E)


@pytest.mark.parametrize("old", sorted(OLD_TO_NEW))
def test_an_old_path_gives_the_new_objects(old: str) -> None:
    check_alias(old, OLD_TO_NEW[old])


def test_the_package_names_resolve() -> None:
    package = importlib.import_module(_E)
    missing = [name for name in package.__all__ if getattr(package, name, None) is None]
    assert not missing, missing


def test_no_module_of_lookup_imports_an_old_path() -> None:
    """Inside ``lookup/`` the engines are imported from :mod:`lookup.kit.engines` (the
    aliases are for notebooks, tests and outside code, for one release)."""
    bad = []
    for path in sorted((ROOT / "lookup").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.removesuffix(".py").replace("/", ".") in OLD_TO_NEW:
            continue
        for node in ast.walk(parse_file(path)):
            if isinstance(node, ast.ImportFrom) and node.module in OLD_TO_NEW:
                bad.append(f"{rel}:{node.lineno} from {node.module}")
            elif isinstance(node, ast.ImportFrom) and node.module == "lookup.kit":
                names = {f"lookup.kit.{a.name}" for a in node.names}
                bad.extend(f"{rel}:{node.lineno} import {n}" for n in sorted(names & {*OLD_TO_NEW}))
    assert not bad, "\n".join(bad)


def test_the_engine_package_knows_no_domain() -> None:
    """``lookup/kit/engines/`` imports nothing of ``lookup`` but settings, errors, the lazy
    re-exports and itself: no system, no seam, no other kit module."""
    bad = []
    for path in sorted((ROOT / "lookup/kit/engines").rglob("*.py")):
        for node in ast.walk(parse_file(path)):
            if isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                modules = [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            bad.extend(
                f"{path.relative_to(ROOT)}:{node.lineno} imports {m}"
                for m in modules
                if m.split(".")[0] == "lookup"
                and not any(m == ok or m.startswith(ok + ".") for ok in ENGINE_MAY_IMPORT)
            )
    assert not bad, "\n".join(bad)
