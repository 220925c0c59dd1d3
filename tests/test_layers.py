"""The layer rules of docs/ARCHITECTURE.md, checked over the source tree.

- ``lookup/kit`` (with ``lookup.settings`` and ``lookup.errors``) imports no system;
- a system (shortener, typeahead, geo, crawler, search) imports ``kit``, ``settings``,
  ``errors`` and itself — never another system, the edge (``server``, ``cli``,
  ``launcher``, ``fleet``), the dashboard, Streamlit or Jupyter;
- nothing in ``lookup/`` imports Streamlit or Jupyter;
- only ``lookup/settings/`` reads the environment;
- only the engine package (``lookup/kit/engines/``) and store modules import a database
  driver (``sqlite3``, ``psycopg``, ``redis``);
- no module of ``lookup/`` or of the dashboard (``app/``) is over 900 lines.

Imports are read from the syntax tree, function-level imports included, so a lazy
import cannot hide a dependency.
"""

from __future__ import annotations

import ast
import graphlib
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from tests.sourcetree import parse_file

ROOT = Path(__file__).resolve().parents[1]
SYSTEMS = ("shortener", "typeahead", "geo", "crawler", "search")
#: The consumers: they may import every system; no system, block or kit module imports them.
#: ``lookup.study`` (the question bank and its checkers) runs every system's real code.
EDGE = (
    "lookup.server",
    "lookup.cli",
    "lookup.launcher",
    "lookup.fleet",
    "lookup.labs",  # the dashboard's labs: the processes its pages run (issue 23)
    "lookup.capacity.cli",
    "lookup.study",
)
FOUNDATION = ("lookup.kit", "lookup.settings", "lookup.errors")
UI = ("streamlit", "app", "IPython", "ipykernel", "jupyter", "nbformat", "nbclient")

#: The package that talks to the engines (connections, clients, servers): any module of it
#: may import a driver; it knows no domain.
ENGINE_PACKAGE = "lookup/kit/engines/"
#: The other modules that may open a database (the implementations of the seams).
STORE_MODULES = {
    "lookup/kit/idblocks/sqlite.py",  # the id allocator's row next to the links
    "lookup/kit/idblocks/postgres.py",  # the fleet's id_blocks row on PostgreSQL
    "lookup/kit/secrets/postgres.py",  # the fleet's shared secrets on PostgreSQL
    "lookup/kit/ratelimit/redis_store.py",  # the shared limiter's Lua scripts on Redis
    "lookup/kit/sharedcache/redis.py",  # the shared cache tier on Redis
    "lookup/kit/versionstore/postgres.py",  # versions as chunks and pointer rows on PostgreSQL
    "lookup/shortener/analytics/clicklog/redis.py",  # the click stream on Redis Streams
    "lookup/typeahead/searchfeed/redis.py",  # submitted searches on a Redis Stream
    "lookup/typeahead/searchfeed/trending_redis.py",  # the fleet's trending windows
    "lookup/blocks/ids/locality.py",  # the index-locality experiment's own B-trees
    "lookup/blocks/cache/store.py",  # the cache experiments' source of truth (SQLite)
    "lookup/blocks/cache/tier.py",  # the cache tier on standalone redis-servers
    "lookup/blocks/cache/cluster.py",  # redis-py's cluster client for the failover drill
    "lookup/shortener/links/sqlite.py",  # the link store's backends (links/sql.py: no driver)
    "lookup/shortener/links/postgres.py",
    "lookup/shortener/blocklist/postgres.py",  # the fleet's domain blocklist on PostgreSQL
    "lookup/kit/leadership/postgres.py",  # leader election by an advisory lock on PostgreSQL
    "lookup/shortener/analytics/clicklog/sqlite.py",  # (clicklog/memory.py: no driver)
    "lookup/shortener/analytics/clickcounts/sqlite.py",  # (clickcounts/sql.py: no driver)
    "lookup/shortener/analytics/clickcounts/postgres.py",
    "lookup/shortener/webhooks/sqlite.py",  # webhook endpoints, outbox, deliveries
    "lookup/shortener/webhooks/postgres.py",
    "lookup/geo/places/sqlite.py",  # the places store's backends (places/sql.py: no driver)
    "lookup/geo/places/postgres.py",  # the fleet's places database on PostgreSQL + PostGIS
    "lookup/geo/postgis.py",  # PostGIS as the places search's oracle and planner (ST_DWithin, KNN)
    "lookup/geo/reviewstore.py",  # the reviews tables, written in the place store's transaction
    "lookup/crawler/state/sqlite.py",  # the crawl state's backends (state/sql.py: no driver)
    "lookup/crawler/state/postgres.py",  # the crawler fleet's shared state on PostgreSQL
}


