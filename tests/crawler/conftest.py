"""Fixtures for the crawler tests: a small sandbox web and one crawl of it."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lookup.crawler import CrawlConfig, CrawlReport, Sandbox, SandboxConfig, TrapPolicy, crawl
from lookup.crawler.sandbox import LoggedRequest

#: Politeness and limits used by the crawl tests: tiny delays so the suite is fast.
MIN_DELAY = 0.01
DELAY_FACTOR = 2.0
HOST_BUDGET = 60
MAX_BYTES = 256 * 1024
TIMEOUT = 1.0


def test_config(out: Path, web: Sandbox, **overrides: Any) -> CrawlConfig:
    """A crawl config for ``web`` with the test politeness settings."""
    base: dict[str, Any] = dict(
        seeds=web.seeds(),
        hosts=web.hosts(),
        strict_hosts=True,
        min_delay=MIN_DELAY,
        delay_factor=DELAY_FACTOR,
        timeout=TIMEOUT,
        connect_timeout=1.0,
        max_bytes=MAX_BYTES,
        robots_retry=600.0,
        traps=TrapPolicy(host_budget=HOST_BUDGET, max_depth=10),
        concurrency=32,
        ca_bundle=web.ca_path if web.tls_port else None,  # trust the sandbox's own CA
    )
    base.update(overrides)
    return CrawlConfig(out, **base)


test_config.__test__ = False  # type: ignore[attr-defined]  # a helper, not a test


@dataclass
class CrawlRun:
    """One crawl of a sandbox and everything a test judges it by."""

    web: Sandbox
    manifest: dict[str, Any]
    out: Path
    report: CrawlReport
    log: list[LoggedRequest]
    db: sqlite3.Connection

    def rows(self, sql: str, *args: Any) -> list[sqlite3.Row]:
        return self.db.execute(sql, args).fetchall()

    def url_row(self, url: str) -> sqlite3.Row | None:
        return self.db.execute("SELECT * FROM urls WHERE url = ?", (url,)).fetchone()

    def requested(self) -> set[str]:
        """Every URL the sandbox was asked for (scheme://host:port/target)."""
        return {request_url(e) for e in self.log}


def request_url(e: LoggedRequest) -> str:
    """The URL of one logged request, as the crawler spelled it (before normalising)."""
    return f"{e.scheme}://{e.host}:{e.port}{e.target}"


@pytest.fixture(scope="module")
def web() -> Iterator[Sandbox]:
    sandbox = Sandbox(SandboxConfig.small()).start()
    try:
        yield sandbox
    finally:
        sandbox.stop()


@pytest.fixture(scope="module")
def crawl_run(web: Sandbox, tmp_path_factory: pytest.TempPathFactory) -> Iterator[CrawlRun]:
    """A full crawl of the small sandbox, run once per test module."""
    out = tmp_path_factory.mktemp("crawl")
    web.log.clear()
    report = crawl(test_config(out, web))
    db = sqlite3.connect(out / "crawl.sqlite")
    db.row_factory = sqlite3.Row
    try:
        yield CrawlRun(web, web.manifest(), out, report, web.log.entries(), db)
    finally:
        db.close()
