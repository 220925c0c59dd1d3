"""What the fleet tests share: servers, a fleet of worker processes, and the judges.

Every judgement comes from the sandbox's own request log (the site's side) and the
store's fencing records (``crawl_partitions``, ``crawl_grants``, each fetch's epoch).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import weakref
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psutil
import pytest

from lookup import settings
from lookup.crawler import normalize_url
from lookup.crawler.fleet import CrawlFleet
from lookup.crawler.sandbox import LoggedRequest, Sandbox, SandboxConfig
from lookup.crawler.store import CrawlStateError
from lookup.crawler.store_pg import PgCrawlReader
from lookup.kit.etcd import EtcdServer, etcd_available
from tests.crawler.conftest import DELAY_FACTOR, HOST_BUDGET, MIN_DELAY, request_url

#: Short leases keep the drills fast: a dead worker's partitions move within ~TTL.
TTL = 2
PARTITIONS = 64
#: Each worker's ``--max-seconds``: a safety net, never what ends a drill's crawl. The
#: small sandbox's fleet crawl takes 30-70 s on 2 cores at load 10-15; 4x that.
FLEET_MAX_SECONDS = 300
#: How long a worker process may take to start and join (imports alone take seconds on
#: a loaded machine; 27 s measured at load 15-18 with three workers starting at once).
JOIN_TIMEOUT = 120.0
#: The workers' ``--timeout``. The sandbox answers in milliseconds, but a worker's fetch
#: clock runs while its event loop waits on the store: at load 15 a page took up to 1.8 s
#: (with 1 s, robots.txt of a seed timed out, the host counted as unreadable and the crawl
#: ended at once, "done"). The sandbox's hung host and stall page wait 4x longer.
FETCH_TIMEOUT = 5.0


def fleet_sandbox(**overrides: Any) -> SandboxConfig:
    """The small sandbox for fleet crawls: its hangs outlast :data:`FETCH_TIMEOUT`."""
    return SandboxConfig.small(**{"hang_seconds": 4 * FETCH_TIMEOUT, **overrides})


def need_etcd() -> None:
    """Skip without the etcd binary; fail instead under LOOKUP_REQUIRE_SERVERS (CI)."""
    if etcd_available():
        return
    where = settings.get("etcd_bin")
    if settings.get("require_servers"):
        pytest.fail(f"{where} is missing and LOOKUP_REQUIRE_SERVERS is set (.ci/run)")
    pytest.skip(f"{where} is missing (apt-get install etcd-server)")


def etcd_server() -> Iterator[EtcdServer]:
    need_etcd()
    with EtcdServer() as server:
        yield server


def wait_for(what: str, check: Callable[[], Any], timeout: float = 60.0) -> Any:
    """Poll ``check`` until it returns something truthy (fail after ``timeout`` s)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