def _sources(*dirs: str) -> list[Path]:
    return sorted(p for d in dirs for p in (ROOT / d).rglob("*.py"))


def _imports(path: Path) -> list[str]:
    """Every module name ``path`` imports (absolute; relative ones resolved)."""
    tree = parse_file(path)
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            names.append(module)
            names.extend(f"{module}.{alias.name}" for alias in node.names)
    return names


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_kit_imports_no_system() -> None:
    bad = []
    for path in _sources("lookup/kit", "lookup/settings") + [ROOT / "lookup/errors.py"]:
        for name in _imports(path):
            if _within(name, tuple(f"lookup.{s}" for s in (*SYSTEMS, "blocks")) + EDGE):
                bad.append(f"{_rel(path)} imports {name}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("system", (*SYSTEMS, "blocks"))
def test_a_system_imports_only_kit_and_itself(system: str) -> None:
    others = tuple(f"lookup.{s}" for s in SYSTEMS if s != system)
    bad = []
    for path in _sources(f"lookup/{system}"):
        for name in _imports(path):
            if _within(name, others + EDGE + UI):
                bad.append(f"{_rel(path)} imports {name}")
    assert not bad, "\n".join(bad)


#: What the dashboard may not import: it owns no process. Its pages start, find and stop
#: the servers, fleets and builds they run through ``lookup.labs`` (one supervisor per
#: dashboard process, every lab stopped at exit); these are the launchers behind it.
DASHBOARD_FORBIDDEN = (
    "subprocess",
    "multiprocessing",
    "lookup.kit.engines.pgserver",
    "lookup.kit.engines.redisserver",
    "lookup.kit.engines.rediscluster",
    "lookup.kit.engines.etcdserver",
    "lookup.kit.engines.launch",
    "lookup.kit.pgserver",  # the old paths of the same launchers
    "lookup.kit.redisserver",
    "lookup.kit.rediscluster",
    "lookup.kit.etcd",
    "lookup.blocks.ids.etcd",
    "lookup.blocks.ids.fleet",  # GeneratorFleet: etcd and generator processes
    "lookup.blocks.ids.drill",
    "lookup.blocks.kv.cluster",  # KvCluster: the storage-node processes
    "lookup.crawler.fleet",  # CrawlFleet: crawl-worker processes
    "lookup.crawler.session.SandboxProcess",  # ``lookup sandbox`` as a child
    "lookup.crawler.sandbox.Sandbox",  # a sandbox web served in this process
    "lookup.crawler.Sandbox",
    "lookup.fleet",  # ServingFleet (its client half: lookup.labs.serving)
    "lookup.launcher",  # ``lookup up``
)


def test_the_dashboard_starts_no_process_itself() -> None:
    bad = [
        f"{_rel(path)} imports {name}"
        for path in _sources("app")
        for name in _imports(path)
        if _within(name, DASHBOARD_FORBIDDEN)
    ]
    assert not bad, "pages call lookup.labs, they own no process:\n" + "\n".join(bad)


def test_lookup_never_imports_the_dashboard_or_jupyter() -> None:
    bad = [
        f"{_rel(path)} imports {name}"
        for path in _sources("lookup")
        for name in _imports(path)
        if _within(name, UI)
    ]
    assert not bad, "\n".join(bad)


def test_only_settings_reads_the_environment() -> None:
    bad = []
    for path in _sources("lookup", "app"):
        if _rel(path).startswith("lookup/settings/"):
            continue
        tree = parse_file(path)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "environb"):
                if isinstance(node.value, ast.Name) and node.value.id == "os":
                    bad.append(f"{_rel(path)}:{node.lineno} os.{node.attr}")
            if isinstance(node, ast.ImportFrom) and node.module == "os":
                if any(a.name in ("environ", "getenv") for a in node.names):
                    bad.append(f"{_rel(path)}:{node.lineno} from os import ...")
    assert not bad, "read the environment through lookup.settings:\n" + "\n".join(bad)


def test_only_store_modules_open_a_database() -> None:
    bad = [
        f"{_rel(path)} imports {name}"
        for path in _sources("lookup", "app")
        if _rel(path) not in STORE_MODULES and not _rel(path).startswith(ENGINE_PACKAGE)
        for name in _imports(path)
        if _within(name, ("sqlite3", "psycopg", "psycopg_pool", "redis"))
    ]
    assert not bad, "drivers only in kit/engines/ and store modules:\n" + "\n".join(bad)


#: The longest a module of ``lookup/`` or of the dashboard (``app/``) may be.
MAX_LINES = 900


