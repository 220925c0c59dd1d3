"""Crawler drill: a worker frozen (``SIGSTOP``) past its partition lease, then thawed.

The fleet's own pieces, on throw-away servers: partition leases from etcd
(:class:`~lookup.crawler.leases.PartitionLeases`, epochs from etcd's revision) and the
PostgreSQL crawl store whose writes are fenced by ``(partition, epoch)``
(:class:`~lookup.crawler.store_pg.PgCrawlStore`, :mod:`lookup.crawler.partitions`).

The frozen worker is a real process (``python -m lookup.study.drills_crawler
frozen-worker``): it leases every partition, records its grants in the store, then loops
like a fetcher — check the lease, "fetch" for a few milliseconds, write the result under
its fence. The drill freezes it, lets a second worker take the partitions over once the
lease has expired, thaws it, and counts from the store which of its writes landed after
the takeover. ``fencing=False`` runs the same worker trusting the grants it remembers:
no lease check and no fence on its writes.

It is the fleet's lease-and-fence mechanism exercised directly, not a whole crawl: no
sandbox web and no fetching (``tests/crawler/test_fleet_drills.py`` runs that one, in
about a minute).
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lookup import settings
from lookup.study.drills_common import need, outcome, scratch_dir
from lookup.study.measure import Drill, DrillOutcome

__all__ = ["CRAWLER_DRILLS"]

ROOT = Path(__file__).resolve().parents[2]
CRAWL = "drill"

FROZEN_CHOICES = {
    "fenced": "When it wakes, its writes are refused (its epoch is out of date) and only "
    "the new owner's work counts",
    "both": "When it wakes it carries on beside the new owner: two workers write for the "
    "same partitions",
    "stuck": "Its partitions wait for it: nobody else may take them while it is frozen",
}


# ------------------------------------------------------------------- the worker process


def _worker(args: argparse.Namespace) -> int:
    """Lease every partition, record the grants, then fetch-and-write until SIGTERM."""
    from lookup.crawler.leases import PartitionLeases
    from lookup.crawler.partitions import Fence, FencedOut, current_fence
    from lookup.crawler.store_pg import PgCrawlStore
    from lookup.kit.engines.etcd import etcd_client

    out = open(args.out, "a", buffering=1, encoding="utf-8")  # noqa: SIM115 - closed below
    stop = [False]

    def on_term(signum: int, frame: object) -> None:
        stop[0] = True

    signal.signal(signal.SIGTERM, on_term)
    leases = PartitionLeases(etcd_client(args.etcd), CRAWL, "w1", args.partitions,
                             args.ttl).start()  # fmt: skip
    store = PgCrawlStore(args.store, partitions=args.partitions, worker="w1")
    try:
        held = leases.owned()
        for part, epoch in held.items():
            store.grant_partition(part, epoch, "w1", time.time())
        out.write(json.dumps({"event": "ready", "held": held}) + "\n")
        n = 0
        while not stop[0]:
            for part, epoch in sorted(held.items()):
                if stop[0]:
                    break
                if args.fenced and not leases.permits(part, epoch):
                    out.write(json.dumps({"event": "local", "part": part, "t": time.time()}) + "\n")
                    time.sleep(args.fetch_ms / 1000)
                    continue
                time.sleep(args.fetch_ms / 1000)  # the fetch in flight
                token = current_fence.set(Fence(part, epoch) if args.fenced else None)
                try:
                    store.set_meta(f"drill:w1:{n}", {"part": part, "epoch": epoch})
                    event = "ok"
                except FencedOut:
                    event = "fenced"
                except Exception as exc:  # noqa: BLE001 - e.g. frozen inside a transaction
                    # the server ended (idle_in_transaction_session_timeout): not written
                    event = f"failed: {type(exc).__name__}"
                finally:
                    current_fence.reset(token)
                record = {"event": event, "part": part, "n": n, "t": time.time()}
                out.write(json.dumps(record) + "\n")
                n += 1
    finally:
        leases.stop()
        store.close()
        out.close()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m lookup.study.drills_crawler frozen-worker --etcd URL --store URL ...``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("frozen-worker", help="the worker the drill freezes")
    w.add_argument("--etcd", required=True)
    w.add_argument("--store", required=True)
    w.add_argument("--out", required=True)
    w.add_argument("--partitions", type=int, default=8)
    w.add_argument("--ttl", type=int, default=2)
    w.add_argument("--fetch-ms", type=float, default=40.0)
    w.add_argument("--fenced", type=int, default=1)
    return _worker(parser.parse_args(argv))


# ------------------------------------------------------------------- the drill


def _events(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:  # a line cut by the final kill
            continue
    return out


def _landed(store: Any, out: Path) -> set[int]:
    """Which of the frozen worker's writes the store holds, read back key by key.

    Its writes are ``drill:w1:<n>`` with ``n`` counting its attempts; every attempt it
    logged is looked at, and the next one too (in flight when it was frozen).
    """
    tried = [int(e["n"]) for e in _events(out) if "n" in e]
    upto = max(tried, default=-1) + 2
    return {n for n in range(upto) if store.get_meta(f"drill:w1:{n}") is not None}


def _wait_ready(proc: subprocess.Popen[bytes], out: Path, log: Path, timeout_s: float) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for e in _events(out):
            if e.get("event") == "ready":
                return dict(e["held"])
        if proc.poll() is not None:
            tail = log.read_text(errors="replace")[-1500:] if log.exists() else ""
            raise RuntimeError(f"the worker process exited with {proc.returncode}: {tail}")
        time.sleep(0.05)
    raise TimeoutError(f"the worker process did not lease its partitions in {timeout_s:g} s")


def frozen_crawler_worker(
    fencing: bool = True,
    partitions: int = 8,
    ttl_s: int = 2,
    fetch_ms: float = 40.0,
    after_s: float = 1.5,
) -> DrillOutcome:
    """Freeze a worker past its lease, let another take its partitions, thaw it, count."""
    need("postgres", "etcd", drill="frozen_crawler_worker")
    from lookup.crawler.leases import PartitionLeases
    from lookup.crawler.partitions import Fence, current_fence
    from lookup.crawler.store_pg import PgCrawlStore
    from lookup.kit.engines.etcd import etcd_client
    from lookup.kit.engines.etcdserver import EtcdServer
    from lookup.kit.engines.pgserver import PostgresServer

    partitions, ttl_s = int(partitions), int(ttl_s)
    if partitions < 1 or ttl_s < 2 or fetch_ms <= 0 or after_s <= 0:
        raise ValueError(
            "need partitions >= 1, ttl_s >= 2 (etcd leases are whole seconds), "
            "fetch_ms > 0 and after_s > 0"
        )
    fencing = bool(fencing)
    proc: subprocess.Popen[bytes] | None = None
    w2: PartitionLeases | None = None
    with scratch_dir("crawler") as tmp, PostgresServer() as pg, EtcdServer() as etcd:
        out, log = Path(tmp) / "w1.jsonl", Path(tmp) / "w1.log"
        store = PgCrawlStore(pg.url, partitions=partitions, worker="w2")  # makes the tables
        try:
            with log.open("ab") as err:
                proc = subprocess.Popen(
                    [sys.executable, "-m", "lookup.study.drills_crawler", "frozen-worker",
                     "--etcd", etcd.url, "--store", pg.url, "--out", str(out),
                     "--partitions", str(partitions), "--ttl", str(ttl_s),
                     "--fetch-ms", str(fetch_ms), "--fenced", str(int(fencing))],
                    cwd=ROOT, env=settings.child_environ(PYTHONPATH=str(ROOT)),
                    stdout=err, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                )  # fmt: skip
            held = _wait_ready(proc, out, log, 60.0)
            time.sleep(0.3)  # it fetches and writes for a moment
            proc.send_signal(signal.SIGSTOP)
            frozen_at = time.monotonic()
            w2 = PartitionLeases(etcd_client(etcd.url), CRAWL, "w2", partitions, ttl_s).start()
            granted: dict[int, int] = {}
            deadline = frozen_at + 3 * ttl_s + 10
            while len(granted) < partitions and time.monotonic() < deadline:
                for part, epoch in w2.owned().items():
                    if granted.get(part) != epoch and store.grant_partition(
                            part, epoch, "w2", time.time()):  # fmt: skip
                        granted[part] = epoch
                time.sleep(0.05)
            took_over = time.monotonic()
            new_writes = 0
            for part, epoch in granted.items():  # the new owner's work lands
                token = current_fence.set(Fence(part, epoch))
                try:
                    store.set_meta(f"drill:w2:{part}", {"part": part, "epoch": epoch})
                    new_writes += 1
                finally:
                    current_fence.reset(token)
            landed_at_takeover = _landed(store, out)
            thawed_wall = time.time()
            proc.send_signal(signal.SIGCONT)
            time.sleep(after_s)  # the thawed worker goes on as it was (the drill's length)
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
            stale_accepted = len(_landed(store, out) - landed_at_takeover)
        finally:
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.kill()
                proc.wait(10)
            if w2 is not None:
                w2.stop()
            store.close()
        after = [e for e in _events(out) if float(e.get("t", 0)) >= thawed_wall]
    fenced = sum(e["event"] == "fenced" for e in after)
    failed = sum(str(e["event"]).startswith("failed") for e in after)
    local = sum(e["event"] == "local" for e in after)
    takeover_s = took_over - frozen_at
    if len(granted) < partitions:
        choice = "stuck"
    elif stale_accepted > 0:
        choice = "both"
    else:
        choice = "fenced"
    figures = {"partitions": partitions, "lease ttl (s)": ttl_s, "fencing": float(fencing),
               "partitions the frozen worker held": len(held),
               "partitions taken over": len(granted), "taken over after (s)": round(takeover_s, 2),
               "new owner's writes accepted": new_writes,
               "frozen worker's writes accepted after the takeover": stale_accepted,
               "its writes refused by the store (old epoch)": fenced,
               "its writes that failed (transaction ended by the server)": failed,
               "requests it held back itself (lease past deadline)": local}  # fmt: skip
    summary = (
        f"Frozen past its {ttl_s} s lease, the worker lost its {len(held)} partitions to "
        f"another after {takeover_s:.1f} s. Thawed, {stale_accepted} of its writes landed; "
        f"the store refused {fenced} for their old epoch, {failed} failed with their "
        f"transaction ended by the server, and it held back {local} requests itself."
    )
    chain = (
        f"throw-away PostgreSQL and etcd; a worker process leases {partitions} partitions "
        f"(TTL {ttl_s} s) and records each grant's epoch in the crawl store",
        f"it loops: {'check its lease, ' if fencing else ''}fetch for {fetch_ms:g} ms, write "
        f"{'under its (partition, epoch) fence' if fencing else 'with no fence'}",
        f"SIGSTOP; a second worker joins and takes every partition once the lease expired "
        f"({takeover_s:.1f} s), recording newer epochs",
        f"SIGCONT; {after_s:g} s later SIGTERM; the store counts the frozen worker's rows "
        f"written after the takeover: {stale_accepted}",
        "choice: partitions not taken over → stuck; a write of the old owner landed → both; "
        "otherwise → fenced",
    )
    return outcome(FROZEN_CHOICES, choice, figures, summary, chain)


CRAWLER_DRILLS: dict[str, Drill] = {
    "frozen_crawler_worker": Drill(
        "frozen_crawler_worker",
        "A crawler worker is frozen past its lease",
        FROZEN_CHOICES,
        frozen_crawler_worker,
        {"fencing": True, "partitions": 8, "ttl_s": 2, "fetch_ms": 40.0, "after_s": 1.5},
        requires=("postgres", "etcd"),
    ),
}


if __name__ == "__main__":
    raise SystemExit(main())
