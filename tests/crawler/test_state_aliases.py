"""The crawler's old import paths (``store``, ``store_sqlite``, ``store_pg``, ``controls``,
``controls_pg``) still give the same objects as the seams' packages for one release, for
notebooks, benchmarks and outside code."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from tests.aliases import check_alias
from tests.sourcetree import parse_file

OLD_TO_NEW = {
    "lookup.crawler.store": {
        "lookup.crawler.state": (
            "ANSWER_FAILURES", "HOST_COUNTERS", "STATE_FILE", "URL_STATES", "ContentFacts",
            "CrawlReader", "CrawlStateError", "CrawlWriter", "CutRecord", "CycleRecord",
            "FetchRecord", "FetchedUrl", "FrontierHostState", "HostCounter", "HostPause",
            "HostRecord", "PageFacts", "ProbeAnswer", "RedirectRecord", "RobotsRecord",
            "Schedule", "UrlFacts", "UrlRecord", "Validators", "crawl_state_url",
            "open_crawl_reader", "open_crawl_store",
        ),
    },
    "lookup.crawler.store_sqlite": {
        "lookup.crawler.state.sqlite": (
            "SqliteCrawlReader", "SqliteCrawlStateError", "SqliteCrawlStore",
        ),
    },
    "lookup.crawler.store_pg": {"lookup.crawler.state.postgres": ("PgCrawlReader", "PgCrawlStore")},
    "lookup.crawler.controls_pg": {
        "lookup.crawler.controls.postgres": ("PostgresCrawlControls",),
    },
}  # fmt: skip

#: ``lookup.crawler.controls`` was a module and is now the controls seam's package (a
#: package takes the name of the module it replaces): every name the module had is still
#: there, the SQLite backend's class imported on first use.
CONTROLS_MODULE = {
    "lookup.crawler.controls": (
        "COMMANDS", "CONTROLS_FILE", "MAX_DELAY_S", "Ack", "ControlCommand", "ControlError",
        "ControlRecord", "ControlState", "CrawlControls", "controls_url", "host_matches",
        "open_crawl_controls", "validate",
    ),
    "lookup.crawler.controls.sqlite": ("SqliteCrawlControls",),
}  # fmt: skip

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("old", sorted(OLD_TO_NEW))
def test_an_old_path_gives_the_new_objects(old: str) -> None:
    check_alias(old, OLD_TO_NEW[old])


def test_the_controls_package_keeps_every_name_of_the_old_module() -> None:
    from lookup.crawler.controls import SqliteCrawlControls  # the old spelling

    package = importlib.import_module("lookup.crawler.controls")
    for new, names in CONTROLS_MODULE.items():
        module = importlib.import_module(new)
        for name in names:
            assert getattr(package, name) is getattr(module, name), name
    assert SqliteCrawlControls is importlib.import_module(new).SqliteCrawlControls


def test_the_crawler_package_exports_the_new_paths() -> None:
    import lookup.crawler as crawler
    from lookup.crawler.state import CrawlReader, CrawlWriter, open_crawl_reader, open_crawl_store

    assert (crawler.CrawlReader, crawler.CrawlWriter) == (CrawlReader, CrawlWriter)
    assert crawler.open_crawl_reader is open_crawl_reader
    assert crawler.open_crawl_store is open_crawl_store


def test_no_module_of_the_crawler_or_the_dashboard_imports_an_old_path() -> None:
    """Inside ``lookup/crawler`` and ``app/`` the seams are imported from their packages
    (the aliases are for notebooks and outside code, for one release)."""
    moved = set(CONTROLS_MODULE["lookup.crawler.controls.sqlite"])
    bad = []
    for path in sorted([*(ROOT / "lookup/crawler").rglob("*.py"), *(ROOT / "app").rglob("*.py")]):
        rel = path.relative_to(ROOT).as_posix()
        if rel.removesuffix(".py").replace("/", ".") in OLD_TO_NEW:
            continue
        for node in ast.walk(parse_file(path)):
            if not isinstance(node, ast.ImportFrom):
                continue
            names = {a.name for a in node.names}
            if node.module in OLD_TO_NEW or (
                node.module == "lookup.crawler.controls" and names & moved
            ):
                bad.append(f"{rel}:{node.lineno} from {node.module} import {sorted(names)}")
    assert not bad, "\n".join(bad)
