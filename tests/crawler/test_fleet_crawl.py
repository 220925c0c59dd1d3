"""Two and three fleet workers crawl the sandbox: as polite as one process, across processes.

Each worker is its own ``lookup crawl-worker`` process over one throw-away PostgreSQL
store and one throw-away etcd; the sandbox's own request log is the judge.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lookup.crawler import Sandbox
from lookup.kit.etcd import EtcdServer
from tests.crawler.conftest import HOST_BUDGET
from tests.crawler.fleet_support import (
    answered_twice,
    crawl_command,
    etcd_server,
    fleet_sandbox,
    open_urls,
    originals_after_a_copy,
    overlaps,
    robots_violations,
    start_fleet,
    too_close,
    two_owners,
)


@pytest.fixture(scope="module")
def web() -> Iterator[Sandbox]:
    sandbox = Sandbox(fleet_sandbox()).start()
    try:
        yield sandbox
    finally:
        sandbox.stop()


@pytest.fixture
def etcd() -> Iterator[EtcdServer]:
    yield from etcd_server()


@pytest.mark.parametrize("workers", [2, 3])
def test_a_fleet_crawls_the_sandbox_as_politely_as_one_process(
    workers: int, web: Sandbox, postgres_db: str, etcd: EtcdServer, tmp_path: Path
) -> None:
    web.log.clear()
    out = tmp_path / "fleet"
    if workers == 2:  # the command a person runs: `lookup crawl --store … --workers 2`
        run, codes = crawl_command(web, postgres_db, etcd.url, out, workers)
        assert (out / "events.jsonl").stat().st_size > 0  # it exported the fleet's events
    else:  # the workers one by one (`lookup crawl-worker`), as on separate machines
        run = start_fleet(web, postgres_db, etcd.url, out, workers)
        try:
            codes = run.wait_done()
        finally:
            run.fleet.stop()
    assert set(codes.values()) == {0}, [run.fleet.log_text(n)[-2000:] for n in codes]
    log = run.log()
    manifest = web.manifest()
    assert len(log) > 100
    assert overlaps(log) == []
    assert too_close(log, manifest) == []
    assert robots_violations(log, manifest) == []
    assert answered_twice(log, manifest, run.retried()) == {}
    for trap in manifest["traps"]:  # the host budget holds across workers
        pages = {e.target for e in log if e.host == trap["host"] and e.path != "/robots.txt"}
        assert len(pages) <= HOST_BUDGET, trap
    with run.reader() as r:
        assert open_urls(r) == []  # everything reachable was crawled
        assert two_owners(r) == []
        assert originals_after_a_copy(r) == []  # one duplicate memory across the workers
        assert r.count_outcomes().get("crawler-error", 0) == 0
        # The work was shared: every worker fetched, under partitions granted to it.
        fetched_by = {f[3] for f in r.fleet_fetches()}
        assert fetched_by == set(codes)
    for name in codes:
        assert "done" in run.fleet.log_text(name), name
