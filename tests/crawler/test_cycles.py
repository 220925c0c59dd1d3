"""Crawl cycles: each host's page budget is per cycle, durable across a restart within one,
renewed by the next; and the frontier's own ready times, as a dashboard reads them."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

from lookup.crawler import Crawler, CrawlProgress, Sandbox, TrapPolicy, crawl
from lookup.crawler.sandbox import LoggedRequest
from lookup.crawler.session import read_snapshot
from tests.crawler.conftest import request_url, test_config

BUDGET = 8
CALENDAR = "calendar.sandbox.test"


def _config(out: Path, web: Sandbox, **overrides: Any):  # type: ignore[no-untyped-def]
    """A crawl of the infinite calendar alone: only its budget stops it."""
    settings: dict[str, Any] = dict(
        seeds=[web.url("calendar", "/")], traps=TrapPolicy(host_budget=BUDGET, max_depth=100)
    )
    settings.update(overrides)
    return test_config(out, web, **settings)


def _pages(entries: list[LoggedRequest]) -> list[str]:
    """Page requests to the calendar (not its robots.txt, not the soft-404 probe, not the
    ``/sitemap.xml`` tried because robots.txt names none: no page of the budget)."""
    return [
        request_url(e)
        for e in entries
        if e.host == CALENDAR
        and e.path not in ("/robots.txt", "/sitemap.xml")
        and "/lookupbot-probe-" not in e.path
    ]


def _db(out: Path) -> sqlite3.Connection:
    db = sqlite3.connect(out / "crawl.sqlite")
    db.row_factory = sqlite3.Row
    return db


def _used(out: Path) -> dict[int, int]:
    db = _db(out)
    try:
        return {
            r["cycle"]: r["admitted"]
            for r in db.execute(
                "SELECT cycle, admitted FROM host_budget WHERE host LIKE ?", (CALENDAR + "%",)
            )  # fmt: skip
        }
    finally:
        db.close()


def test_the_budget_survives_a_restart_and_a_new_cycle_renews_it(
    web: Sandbox, tmp_path: Path
) -> None:
    out = tmp_path / "c"
    since = len(web.log)
    first = crawl(_config(out, web, max_pages=1))
    assert first.stop_reason == "max-pages" and first.cycle == 1
    assert 0 < _used(out)[1] < BUDGET  # some of the budget spent, not all

    # Resumed within the cycle: the budget counts on from where it was, not from zero.
    second = crawl(_config(out, web, resume=True))
    assert second.stop_reason == "done" and second.cycle == 1
    assert _used(out) == {1: BUDGET}
    cycle1 = _pages(web.log.entries(since))
    assert len(cycle1) == len(set(cycle1)) <= BUDGET
    db = _db(out)
    try:
        deferred = {r["url"] for r in db.execute(
            "SELECT url FROM urls WHERE outcome = 'trap:host-budget'")}  # fmt: skip
        assert deferred and all("deferred to the next cycle" in r["reason"] for r in db.execute(
            "SELECT reason FROM urls WHERE outcome = 'trap:host-budget'"))  # fmt: skip
    finally:
        db.close()

    # A new cycle: a fresh budget, spent first on the URLs the last one deferred.
    since2 = len(web.log)
    third = crawl(_config(out, web, resume=True, new_cycle=True))
    assert third.cycle == 2 and third.stop_reason == "done"
    assert _used(out) == {1: BUDGET, 2: BUDGET}
    cycle2 = _pages(web.log.entries(since2))
    assert len(cycle2) == len(set(cycle2)) <= BUDGET
    assert not set(cycle2) & set(cycle1)  # nothing fetched in cycle 1 is fetched again
    db = _db(out)
    try:
        cycles = [(r["n"], r["reason"]) for r in db.execute("SELECT n, reason FROM cycles")]
        readmitted = {r["url"] for r in db.execute(
            "SELECT url FROM urls WHERE cycle = 2 AND state = 'done'")}  # fmt: skip
    finally:
        db.close()
    assert cycles == [(1, "start"), (2, "new-cycle")]
    assert readmitted & deferred  # deferred in cycle 1, fetched in cycle 2
    snap = read_snapshot(out)
    assert (snap.cycle, snap.cycles, snap.host_budget) == (2, 2, BUDGET)
    assert next(h for h in snap.hosts if h.host.startswith(CALENDAR)).budget_used == BUDGET


def test_cycles_roll_over_in_time_while_recrawling(web: Sandbox, tmp_path: Path) -> None:
    out = tmp_path / "r"
    since = len(web.log)
    budget = 5
    report = crawl(
        _config(
            out, web, traps=TrapPolicy(host_budget=budget, max_depth=100), recrawl=True,
            recrawl_initial=0.4, recrawl_min=0.2, recrawl_max=1.0, cycle_seconds=1.0,
            max_seconds=3.5,
        )
    )  # fmt: skip
    assert report.stop_reason == "max-seconds"
    db = _db(out)
    try:
        cycles = [(r["n"], r["reason"]) for r in db.execute("SELECT n, reason FROM cycles")]
        per_cycle = dict(db.execute("SELECT cycle, admitted FROM host_budget"))
    finally:
        db.close()
    assert len(cycles) >= 2 and {r for _, r in cycles[1:]} == {"time"}
    assert report.cycle == len(cycles)
    # Never more than the budget admitted in one cycle ...
    assert per_cycle and all(n <= budget for n in per_cycle.values())
    # ... so the server saw at most one budget of pages per cycle, and more than one in all.
    pages = _pages(web.log.entries(since))
    assert budget < len(pages) <= budget * len(cycles)


def test_the_state_shows_the_frontiers_own_ready_times(web: Sandbox, tmp_path: Path) -> None:
    out = tmp_path / "s"
    samples: list[tuple[CrawlProgress, Any]] = []
    config = _config(
        out, web, seeds=web.seeds(), min_delay=0.2, max_seconds=2.5, progress_interval=0.25,
        traps=TrapPolicy(host_budget=20, max_depth=5),
        progress=lambda p: samples.append((p, read_snapshot(out))),
    )  # fmt: skip
    asyncio.run(Crawler(config).run())
    assert len(samples) >= 4
    waiting = 0
    for progress, snap in samples:
        frontier = {h["host"]: h for h in progress.hosts}
        assert set(frontier) == {h.host for h in snap.hosts}
        for h in snap.hosts:
            mine = frontier[h.host]
            # The store holds what the frontier held when the sample was taken.
            assert h.next_allowed_at is None or abs(h.next_allowed_at - mine["ready_at"]) < 0.01
            if h.next_allowed_at is not None and not mine["in_flight"]:
                waiting += h.wait(snap.at) > 0
    assert waiting > 0  # hosts were seen waiting out their pauses