@dataclass
class FleetRun:
    """A fleet of worker processes over one sandbox, one store and one etcd."""

    web: Sandbox
    store_url: str
    etcd_url: str
    out: Path
    fleet: CrawlFleet
    _poll: PgCrawlReader | None = field(default=None, init=False, repr=False)

    def reader(self) -> PgCrawlReader:
        return PgCrawlReader(self.store_url)

    def poller(self) -> PgCrawlReader:
        """One reader kept open for the drills' polls: a reader per poll starts a pool and
        a PostgreSQL backend ten times a second, load that slows the very crawl polled."""
        if self._poll is None:
            self._poll = PgCrawlReader(self.store_url)
            weakref.finalize(self, self._poll.close)
        return self._poll

    def log(self) -> list[LoggedRequest]:
        return [e for e in self.web.log.entries() if e.host != "127.0.0.1"]

    def retried(self) -> set[str]:
        with self.reader() as r:
            return retried_urls(r)

    def owners(self) -> dict[int, tuple[int, str]]:
        return self.poller().partition_epochs()

    def fetches_by(self, worker: str) -> int:
        try:
            rows = self.poller()._rows(
                "SELECT COUNT(*) AS n FROM crawl_fetches WHERE worker = %s", (worker,)
            )
        except CrawlStateError:  # the workers have not made the tables yet
            return 0
        return int(rows[0]["n"])

    def leased_of(self, worker: str) -> int:
        """URLs in flight in the partitions ``worker`` holds (per the store)."""
        rows = self.poller()._rows(
            "SELECT COUNT(*) AS n FROM crawl_urls u JOIN crawl_partitions p ON p.part = u.part "
            "WHERE u.state = 'leased' AND p.owner = %s",
            (worker,),
        )
        return int(rows[0]["n"])

    def wait_done(self, timeout: float = FLEET_MAX_SECONDS + 60.0) -> dict[str, int | None]:
        """Wait for every worker to exit; their exit codes. A worker stopped by its
        ``--max-seconds`` safety net (exit 0, work left) fails here, saying so."""
        codes = self.fleet.wait(timeout)
        assert all(c is not None for c in codes.values()), f"still running: {codes}"
        for name in codes:  # its last run's report (a resumed fleet appends to the log)
            stops = re.findall(r"^stopped: (\S+) after ([\d.]+) s", self.fleet.log_text(name), re.M)
            assert not stops or stops[-1][0] != "max-seconds", (
                f"worker {name} hit its --max-seconds safety net after {stops[-1][1]} s: the "
                f"crawl did not finish (work left in the store: {self.open_work()})"
            )
        return codes

    def open_work(self) -> list[tuple[str, str, str | None]]:
        with self.reader() as r:
            return open_urls(r)

    def wait_joined(self, names: list[str], timeout: float = JOIN_TIMEOUT) -> None:
        """Wait until every worker in ``names`` has started and joined the fleet."""
        wait_for(
            f"workers {names} to join",
            lambda: all(f"worker {n} joined" in self.fleet.log_text(n) for n in names),
            timeout,
        )

    def settle_frozen(self, name: str, timeout: float = 30.0) -> None:
        """After SIGSTOP: wait until worker ``name`` is stopped and the store has answered
        every statement it sent (a commit sent just before the stop lands now, or never
        while it is frozen), so what the store shows of it stays put until a takeover."""
        proc = psutil.Process(self.fleet.procs[name].pid)

        def still_running() -> list[str]:
            if proc.status() != psutil.STATUS_STOPPED:
                return ["not stopped yet"]
            ports = {c.laddr.port for c in proc.net_connections("tcp") if c.laddr}
            rows = self.poller()._rows(
                "SELECT client_port, state FROM pg_stat_activity "
                "WHERE datname = current_database() AND client_port IS NOT NULL"
            )
            return [f"port {x['client_port']}: {x['state']}" for x in rows
                    if x["client_port"] in ports and x["state"] == "active"]  # fmt: skip

        wait_for(f"{name} frozen and its statements answered", lambda: not still_running(),
                 timeout)  # fmt: skip


def fleet_argv(web: Sandbox, store_url: str, etcd_url: str, out: Path, **extra: str) -> list[str]:
    """The options of a fleet crawl of ``web`` (a worker's, or ``lookup crawl``'s)."""
    out.mkdir(parents=True, exist_ok=True)
    table = out / "hosts.txt"
    table.write_text("".join(f"{a} {n}\n" for n, a in sorted(web.hosts().items())))
    seconds = extra.pop("max_seconds", str(FLEET_MAX_SECONDS))
    argv = [
        *web.seeds(), "--out", str(out), "--quiet", "--hosts", str(table),
        "--allow-range", "127.0.0.0/8", "--min-delay", str(MIN_DELAY),
        "--delay-factor", str(DELAY_FACTOR), "--timeout", str(FETCH_TIMEOUT), "--host-budget",
        str(HOST_BUDGET), "--max-depth", "10", "--store", store_url,
        "--coordinator", etcd_url.replace("http://", "etcd://"), "--lease-ttl", str(TTL),
        "--partitions", str(PARTITIONS), "--max-seconds", seconds,
    ]  # fmt: skip
    if web.tls_port:
        argv += ["--ca-bundle", str(web.ca_path)]
    for k, v in extra.items():
        argv += [f"--{k.replace('_', '-')}", v]
    return argv


def start_fleet(
    web: Sandbox, store_url: str, etcd_url: str, out: Path, n: int, **extra: str
) -> FleetRun:
    """Start ``n`` ``lookup crawl-worker`` processes crawling ``web``."""
    fleet = CrawlFleet(fleet_argv(web, store_url, etcd_url, out, **extra), out, store_url=store_url)
    fleet.start_all(n)
    return FleetRun(web, store_url, etcd_url, out, fleet)


