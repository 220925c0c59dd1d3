"""The default crawl shows every kind of host within its first 30 seconds, politely.

The README's example, the command ``lookup sandbox`` prints and the crawler page's
default is a 30-second crawl of the sandbox web at its real size (sixty documentation
pages behind a one-second Crawl-delay). Run exactly that command — ``lookup crawl
--sandbox PORT --out DIR --max-seconds 30`` with the command's own politeness
defaults — against a full-size sandbox, then judge it from the sandbox's request log:
every host was reached, each lesson the crawler page advertises (mirrors, traps,
session ids, soft 404s, failing robots.txt, near-duplicates) shows in the crawl,
and no host or address was asked faster than its rule.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from lookup.crawler import Sandbox, SandboxConfig
from lookup.crawler.sandbox import LoggedRequest
from lookup.crawler.session import politeness_gaps

#: The crawl's length: the page's default, the README's example.
SECONDS = 30
#: ``lookup crawl``'s own defaults (the test passes none of its own).
CLI_MIN_DELAY = 1.0


@dataclass
class FirstCrawl:
    web: Sandbox
    manifest: dict[str, Any]
    log: list[LoggedRequest]
    db: sqlite3.Connection
    output: str

    def rows(self, sql: str, *args: Any) -> list[sqlite3.Row]:
        return self.db.execute(sql, args).fetchall()


@pytest.fixture(scope="module")
def first(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FirstCrawl]:
    web = Sandbox(SandboxConfig(port=0)).start()  # the real size, the real Crawl-delay
    out = tmp_path_factory.mktemp("first") / "crawl"
    try:
        argv = [sys.executable, "-m", "lookup.cli", "crawl", "--sandbox", str(web.port)]
        argv += ["--out", str(out), "--max-seconds", str(SECONDS), "--quiet"]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=SECONDS + 90)
        assert done.returncode == 0, done.stderr
        log = [e for e in web.log.entries(0) if e.host.endswith(".sandbox.test")]
        db = sqlite3.connect(out / "crawl.sqlite")
        db.row_factory = sqlite3.Row
        try:
            yield FirstCrawl(web, web.manifest(), log, db, done.stdout)
        finally:
            db.close()
    finally:
        web.stop()


def test_the_crawl_was_the_default_one(first: FirstCrawl) -> None:
    assert f"after {SECONDS}." in first.output.splitlines()[0]  # it ran its 30 s, no less
    assert first.manifest["robots"]["crawl_delay"][first.web.world.names["docs"]] == 1.0


def test_every_host_was_reached(first: FirstCrawl) -> None:
    asked = {e.host for e in first.log}
    assert asked == {h["name"] for h in first.manifest["hosts"]}
    start = min(e.start for e in first.log)
    late = {host: min(e.start for e in first.log if e.host == host) - start for host in asked}
    # The old single seed met the other hosts only after ~95 s; now the hub fans out at once.
    print(f"the last host was first asked {max(late.values()):.1f} s into the crawl")
    assert max(late.values()) < SECONDS / 2, late


def test_each_advertised_lesson_shows(first: FirstCrawl) -> None:
    names = first.web.world.names
    dups = first.rows("SELECT url, dup_of, dup_kind FROM urls WHERE dup_kind IS NOT NULL")
    kinds = {r["dup_kind"] for r in dups}
    assert "exact" in kinds and kinds & {"simhash", "minhash"}, kinds  # duplicates, near ones
    mirror = f"//{names['mirror']}:{first.web.port}/"
    # a mirror: its pages and the docs' are one page twice (whichever was fetched first)
    assert any(
        r["dup_kind"] == "exact" and (mirror in r["url"] or mirror in (r["dup_of"] or ""))
        for r in dups
    )
    cuts = {(r["host"].split(":")[0], r["rule"]) for r in first.rows("SELECT host, rule FROM cuts")}
    assert (names["shop"], "session-param") in cuts  # session ids
    assert any(host == names["calendar"] for host, _ in cuts), cuts  # the calendar's traps
    soft = first.rows("SELECT DISTINCT host FROM fetches WHERE outcome = 'soft-404'")
    assert soft  # soft 404s
    states = {
        r["host"].split(":")[0]: r["robots_state"]
        for r in first.rows("SELECT host, robots_state FROM hosts")
    }
    for host in first.manifest["robots"]["failing_hosts"]:  # failing robots.txt
        assert states[host] == "disallow-all"
    blocked = first.rows("SELECT count(*) FROM urls WHERE outcome = 'robots-disallowed'")
    assert blocked[0][0] > 0  # URLs robots.txt kept the crawler from


def test_no_host_was_asked_faster_than_its_rule(first: FirstCrawl) -> None:
    delays = first.manifest["robots"]["crawl_delay"]
    for by in ("host", "address"):
        gaps = politeness_gaps(
            first.log, min_delay=CLI_MIN_DELAY, delay_factor=0.0, crawl_delays=delays, by=by
        )
        assert sum(g.violations for g in gaps) == 0, [g for g in gaps if g.violations]
        assert sum(g.requests for g in gaps) == len(first.log)
    # Crawl-delay 1 on docs: about one page a second there, never more.
    docs = [e for e in first.log if e.host == first.web.world.names["docs"]]
    assert len(docs) <= SECONDS + 2


def test_robots_came_first_and_was_obeyed(first: FirstCrawl) -> None:
    by_host: dict[str, list[LoggedRequest]] = {}
    for e in sorted(first.log, key=lambda e: e.start):
        by_host.setdefault(f"{e.scheme}:{e.host}", []).append(e)
    for requests in by_host.values():
        assert requests[0].path == "/robots.txt"
    for host in first.manifest["robots"]["failing_hosts"]:
        assert {e.path for e in first.log if e.host == host} == {"/robots.txt"}
    asked = {f"{e.scheme}://{e.host}:{e.port}{e.target}" for e in first.log}
    assert not asked & set(first.manifest["robots"]["disallowed"])