def test_no_module_of_lookup_or_the_dashboard_is_over_900_lines() -> None:
    long = {
        _rel(p): n
        for p in _sources("lookup", "app")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, (
        f"Modules over {MAX_LINES} lines — split each into modules named in the domain's "
        "vocabulary (a dashboard page into panels under app/ that it imports):\n"
        + "\n".join(f"  {path}: {n:,} lines" for path, n in sorted(long.items()))
    )


@pytest.mark.parametrize("system", SYSTEMS)
def test_every_public_name_of_a_system_resolves(system: str) -> None:
    package = importlib.import_module(f"lookup.{system}")
    missing = [name for name in package.__all__ if not hasattr(package, name)]
    assert not missing, missing


@pytest.mark.parametrize(
    ("module", "heavy"),
    [
        ("lookup.shortener.keys", ("fastapi", "starlette", "segno", "datasketch", "numpy")),
        ("lookup.typeahead.normalize", ("fastapi", "numpy", "pyarrow")),
        ("lookup.search.analysis", ("fastapi", "numpy")),
        ("lookup.crawler.dedup", ("fastapi", "uvicorn", "httpx", "lookup.crawler.sandbox")),
        ("lookup.kit.urlnorm", ("fastapi", "numpy", "httpx")),
    ],
)
def test_a_light_module_imports_light(module: str, heavy: tuple[str, ...]) -> None:
    """Package ``__init__`` files re-export lazily: one module never drags in the stack."""
    code = f"import sys, {module}\nprint(','.join(m for m in {heavy!r} if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "", f"importing {module} loaded {out.stdout.strip()}"


def _runtime_imports(path: Path) -> set[str]:
    """The modules of ``lookup`` that ``path`` imports when it runs (function-level
    imports included, ``if TYPE_CHECKING:`` blocks left out), as module names."""
    tree = parse_file(path)
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            node.body = []
    names: set[str] = set()
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            module = ".".join([*base, node.module or ""]) if node.level else node.module or ""
            # ``from a.b import c`` needs a.b.c when c is a module, else a.b (module_of)
            names.update(f"{module.rstrip('.')}.{alias.name}" for alias in node.names)
    return names


def test_no_import_cycle_in_lookup() -> None:
    """No two modules of ``lookup/`` import each other, however indirectly — lazy imports
    included: a seam's factory names its adapters in a registry (``kit/registry.py``)
    instead of importing the modules that import it back."""
    modules = {
        ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p
        for p in _sources("lookup")
    }

    def module_of(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph = {
        m: {d for n in _runtime_imports(p) if (d := module_of(n)) not in (None, m)}
        for m, p in modules.items()
    }
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as exc:
        pytest.fail(f"an import cycle in lookup/: {' → '.join(exc.args[1])}")


def _registries() -> dict[str, dict[str, str]]:
    """Every seam registry in ``lookup/``: a module-level ``BACKENDS`` dict of
    ``scheme → "module:Class"`` strings, by the module holding it."""
    found: dict[str, dict[str, str]] = {}
    for path in _sources("lookup"):
        for node in parse_file(path).body:
            target = node.target if isinstance(node, ast.AnnAssign) else None
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
            if not (isinstance(target, ast.Name) and target.id == "BACKENDS"):
                continue
            value = ast.literal_eval(node.value) if node.value is not None else None
            if isinstance(value, dict) and all(":" in v for v in value.values()):
                found[_rel(path)] = value
    return found


def test_a_seam_port_imports_none_of_its_adapters() -> None:
    """A seam's port names its adapters in ``BACKENDS`` and imports none of them, not even
    lazily: the registry does (``kit/registry.py``), when a URL asks."""
    registries = _registries()
    assert len(registries) >= 6, sorted(registries)
    crawler_seams = {"lookup/crawler/state/__init__.py", "lookup/crawler/controls/__init__.py"}
    assert crawler_seams <= set(registries), sorted(registries)
    kit_seams = {"lookup/kit/sharedcache/__init__.py", "lookup/kit/modelstore/__init__.py"}
    assert kit_seams <= set(registries), sorted(registries)
    blocklist_seams = {
        "lookup/shortener/blocklist/__init__.py",
        "lookup/typeahead/blocklist/__init__.py",
    }
    assert blocklist_seams <= set(registries), sorted(registries)
    bad = [
        f"{port} imports {adapter}"
        for port, backends in registries.items()
        for adapter in (v.partition(":")[0] for v in backends.values())
        if any(_within(name, (adapter,)) for name in _imports(ROOT / port))
    ]
    assert not bad, "\n".join(bad)
