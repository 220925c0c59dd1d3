"""Fleet drills on real processes: kill -9, SIGSTOP past the lease, a stop and resume of
the whole fleet, and etcd away — each with a measured outcome, judged from the sandbox's
request log and the store's fencing records.

Figures go to stdout (``pytest -s``) as ``DRILL name: ...`` lines for the report.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lookup.crawler import Sandbox, normalize_url
from lookup.crawler.fleet import worker_name
from lookup.kit.etcd import EtcdServer
from tests.crawler.conftest import request_url
from tests.crawler.fleet_support import (
    TTL,
    FleetRun,
    answered_twice,
    etcd_server,
    fleet_sandbox,
    judge_outbox,
    open_urls,
    overlaps,
    robots_violations,
    start_fleet,
    too_close,
    two_owners,
    wait_for,
)

#: A robots.txt Crawl-delay on three hosts keeps the crawl going long enough to drill.
CRAWL_DELAY = 0.3


@pytest.fixture(scope="module")
def web() -> Iterator[Sandbox]:
    sandbox = Sandbox(fleet_sandbox(crawl_delay=CRAWL_DELAY)).start()
    try:
        yield sandbox
    finally:
        sandbox.stop()


@pytest.fixture
def etcd() -> Iterator[EtcdServer]:
    yield from etcd_server()


def _all_fetching(run: FleetRun, names: list[str], n: int = 3) -> bool:
    return all(run.fetches_by(w) >= n for w in names)


def _busy_worker(run: FleetRun, names: list[str]) -> str | None:
    return next((w for w in names if run.leased_of(w) > 0), None)


def _judge_clean(run: FleetRun, web: Sandbox) -> None:
    log, manifest = run.log(), web.manifest()
    assert overlaps(log) == []
    assert too_close(log, manifest) == []
    assert robots_violations(log, manifest) == []
    with run.reader() as r:
        assert open_urls(r) == []
        assert two_owners(r) == []


def _freeze_busy(run: FleetRun, names: list[str], sig: int) -> tuple[str, int, float]:
    """Signal a worker with URLs in flight; (worker, its URLs in flight, monotonic time)."""
    for _ in range(50):
        victim = wait_for("a worker with URLs in flight", lambda: _busy_worker(run, names), 60)
        run.fleet.signal(victim, sig)
        at = time.monotonic()
        if sig == signal.SIGKILL:
            run.fleet.procs[victim].wait(10)
        else:  # a commit it sent just before the stop must land before the count
            run.settle_frozen(victim)
        in_flight = run.leased_of(victim)  # frozen or dead: this stays put until takeover
        if in_flight:
            return victim, in_flight, at
        if sig == signal.SIGKILL:
            return victim, 0, at
        run.fleet.signal(victim, signal.SIGCONT)
    raise AssertionError("no worker was caught with a URL in flight")


def test_kill_9_a_worker_its_partitions_move_and_only_its_in_flight_urls_are_refetched(
    web: Sandbox, postgres_db: str, etcd: EtcdServer, tmp_path: Path
) -> None:
    web.log.clear()
    run = start_fleet(web, postgres_db, etcd.url, tmp_path / "fleet", 3)
    names = [worker_name(i) for i in (1, 2, 3)]
    try:
        run.wait_joined(names)
        wait_for("every worker fetching", lambda: _all_fetching(run, names), 90)
        victim, in_flight, killed = _freeze_busy(run, names, signal.SIGKILL)
        parts = [p for p, (_e, o) in run.owners().items() if o == victim]
        with run.reader() as r:
            waiting = {
                x["url"] for x in r._rows(
                    "SELECT url FROM crawl_urls WHERE state IN ('queued', 'leased') "
                    "AND part = ANY(%s)", (parts,),
                )
            }  # fmt: skip
        wait_for(
            "the dead worker's partitions owned again",
            lambda: all(run.owners()[p][1] != victim for p in parts),
            TTL + 30,
        )
        took = time.monotonic() - killed
        survivors = [n for n in names if n != victim]
        codes = run.wait_done()
        outcome = run.fleet.outcome(codes)  # what `lookup crawl --workers 3` reports
    finally:
        run.fleet.stop()
    print(
        f"DRILL kill-9: {victim} held {len(parts)} partitions, {in_flight} URLs in flight, "
        f"{len(waiting)} queued or leased; owned again after {took:.2f} s (TTL {TTL} s)"
    )
    # The lease expires in etcd after TTL, a survivor's next balance round comes within
    # TTL/3 and its grant is written to the store: measured 3.0-4.2 s with TTL 2 s at load
    # 3-6 on 2 cores. "Within TTL + a few seconds", with about 2x headroom for a busier box.
    assert took < TTL + 6
    assert all(codes[n] == 0 for n in survivors)
    # The command's verdict (issue 24, item 10): the loss and the takeover reported, and
    # exit 0 because the others finished the crawl (it exited 1 before).
    print("DRILL kill-9 report: " + " | ".join(outcome.lines()))
    assert outcome.lost == [victim]
    assert sum(outcome.takeovers[victim].values()) >= len(parts)
    assert set(outcome.takeovers[victim]) <= set(survivors)
    assert outcome.lines()[0].startswith(f"fleet: worker {victim} lost (killed by SIGKILL); its ")
    assert outcome.lines()[-1].startswith("fleet: crawl completed")
    assert outcome.exit_code == 0
    log = run.log()
    twice = answered_twice(log, web.manifest(), run.retried())
    print(f"DRILL kill-9: refetched {sum(n - 1 for n in twice.values())} (bound {in_flight})")
    assert sum(n - 1 for n in twice.values()) <= in_flight
    with run.reader() as r:
        states = {
            x["url"]: x["state"]
            for x in r._rows(
                "SELECT url, state FROM crawl_urls WHERE url = ANY(%s)", (list(waiting),)
            )  # fmt: skip
        }
    lost = {u: s for u, s in states.items() if s == "leased"}
    assert lost == {}  # every URL it held came back and was settled
    _judge_clean(run, web)
    figures = judge_outbox(run, in_flight)
    print(f"DRILL kill-9 outbox: {figures}")


def test_sigstop_past_the_lease_its_first_write_is_refused_and_it_drops_the_partitions(
    web: Sandbox, postgres_db: str, etcd: EtcdServer, tmp_path: Path
) -> None:
    web.log.clear()
    run = start_fleet(web, postgres_db, etcd.url, tmp_path / "fleet", 2)
    names = [worker_name(1), worker_name(2)]
    try:
        run.wait_joined(names)
        wait_for("both workers fetching", lambda: _all_fetching(run, names), 90)
        victim, in_flight, stopped = _freeze_busy(run, names, signal.SIGSTOP)
        other = next(n for n in names if n != victim)
        parts = [p for p, (_e, o) in run.owners().items() if o == victim]
        wait_for(
            "the frozen worker's partitions taken over",
            lambda: all(run.owners()[p][1] == other for p in parts),
            TTL + 30,
        )
        took_over = time.monotonic()
        after = len(run.web.log.entries())
        run.fleet.signal(victim, signal.SIGCONT)
        # Its tasks in flight run on, and the first write of each is refused (a commit
        # the server ended while it was frozen included: the task's next write is).
        wait_for(
            "the thawed worker's refused write",
            lambda: "write refused" in run.fleet.log_text(victim),
            60,
        )
        codes = run.wait_done()
    finally:
        run.fleet.stop()
    text = run.fleet.log_text(victim)
    print(
        f"DRILL sigstop: {victim} frozen with {in_flight} URLs in flight, "
        f"{len(parts)} partitions taken over after {took_over - stopped:.2f} s"
    )
    assert "refused" in text and "dropped partition" in text, text[-3000:]
    assert set(codes.values()) == {0}
    # Requests the thawed worker made after the takeover are the ones the store never
    # recorded (its writes are refused): no more than it had in flight — its leased rows
    # (pages), or every task it logged a refused or failed write for (robots.txt and
    # probes in flight have no row).
    lines = text.splitlines()
    tasks = sum(1 for x in lines if "write refused" in x or ("processing" in x and "failed" in x))
    bound = max(in_flight, tasks)
    since_wall = time.time() - (time.monotonic() - took_over) - 1.0  # 1 s of clock slack
    asked: dict[str, int] = {}
    for e in run.log():
        if e.start >= took_over:
            asked[request_url(e)] = asked.get(request_url(e), 0) + 1
    with run.reader() as r:
        rows = r._rows(
            "SELECT url, COUNT(*) AS n FROM crawl_fetches WHERE started >= %s GROUP BY url",
            (since_wall,),
        )
    recorded = {normalize_url(x["url"]) or x["url"]: int(x["n"]) for x in rows}
    unrecorded = sum(max(0, n - recorded.get(normalize_url(u) or u, 0)) for u, n in asked.items())
    print(
        f"DRILL sigstop: {unrecorded} requests from the frozen worker after the takeover "
        f"(bound {bound}: {in_flight} leased, {tasks} refused tasks); sandbox log entries "
        f"after takeover: {sum(asked.values())} (from index {after})"
    )
    assert unrecorded <= bound
    twice = answered_twice(run.log(), web.manifest(), run.retried())
    assert sum(n - 1 for n in twice.values()) <= in_flight
    with run.reader() as r:
        assert open_urls(r) == []
        assert two_owners(r) == []
    figures = judge_outbox(run, in_flight)
    print(f"DRILL sigstop outbox: {figures}")


def test_stopping_and_resuming_the_whole_fleet_loses_nothing_and_refetches_nothing(
    web: Sandbox, postgres_db: str, etcd: EtcdServer, tmp_path: Path
) -> None:
    web.log.clear()
    out = tmp_path / "fleet"
    run = start_fleet(web, postgres_db, etcd.url, out, 2)
    names = [worker_name(1), worker_name(2)]
    try:
        run.wait_joined(names)
        wait_for("both workers fetching", lambda: _all_fetching(run, names, 5), 90)
    finally:
        run.fleet.stop()  # SIGTERM: a graceful stop
    with run.reader() as r:
        done_before = r.count_states().get("done", 0)
        left = r._rows("SELECT COUNT(*) AS n FROM crawl_urls WHERE state = 'leased'")[0]["n"]
        queued_before = r.count_states().get("queued", 0)
    assert done_before > 0 and queued_before > 0  # stopped mid-crawl
    run2 = start_fleet(web, postgres_db, etcd.url, out, 2)
    try:
        codes = run2.wait_done()
    finally:
        run2.fleet.stop()
    print(
        f"DRILL stop-resume: {done_before} done and {queued_before} queued at the stop, "
        f"{left} left leased by the graceful stop"
    )
    assert set(codes.values()) == {0}
    twice = answered_twice(run2.log(), web.manifest(), run2.retried())
    assert sum(n - 1 for n in twice.values()) <= left
    _judge_clean(run2, web)


def test_etcd_away_workers_stop_new_work_and_resume_when_it_is_back(
    web: Sandbox, postgres_db: str, etcd: EtcdServer, tmp_path: Path
) -> None:
    web.log.clear()
    run = start_fleet(web, postgres_db, etcd.url, tmp_path / "fleet", 2)
    names = [worker_name(1), worker_name(2)]
    outage = 5 * TTL  # the drill's outage: longer than any lease
    try:
        run.wait_joined(names)
        wait_for("both workers fetching", lambda: _all_fetching(run, names), 90)
        etcd.pause()
        paused = time.monotonic()
        time.sleep(outage)  # the outage itself (what is measured is what happens in it)
        etcd.resume()
        resumed = time.monotonic()
        codes = run.wait_done()
    finally:
        etcd.resume()
        run.fleet.stop()
    log = run.log()
    # Every lease's local deadline has passed by paused + TTL (renewals were sent before
    # the pause); one more TTL lets a request permitted just before it reach the site.
    quiet_from = paused + 2 * TTL
    during = [e for e in log if quiet_from <= e.start < resumed]
    after = [e for e in log if e.start >= resumed]
    first_after = min((e.start for e in after), default=float("nan")) - resumed
    print(
        f"DRILL etcd-away: {len(during)} requests started between deadline+TTL and etcd's "
        f"return; first request {first_after:.2f} s after it came back; "
        f"{len(after)} requests after"
    )
    assert set(codes.values()) == {0}
    assert during == []
    assert answered_twice(log, web.manifest(), run.retried()) == {}
    _judge_clean(run, web)
