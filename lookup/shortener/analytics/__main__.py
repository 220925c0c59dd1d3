"""The click aggregator as a stand-alone job: ``python -m lookup.shortener.analytics``.

What runs on the analytics machine when the server is started with
``LOOKUP_SHORTENER_AGGREGATOR=external``: it folds the click log of a data directory
into the stats database until interrupted. With ``--once`` it folds the backlog, prints
how many events it folded and how fast (JSON), and exits — the benchmark uses that to
measure the aggregator's catch-up throughput apart from the redirect server.

    python -m lookup.shortener.analytics --data-dir data            # run until Ctrl-C
    python -m lookup.shortener.analytics --data-dir data --once     # catch up, report, exit

With ``LOOKUP_CLICKS_URL=redis://…`` the job is one consumer of the click stream's consumer
group (``--consumer NAME``, default host and pid); run several for a fleet: one killed in
the middle of a batch leaves its entries pending, and another claims them.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lookup import settings
from lookup.kit.engines.redis import describe_redis_url
from lookup.kit.ids import load_or_create_secret
from lookup.shortener.analytics import run_aggregator
from lookup.shortener.analytics.aggregate import ClickAggregator
from lookup.shortener.analytics.clicklog.sqlite import SqliteClickLog
from lookup.shortener.analytics.events import ClickEnricher


def catch_up(directory: Path, *, nice: int = 0, batch_size: int = 50_000) -> dict[str, Any]:
    """Fold everything the click log of ``directory`` holds now; returns the figures."""
    if nice > 0:
        os.nice(nice)
    click_log = SqliteClickLog(directory / "clicklog.sqlite3")
    aggregator = ClickAggregator(
        directory / "clickstats.sqlite3",
        click_log,
        enricher=ClickEnricher(load_or_create_secret(directory / "secret.key")),
        batch_size=batch_size,
    )
    before = aggregator.consumer_state()
    backlog = click_log.backlog(before["offset"])
    cpu0, wall0 = time.process_time(), time.perf_counter()
    records = 0
    while True:
        n = aggregator.step()
        if n == 0:
            break
        records += n
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    after = aggregator.consumer_state()
    aggregator.close()
    click_log.close()
    return {
        "backlog": backlog,
        "records": records,
        "counted": after["counted"] - before["counted"],
        "duplicates": after["duplicates"] - before["duplicates"],
        "seconds": round(wall, 4),
        "cpuSeconds": round(cpu, 4),
        "eventsPerSecond": round(records / wall, 1) if wall > 0 else None,
        "eventsPerCpuSecond": round(records / cpu, 1) if cpu > 0 else None,
        "nice": nice,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Run the aggregator over ``--data-dir`` (its ``shortener/`` directory)."""
    parser = argparse.ArgumentParser(
        prog="python -m lookup.shortener.analytics", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(settings.get("data_dir")),
        help="the server's data directory ($LOOKUP_DATA_DIR, ./data)",
    )
    parser.add_argument("--once", action="store_true", help="fold the backlog, report, exit")
    parser.add_argument("--interval", type=float, default=1.0, help="idle poll, seconds (1)")
    parser.add_argument("--nice", type=int, default=0, help="lower the CPU priority by this")
    parser.add_argument(
        "--consumer", default=None, help="this job's name in the click stream's consumer group"
    )
    args = parser.parse_args(argv)
    directory = args.data_dir / "shortener"
    stream = settings.get("clicks_url")
    if args.consumer is not None and not stream:
        parser.error("--consumer needs a click stream: set LOOKUP_CLICKS_URL=redis://…")
    if stream and args.once:
        parser.error("--once folds the SQLite click log; a stream is consumed as a group")
    if not stream and not (directory / "clicklog.sqlite3").exists():
        print(f"error: no click log in {directory} (start the server first)", file=sys.stderr)
        return 2
    if args.interval <= 0 or args.nice < 0:
        parser.error("--interval must be positive and --nice at least 0")
    if args.once:
        print(json.dumps(catch_up(directory, nice=args.nice)))
        return 0
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    source = stream or str(directory / "clicklog.sqlite3")
    shown = describe_redis_url(stream) if stream else source  # never a password
    print(f"aggregating {shown} (Ctrl-C to stop)", flush=True)
    directory.mkdir(parents=True, exist_ok=True)
    run_aggregator(
        settings.get("shortener_store") or str(directory / "clickstats.sqlite3"),
        source,
        load_or_create_secret(directory / "secret.key"),
        args.interval,
        None,
        stop,
        args.nice,
        args.consumer,
    )
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # Ctrl-C before the handlers above were installed
        sys.exit(130)
