"""The Snowflake drills: real generator processes, real etcd leases, duplicates counted.

Run by the tests, the notebook and the dashboard. Each generator is its own process
(``python -m lookup.blocks.ids.drill generate ...``) that writes the ids it issued as
raw int64 to a file and a JSON summary beside it; the parent counts duplicates and
checks the order. The drills:

* :func:`fleet_drill` — N processes, each leasing a worker id, M ids each: no duplicate,
  each process's ids strictly increasing;
* :func:`shared_worker_drill` — processes forced onto one worker id with no lease: the
  duplicates the seed's first hazard produces, counted;
* :func:`lease_loss_drill` — a process streams ids while its lease is revoked from
  outside (or etcd is frozen); it must stop issuing by its deadline, and a new holder of
  the same worker id must issue nothing the old one did;
* :func:`duplicate_causes` — the seed's interview question ("your ID generator emitted
  a duplicate — list the causes") answered with a measurement per cause.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lookup import settings
from lookup.blocks.ids.etcd import EtcdServer, etcd_client
from lookup.blocks.ids.snowflake import SEED_LAYOUT, ClockMovedBackwards, Snowflake
from lookup.blocks.ids.snowflake import wall_clock_ms as _wall_ms
from lookup.blocks.ids.workers import ReservationExhausted, WorkerLease
from lookup.errors import Unavailable

__all__ = [
    "DrillResult",
    "duplicate_causes",
    "fleet_drill",
    "lease_loss_drill",
    "read_ids",
    "shared_worker_drill",
    "spawn_generator",
]

#: The checkout this module is in: generator processes run its ``lookup``, not an installed one.
ROOT = Path(__file__).resolve().parents[3]


# ------------------------------------------------------------------- the child process


def _exit_on_term(signum: int, frame: object) -> None:
    raise SystemExit(0)  # unwinds through the ``finally`` that writes the summary


def _generate(args: argparse.Namespace) -> int:
    """Issue ids (leased or on a fixed worker id) and write them and a summary."""
    out = Path(args.out)
    ids = array("q")
    summary: dict[str, Any] = {"mode": "leased" if args.etcd else "fixed"}
    lease: WorkerLease | None = None
    if args.etcd:
        workers = [args.worker] if args.worker >= 0 else None
        lease = WorkerLease(etcd_client(args.etcd), ttl_s=args.ttl, workers=workers)
        lease.acquire(wait_s=args.wait)
        gen = lease.generator()
        summary.update(worker=lease.worker_id, lease=lease.lease_id, epoch=lease.epoch)
    else:
        gen = Snowflake(args.worker)
        summary.update(worker=args.worker)
    staged = Path(f"{out}.ready.tmp")
    staged.write_text(json.dumps(summary))
    os.replace(staged, f"{out}.ready")  # atomic: a reader never sees it half written
    go = Path(args.go) if args.go else None
    while go is not None and not go.exists():
        time.sleep(0.002)
    signal.signal(signal.SIGTERM, _exit_on_term)
    pause = 1.0 / args.rate if args.rate > 0 else 0.0
    started = time.perf_counter()
    try:
        while args.count <= 0 or len(ids) < args.count:
            if pause:
                time.sleep(pause)
            try:
                ids.append(gen.next_id())
            except (ClockMovedBackwards, ReservationExhausted):
                time.sleep(0.0005)  # transient: the clock or the next renewal catches up
                continue
            except Unavailable as exc:  # lease lost, or its deadline passed
                summary.update(
                    stopped=type(exc).__name__, stopped_wall_ms=_wall_ms(), reason=str(exc)
                )
                if lease is not None:
                    summary["deadline_wall_ms"] = lease.deadline_wall_ms()
                break
    finally:
        seconds = time.perf_counter() - started
        if lease is not None:
            summary["events"] = [e.__dict__ for e in lease.events]
            summary["reserved_ms"] = lease.reserved_ms
            lease.release()
        with out.open("wb") as fh:
            ids.tofile(fh)
        summary.update(issued=len(ids), seconds=seconds, waits=gen.waits)
        if ids:
            summary.update(
                first_ms=gen.layout.decode(ids[0]).unix_ms,
                last_ms=gen.layout.decode(ids[-1]).unix_ms,
            )
        Path(f"{out}.json").write_text(json.dumps(summary))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m lookup.blocks.ids.drill generate --out F [--etcd URL] ...``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate", help="one generator process")
    g.add_argument("--out", required=True)
    g.add_argument("--etcd", default="", help="lease the worker id here; none: --worker as is")
    g.add_argument("--worker", type=int, default=-1, help="fixed (or the only leasable) id")
    g.add_argument("--count", type=int, default=100_000, help="ids to issue; 0: until stopped")
    g.add_argument("--ttl", type=float, default=2.0)
    g.add_argument("--go", default="", help="wait for this file before issuing")
    g.add_argument("--wait", type=float, default=0.0, help="seconds to wait for a free id")
    g.add_argument("--rate", type=float, default=0.0, help="ids per second (0: flat out)")
    args = parser.parse_args(argv)
    if not args.etcd and args.worker < 0:
        parser.error("without --etcd, give the fixed --worker id")
    return _generate(args)


# ------------------------------------------------------------------- the parent side


def spawn_generator(
    out: Path,
    *,
    etcd: str = "",
    worker: int = -1,
    count: int = 100_000,
    ttl: float = 2.0,
    go: Path | None = None,
    wait_s: float = 0.0,
    rate: float = 0.0,
) -> subprocess.Popen[bytes]:
    """Start one generator process (this checkout's ``lookup``, whatever is installed)."""
    cmd = [
        sys.executable,
        "-m",
        "lookup.blocks.ids.drill",
        "generate",
        "--out",
        str(out),
        "--worker",
        str(worker),
        "--count",
        str(count),
        "--ttl",
        str(ttl),
        "--wait",
        str(wait_s),
        "--rate",
        str(rate),
    ]
    if etcd:
        cmd += ["--etcd", etcd]
    if go is not None:
        cmd += ["--go", str(go)]
    return subprocess.Popen(
        cmd, cwd=ROOT, env=settings.child_environ(PYTHONPATH=str(ROOT)), stdin=subprocess.DEVNULL
    )


def read_ids(out: Path) -> tuple[array[int], dict[str, Any]]:
    """The ids a generator wrote and its summary."""
    ids = array("q")
    data = out.read_bytes()
    ids.frombytes(data)
    return ids, json.loads(Path(f"{out}.json").read_text())


def _wait_ready(
    paths: Sequence[Path], procs: Sequence[subprocess.Popen[bytes]], timeout_s: float = 60.0
) -> None:
    deadline = time.monotonic() + timeout_s
    for path, proc in zip(paths, procs, strict=True):
        while not Path(f"{path}.ready").exists():
            if proc.poll() is not None:
                raise RuntimeError(f"generator for {path.name} exited with {proc.returncode}")
            if time.monotonic() > deadline:
                raise TimeoutError("generators did not get ready")
            time.sleep(0.01)


def _run_all(procs: Sequence[subprocess.Popen[bytes]], timeout_s: float = 120.0) -> None:
    for proc in procs:
        if proc.wait(timeout=timeout_s) != 0:
            raise RuntimeError(f"a generator exited with {proc.returncode}")


@dataclass
class DrillResult:
    """What a multi-process drill measured."""

    processes: int
    per_process: int
    total: int
    distinct: int
    duplicates: int
    strictly_increasing: list[bool]
    workers: list[int]
    seconds: float
    summaries: list[dict[str, Any]] = field(default_factory=list)
    shared_ms: int = 0  # milliseconds in which two or more processes issued ids

    @property
    def ids_per_s(self) -> float:
        """Ids per second over the whole fleet (from the slowest process's issuing time)."""
        return self.total / self.seconds if self.seconds > 0 else 0.0


def _collect(outs: Sequence[Path], per_process: int) -> DrillResult:
    every: set[int] = set()
    total = 0
    increasing, workers, summaries = [], [], []
    seconds = 0.0
    ms_seen: dict[int, int] = {}
    for out in outs:
        ids, summary = read_ids(out)
        total += len(ids)
        every.update(ids)
        for ms in {SEED_LAYOUT.decode(i).unix_ms for i in ids}:
            ms_seen[ms] = ms_seen.get(ms, 0) + 1
        increasing.append(all(a < b for a, b in zip(ids, ids[1:], strict=False)))
        workers.append(int(summary["worker"]))
        summaries.append(summary)
        seconds = max(seconds, float(summary["seconds"]))
    shared = sum(1 for n in ms_seen.values() if n > 1)
    return DrillResult(
        len(outs),
        per_process,
        total,
        len(every),
        total - len(every),
        increasing,
        workers,
        seconds,
        summaries,
        shared,
    )


def _fleet(work: Path, n: int, count: int, *, etcd: str, worker: int, ttl: float) -> DrillResult:
    outs = [work / f"gen{i}.ids" for i in range(n)]
    go = work / "go"
    procs = [
        spawn_generator(o, etcd=etcd, worker=worker, count=count, ttl=ttl, go=go) for o in outs
    ]
    try:
        _wait_ready(outs, procs)
        go.touch()  # every process issues at the same time
        _run_all(procs)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return _collect(outs, count)


def fleet_drill(
    etcd_url: str, processes: int = 8, count: int = 100_000, ttl: float = 4.0
) -> DrillResult:
    """``processes`` generators each leasing a worker id from etcd, ``count`` ids each."""
    with tempfile.TemporaryDirectory(prefix="lookup-drill-") as tmp:
        return _fleet(Path(tmp), processes, count, etcd=etcd_url, worker=-1, ttl=ttl)


def shared_worker_drill(processes: int = 2, count: int = 100_000, worker: int = 7) -> DrillResult:
    """``processes`` generators all on worker ``worker`` with no lease: duplicates counted."""
    with tempfile.TemporaryDirectory(prefix="lookup-drill-") as tmp:
        return _fleet(Path(tmp), processes, count, etcd="", worker=worker, ttl=2.0)


def lease_loss_drill(
    etcd: EtcdServer, how: str = "revoke", ttl: float = 2.0, worker: int = 5
) -> dict[str, Any]:
    """Stream ids, lose the lease (``revoke`` it, or ``pause`` etcd), then a new holder.

    Returns when the loss happened, when the stream stopped, the last id's timestamp
    against the holder's deadline, and the duplicates between old and new holder.
    """
    if how not in ("revoke", "pause"):
        raise ValueError("how is 'revoke' or 'pause'")
    client = etcd_client(etcd.url)
    with tempfile.TemporaryDirectory(prefix="lookup-drill-") as tmp:
        old, new = Path(tmp) / "old.ids", Path(tmp) / "new.ids"
        proc = spawn_generator(old, etcd=etcd.url, worker=worker, count=0, ttl=ttl)
        try:
            _wait_ready([old], [proc])
            ready = json.loads(Path(f"{old}.ready").read_text())
            time.sleep(ttl / 2)  # let it stream through a renewal or two
            lost_at = _wall_ms()
            if how == "revoke":
                client.post(client.get_url("/kv/lease/revoke"), json={"ID": ready["lease"]})
                proc.wait(timeout=ttl * 5 + 30)
            else:
                etcd.pause()
                try:
                    proc.wait(timeout=ttl * 5 + 30)
                finally:
                    etcd.resume()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        old_ids, summary = read_ids(old)
        taker = spawn_generator(
            new, etcd=etcd.url, worker=worker, count=20_000, ttl=ttl, wait_s=ttl * 3 + 10
        )
        _run_all([taker], timeout_s=ttl * 5 + 60)
        new_ids, new_summary = read_ids(new)
    both = set(old_ids) | set(new_ids)
    return {
        "how": how,
        "ttl_s": ttl,
        "issued_before_stop": len(old_ids),
        "lost_at_ms": lost_at,
        "stopped_at_ms": summary.get("stopped_wall_ms"),
        "time_to_stop_ms": (summary["stopped_wall_ms"] - lost_at)
        if "stopped_wall_ms" in summary
        else None,
        "last_id_ms": summary.get("last_ms"),
        "deadline_ms": summary.get("deadline_wall_ms"),
        "reserved_ms": summary.get("reserved_ms"),
        "last_id_after_loss_ms": (summary["last_ms"] - lost_at) if "last_ms" in summary else None,
        "stopped_because": summary.get("reason", ""),
        "new_holder_first_ms": new_summary.get("first_ms"),
        "new_holder_issued": len(new_ids),
        "duplicates_old_vs_new": len(old_ids) + len(new_ids) - len(both),
        "events": summary.get("events", []),
    }


# --------------------------------------------------------- the interview question


class _StepClock:
    """A clock that reads a scripted list of ms, then holds the last one."""

    def __init__(self, readings: Sequence[int]) -> None:
        self.readings = list(readings)
        self.i = 0

    def __call__(self) -> int:
        value = self.readings[min(self.i, len(self.readings) - 1)]
        self.i += 1
        return value


def _unchecked(readings: Sequence[int], worker: int) -> list[int]:
    """The seed's generator without its clock check: an earlier ms starts a fresh sequence."""
    out, last, seq = [], -1, 0
    for ts in readings:
        seq = seq + 1 if ts == last else 0
        last = ts
        out.append(SEED_LAYOUT.encode(ts, worker, seq))
    return out


def _dupes(*streams: Sequence[int]) -> int:
    every = [x for s in streams for x in s]
    return len(every) - len(set(every))


def duplicate_causes(per_ms: int = 100, span_ms: int = 50) -> list[dict[str, Any]]:
    """Each assumption the layout rests on, broken on purpose, and the duplicates counted.

    Each row: the cause, the guard that prevents it here, duplicates without the guard
    and duplicates (or refusals) with it — measured on the real generator with scripted
    clocks, so the figures do not depend on the machine.
    """
    base = 1_750_000_000_000
    ticks = [base + i // per_ms for i in range(per_ms * span_ms)]
    rows: list[dict[str, Any]] = []

    # 1. two live processes share a worker id (a hash or a random draw picked it)
    a = Snowflake(7, clock=_StepClock(ticks)).take(len(ticks))
    b = Snowflake(7, clock=_StepClock(ticks)).take(len(ticks))
    c = Snowflake(8, clock=_StepClock(ticks)).take(len(ticks))
    rows.append(
        {
            "cause": "two live processes on one worker id",
            "guard": "worker ids leased from etcd (create-if-absent)",
            "ids": 2 * len(ticks),
            "duplicates without guard": _dupes(a, b),
            "duplicates with guard": _dupes(a, c),
        }
    )

    # 2. the clock steps back (NTP step) and the generator does not check
    half = len(ticks) // 2
    back = ticks[:half] + [t - span_ms // 2 for t in ticks[half:]]
    naive = _unchecked(back, 7)
    guarded = Snowflake(7, clock=_StepClock(back))
    issued, refused = [], 0
    for _ in back:
        try:
            issued.append(guarded.next_id())
        except ClockMovedBackwards:
            refused += 1
    rows.append(
        {
            "cause": "clock stepped back, not checked",
            "guard": "refuse while the clock is behind the last issued ms",
            "ids": len(back),
            "duplicates without guard": _dupes(naive),
            "duplicates with guard": _dupes(issued),
            "refused": refused,
        }
    )

    # 3. a restart (or a new holder of the lease) reuses ms the old process used
    first = Snowflake(7, clock=_StepClock(ticks)).take(len(ticks))
    restart = [base + span_ms // 2 + i // per_ms for i in range(len(ticks))]
    again = Snowflake(7, clock=_StepClock(restart)).take(len(restart))
    mark = SEED_LAYOUT.decode(first[-1]).unix_ms  # what the old run left in etcd
    waited_out = [t + (mark - restart[0]) + 1 for t in restart]  # its clock once past it
    after = Snowflake(7, clock=_StepClock(waited_out), not_before_ms=mark).take(len(restart))
    rows.append(
        {
            "cause": "restart re-uses ms of the previous run on the same worker id",
            "guard": "the high-water mark in etcd: wait until the clock passes it",
            "ids": 2 * len(ticks),
            "duplicates without guard": _dupes(first, again),
            "duplicates with guard": _dupes(first, after),
        }
    )

    # 4. more than 4,096 ids in one ms with the sequence wrapping instead of waiting
    burst = 4096 + 1000
    one_ms = [base] * burst + [base + 1] * burst
    wrapped = [SEED_LAYOUT.encode(base, 7, i & 4095) for i in range(burst)]
    waited = Snowflake(7, clock=_StepClock(one_ms)).take(burst)
    rows.append(
        {
            "cause": "sequence wraps past 4,095 within one ms",
            "guard": "wait for the next ms once 4,096 are used",
            "ids": burst,
            "duplicates without guard": _dupes(wrapped),
            "duplicates with guard": _dupes(waited),
        }
    )
    return rows


if __name__ == "__main__":
    raise SystemExit(main())