def crawl_command(
    web: Sandbox,
    store_url: str,
    etcd_url: str,
    out: Path,
    n: int,
    timeout: float = FLEET_MAX_SECONDS + 60.0,
) -> tuple[FleetRun, dict[str, int | None]]:
    """Run ``lookup crawl … --store … --coordinator … --workers n`` (the command a person
    types) to its end; the run and each worker's exit code, as the command reports them."""
    argv = fleet_argv(web, store_url, etcd_url, out)
    cmd = [sys.executable, "-m", "lookup.cli", "crawl", *argv, "--workers", str(n)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            stdin=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the command and the workers it started
        output, _ = proc.communicate()
        raise AssertionError(
            f"lookup crawl --workers {n} ran over {timeout:.0f} s: {output}"
        ) from None
    assert proc.returncode == 0, output[-3000:]
    codes: dict[str, int | None] = {
        m[1]: int(m[2]) for m in re.finditer(r"^worker (\S+): exit (-?\d+)$", output, re.M)
    }
    assert len(codes) == n, output[-3000:]
    return FleetRun(web, store_url, etcd_url, out, CrawlFleet(argv, out, store_url)), codes


# ------------------------------------------------------------------------------ judges


def by(log: list[LoggedRequest], key: str) -> dict[str, list[LoggedRequest]]:
    groups: dict[str, list[LoggedRequest]] = defaultdict(list)
    for e in log:
        groups[getattr(e, key)].append(e)
    for entries in groups.values():
        entries.sort(key=lambda e: e.start)
    return groups


def overlaps(log: list[LoggedRequest]) -> list[str]:
    """Requests that started while another to the same host or address was in flight."""
    bad = []
    for key in ("host", "address"):
        for name, entries in by(log, key).items():
            for prev, nxt in zip(entries, entries[1:], strict=False):
                if nxt.start < prev.end - (0.05 if prev.aborted else 0):
                    bad.append(f"{key} {name}: {nxt.target} started before {prev.target} ended")
    return bad


def too_close(log: list[LoggedRequest], manifest: dict[str, Any]) -> list[str]:
    """Pairs of requests to one host or address closer than the pause the crawl owes."""
    delays = manifest["robots"]["crawl_delay"]
    retry_after = manifest["hostile"]["retry_after"]
    bad = []
    for key in ("host", "address"):
        for name, entries in by(log, key).items():
            streak = 0
            for prev, nxt in zip(entries, entries[1:], strict=False):
                gap = nxt.start - prev.end + (0.05 if prev.aborted else 0)
                crawl_delay = delays.get(prev.host, 0.0) if prev.path != "/robots.txt" else 0.0
                duration = prev.end - prev.start if not prev.aborted else 0.0
                floor = max(MIN_DELAY, DELAY_FACTOR * duration, crawl_delay)
                if key == "host" and prev.status in (429, 503) and prev.path != "/robots.txt":
                    streak += 1
                    floor = max(floor, retry_after * 2 ** (streak - 1))
                elif key == "host":
                    streak = 0
                if gap < floor:
                    bad.append(f"{key} {name}: {gap:.4f}s before {nxt.target}, need {floor}")
    return bad


def answered_twice(
    log: list[LoggedRequest],
    manifest: dict[str, Any],
    retried: frozenset[str] | set[str] = frozenset(),
) -> dict[str, int]:
    """Page URLs answered more than once (refusals, cut-off answers and timeouts are retries;
    ``retried``: URLs the crawl itself recorded a ``retry:…`` outcome for — on a loaded
    machine a cold page can answer after the client's timeout)."""
    answered: dict[str, int] = defaultdict(int)
    stall = urlsplit(manifest["hostile"]["stall"]).hostname
    for e in log:
        if e.status in (429, 503) or e.path == "/robots.txt" or e.aborted:
            continue
        if e.path.startswith("/lookupbot-probe-"):
            continue  # a host's soft-404 probe, asked again by a new owner: not a page
        if e.host == stall and e.path == "/stall.html":
            continue
        answered[normalize_url(request_url(e)) or e.target] += 1
    return {u: n for u, n in answered.items() if n > 1 and u not in retried}


def retried_urls(r: PgCrawlReader) -> set[str]:
    """URLs whose fetch the crawl recorded as a retry (a timeout, a refused connection)."""
    rows = r._rows("SELECT DISTINCT url FROM crawl_fetches WHERE outcome LIKE 'retry:%%'")
    return {normalize_url(x["url"]) or x["url"] for x in rows}


def robots_violations(log: list[LoggedRequest], manifest: dict[str, Any]) -> list[str]:
    """robots.txt not first on a host, or anything but robots.txt from a failing host."""
    bad = []
    groups = by(log, "host")
    for host, entries in groups.items():
        if entries[0].path != "/robots.txt":
            bad.append(f"{host}: first request {entries[0].target}")
    for host in manifest["robots"]["failing_hosts"]:
        paths = {e.path for e in groups.get(host, [])}
        if paths - {"/robots.txt"}:
            bad.append(f"{host} (robots.txt fails): fetched {sorted(paths)}")
    requested = {request_url(e) for e in log}
    bad += [f"disallowed {u}" for u in manifest["robots"]["disallowed"] if u in requested]
    return bad


def two_owners(r: PgCrawlReader) -> list[str]:
    """Fencing, from the store: every recorded fetch was written under a grant its worker
    held, and before that partition's next grant (so never two owners writing)."""
    grants: dict[int, list[tuple[int, str, float]]] = defaultdict(list)
    for part, epoch, owner, at in r.grants():
        grants[part].append((epoch, owner, at))
    bad = []
    for part, gs in grants.items():
        epochs = [g[0] for g in gs]
        if epochs != sorted(set(epochs)):
            bad.append(f"partition {part}: epochs not increasing {epochs}")
    rows = r._rows(
        "SELECT f.url, f.started, f.worker, f.epoch, h.part FROM crawl_fetches f "
        "JOIN crawl_hosts h ON h.host = f.host WHERE f.epoch IS NOT NULL"
    )
    for row in rows:
        gs = grants.get(row["part"], [])
        mine = [g for g in gs if g[0] == row["epoch"]]
        if not mine or mine[0][1] != row["worker"]:
            bad.append(f"{row['url']}: epoch {row['epoch']} by {row['worker']} never granted")
            continue
        later = [g for g in gs if g[0] > row["epoch"]]
        if later and row["started"] >= later[0][2]:
            bad.append(f"{row['url']}: written under epoch {row['epoch']} after a newer grant")
    return bad


def originals_after_a_copy(r: PgCrawlReader, slack: float = 1.0) -> list[str]:
    """Pages judged originals although a page with the same text had been fetched (by any
    worker) more than ``slack`` s before they were judged: the fleet shares one duplicate
    memory, so only a copy whose commit was still under way on another worker can be
    missed (in the embedded crawl: none). A URL another page declares canonical is exempt
    (it becomes its cluster's representative)."""
    rows = r._rows(
        "SELECT f.url, f.started, f.took, u.content_hash FROM crawl_fetches f "
        "JOIN crawl_urls u ON u.url = f.url WHERE f.kind = 'page' AND f.outcome = 'ok' "
        "AND u.content_hash IS NOT NULL AND NOT EXISTS "
        "(SELECT 1 FROM crawl_urls c WHERE c.canonical = f.url) ORDER BY f.started"
    )
    first: dict[str, dict[str, Any]] = {}
    bad = []
    for row in rows:
        was = first.setdefault(row["content_hash"], row)
        gap = (row["started"] + row["took"]) - (was["started"] + was["took"])
        if was is not row and gap > slack:
            bad.append(f"{row['url']}: an original, {gap:.1f} s after the copy {was['url']}")
    return bad


def open_urls(r: PgCrawlReader) -> list[tuple[str, str, str | None]]:
    """URLs still queued or in flight, except those waiting for an unreadable robots.txt."""
    rows = r._rows(
        "SELECT u.url, u.state, h.robots_state FROM crawl_urls u "
        "LEFT JOIN crawl_hosts h ON h.host = u.host WHERE u.state = 'leased' "
        "OR (u.state = 'queued' AND h.robots_state IS DISTINCT FROM 'disallow-all')"
    )
    return [(x["url"], x["state"], x["robots_state"]) for x in rows]


def judge_outbox(run: FleetRun, bound: int) -> dict[str, int]:
    """The fleet's exported ``OUT/events.jsonl`` against the store's outbox and grants:
    every line valid, exactly the outbox rows in order (none twice, none missing), none
    written under an epoch its worker was not granted (a fenced-out write), the same kind
    of event for a URL twice at most ``bound`` times in all (the URLs in flight at a
    takeover), and search indexes it to as many documents as the store has fetched
    pages. Returns the figures."""
    from lookup.crawler.output import read_events
    from lookup.kit.crawlevents import event_errors
    from lookup.search.indexer import build_index

    run.fleet.export()
    run.fleet.close()
    events = read_events(run.out / "events.jsonl")
    assert events, "the fleet exported no event"
    bad = [(e, event_errors(e)) for e in events if event_errors(e)]
    assert bad == []
    with run.reader() as r:
        rows = r.outbox_rows()
        granted = {(owner, epoch) for _p, epoch, owner, _at in r.grants()}
        pages = int(r._rows(
            "SELECT COUNT(*) AS n FROM crawl_urls WHERE state = 'done' AND outcome = 'ok'"
        )[0]["n"])  # fmt: skip
    assert [json.loads(line) for line, _w, _e in rows] == events  # once each, in order
    fenced = [(w, e) for _l, w, e in rows if (w, e) not in granted]
    assert fenced == []
    # A fetched page later removed as a duplicate of its canonical is legitimate (the
    # embedded crawl logs the same); the same kind of event twice for a URL is a refetch.
    per_url = Counter((e["urlHash"], e["type"]) for e in events)
    repeats = sum(n - 1 for n in per_url.values())
    assert repeats <= bound, [u for u, n in per_url.items() if n > 1]
    for e in events:
        if "storageKey" in e:
            assert (run.out / e["storageKey"].partition("#")[0]).is_file(), e["storageKey"]
    report = build_index(run.out, run.out / "index", shards=2)
    assert report.failed == 0
    assert report.live_docs == pages, (report.live_docs, pages)
    return {"events": len(events), "repeats": repeats, "pages": pages,
            "docs": report.live_docs}  # fmt: skip
