"""Unique-id benchmark: why sortable ids matter (B-tree locality), and ids/s per generator.

    .venv/bin/python benchmarks/bench_ids.py            # 1,000,000 rows per id kind
    .venv/bin/python benchmarks/bench_ids.py --quick    # 20,000 rows, one run
    .venv/bin/python benchmarks/bench_ids.py --rows 200000 --json ids.json

1. **Ids per second**, one thread, each generator against the anchors measured in the
   same run: ``uuid.uuid4()`` (the standard library), ``uuid6.uuid7()`` and
   ``ulid.ULID()`` (``python-ulid``), the libraries implementing the same formats.
2. **Index locality in SQLite**: rows keyed by each id kind (Snowflake, UUIDv7, ULID,
   UUIDv4, the ticket server's range leases, a sequential int) inserted in the order the
   ids were made into a clustered B-tree (``WITHOUT ROWID``) in batches of 1,000; insert
   time, pages, leaf density (``dbstat``) and a "newest 100" query, as ratios against the
   sequential int (:mod:`lookup.blocks.ids.locality`).
3. **The same in PostgreSQL** when Debian's ``postgresql`` is installed: a throw-away
   cluster (``initdb``/``pg_ctl``, as the ``postgres`` user when run as root) on a free
   port in a temporary directory; each kind's rows are staged with ``COPY``, then
   inserted in id-creation order into a table with a ``bigint``/``uuid`` primary key
   (timed by ``EXPLAIN ANALYZE``, server side), and ``pgstattuple``'s ``pgstatindex``
   reports the index's leaf pages, leaf density and fragmentation.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.common import machine_summary, median, print_table  # noqa: E402
from lookup.blocks.ids import ID_KINDS  # noqa: E402
from lookup.blocks.ids.kinds import make_kind  # noqa: E402
from lookup.blocks.ids.locality import ANCHOR, make_keys, ratios, sqlite_locality  # noqa: E402
from lookup.kit.pgserver import PostgresServer, postgres_bin  # noqa: E402

Say = Callable[[str], None]


# ------------------------------------------------------------------ ids per second


def generator_makers(workdir: Path) -> dict[str, Callable[[], Any]]:
    """Every generator measured, ours and the libraries', by the name the table shows."""
    import ulid
    import uuid6

    ours = {f"ours: {k}": make_kind(k, workdir=workdir) for k in ID_KINDS}
    return {
        "uuid.uuid4() (anchor)": uuid.uuid4,
        "uuid6.uuid7()": uuid6.uuid7,
        "python-ulid ULID()": ulid.ULID,
        **ours,
    }


def rate(make: Callable[[], Any], n: int) -> float:
    """Ids per second of ``make`` over ``n`` calls (a bound-method loop, one thread)."""
    started = time.perf_counter()
    for _ in range(n):
        make()
    return n / (time.perf_counter() - started)


def bench_rates(n: int, runs: int, workdir: Path) -> dict[str, float]:
    """Median ids/s per generator; the generators interleaved run by run."""
    makers = generator_makers(workdir)
    seen: dict[str, list[float]] = {name: [] for name in makers}
    for _ in range(runs):
        for name, make in makers.items():
            seen[name].append(rate(make, n))
    return {name: median(v) for name, v in seen.items()}


# ------------------------------------------------------------------ PostgreSQL


class Postgres(PostgresServer):
    """A throw-away cluster (``kit/pgserver.py``) with ``pgstattuple`` and a ``psql`` runner."""

    def start(self, timeout: float = 60.0) -> Postgres:
        """Start the cluster (durability off: a benchmark, not a database), add pgstattuple."""
        super().start(timeout)
        self.sql("CREATE EXTENSION IF NOT EXISTS pgstattuple")
        return self

    def sql(self, text: str, stdin: bytes | None = None) -> str:
        """Run SQL through ``psql`` (unaligned, tuples only); its output."""
        out = subprocess.run(
            self._cmd(
                str(self.bindir / "psql"),
                "-h",
                "127.0.0.1",
                "-p",
                str(self.port),
                "-U",
                "postgres",
                "-d",
                "postgres",
                "-v",
                "ON_ERROR_STOP=1",
                "-Atq",
                "-c",
                text,
            ),
            input=stdin,
            check=True,
            capture_output=True,
        )
        return out.stdout.decode().strip()


def _pg_text(key: int | bytes) -> str:
    return str(key) if isinstance(key, int) else str(uuid.UUID(bytes=key))


def _explain_ms(pg: Postgres, sql: str) -> float:
    plan = json.loads(pg.sql(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}"))
    return float(plan[0]["Execution Time"])


def bench_postgres(
    kinds: Sequence[str], rows: int, workdir: Path, say: Say, scans: int = 9
) -> dict[str, dict[str, Any]]:
    """Each kind's rows into a PostgreSQL B-tree primary key; ``pgstatindex`` on it."""
    bindir = postgres_bin()
    if bindir is None:
        return {}
    pg = Postgres(bindir=bindir).start()
    out: dict[str, dict[str, Any]] = {}
    try:
        for kind in kinds:
            keys = make_keys(kind, rows, workdir)
            key_type = "bigint" if isinstance(keys[0], int) else "uuid"
            say(f"postgres: {kind}")
            pg.sql(
                f"DROP TABLE IF EXISTS stage, t; CREATE UNLOGGED TABLE stage(id {key_type},"
                " created bigint, payload bytea);"
                f" CREATE TABLE t(id {key_type} PRIMARY KEY, created bigint, payload bytea)"
            )
            payload = "\\\\x" + os.urandom(32).hex()
            body = "".join(f"{_pg_text(k)}\t{i}\t{payload}\n" for i, k in enumerate(keys))
            pg.sql("COPY stage FROM STDIN", stdin=body.encode())
            insert_ms = _explain_ms(pg, "INSERT INTO t SELECT * FROM stage ORDER BY created")
            pg.sql("VACUUM ANALYZE t")
            stats = pg.sql(
                "SELECT leaf_pages, avg_leaf_density, leaf_fragmentation,"
                " pg_relation_size('t_pkey') FROM pgstatindex('t_pkey')"
            ).split("|")
            newest = (
                "SELECT id FROM t ORDER BY id DESC LIMIT 100"
                if ID_KINDS[kind].sortable
                else "SELECT id FROM t ORDER BY created DESC LIMIT 100"
            )
            scan_ms = median(_explain_ms(pg, newest) for _ in range(scans))
            out[kind] = {
                "insert_ms": insert_ms,
                "leaf_pages": int(stats[0]),
                "leaf_density": float(stats[1]) / 100,
                "leaf_fragmentation": float(stats[2]) / 100,
                "index_bytes": int(stats[3]),
                "newest_ms": scan_ms,
            }
    finally:
        pg.close()
    return out


# ------------------------------------------------------------------ report


def report(results: dict[str, Any]) -> str:
    """The tables, as ratios against the anchors measured in the same run."""
    parts = []
    rates = results.get("rates")
    if rates:
        anchor = rates["uuid.uuid4() (anchor)"]
        parts.append(
            print_table(
                "Ids per second, one thread (× = against uuid.uuid4() in the same run)",
                ["generator", "ids/s", "× uuid4()"],
                [[n, f"{r:,.0f}", f"{r / anchor:.2f}"] for n, r in rates.items()],
            )
        )
    sqlite = results.get("sqlite")
    if sqlite:
        rows = {r["kind"]: r for r in sqlite["rows"]}
        parts.append(
            print_table(
                f"SQLite clustered B-tree, {sqlite['rows_per_kind']:,} rows per kind "
                f"(× = against '{ANCHOR}')",
                [
                    "id kind",
                    "insert s",
                    "insert ×",
                    "pages",
                    "pages ×",
                    "leaf density",
                    "newest 100 ms",
                    "newest ×",
                    "newest right",
                ],
                [
                    [
                        r["kind"],
                        f"{rows[r['kind']]['insert_s']:.2f}",
                        f"{r['insert time ×']:.2f}",
                        f"{rows[r['kind']]['pages']:,}",
                        f"{r['pages ×']:.2f}",
                        f"{r['leaf density']:.1%}",
                        f"{rows[r['kind']]['newest_ms']:.3f}",
                        f"{r['newest 100 ×']:.1f}",
                        str(r["newest 100 right"]),
                    ]
                    for r in sqlite["ratios"]
                ],
            )
        )
    pg = results.get("postgres")
    if pg:
        base = pg[ANCHOR]
        parts.append(
            print_table(
                f"PostgreSQL B-tree primary key, {results['rows']:,} rows per kind "
                f"(pgstatindex; × = against '{ANCHOR}')",
                [
                    "id kind",
                    "insert ms",
                    "insert ×",
                    "index MB",
                    "index ×",
                    "leaf pages",
                    "leaf density",
                    "fragmentation",
                    "newest 100 ms",
                    "newest ×",
                ],
                [
                    [
                        k,
                        f"{v['insert_ms']:,.0f}",
                        f"{v['insert_ms'] / base['insert_ms']:.2f}",
                        f"{v['index_bytes'] / 1e6:.1f}",
                        f"{v['index_bytes'] / base['index_bytes']:.2f}",
                        f"{v['leaf_pages']:,}",
                        f"{v['leaf_density']:.1%}",
                        f"{v['leaf_fragmentation']:.1%}",
                        f"{v['newest_ms']:.3f}",
                        f"{v['newest_ms'] / base['newest_ms']:.1f}",
                    ]
                    for k, v in pg.items()
                ],
            )
        )
    elif "postgres" in results:
        parts.append("PostgreSQL: not installed (apt-get install postgresql) — skipped")
        print(parts[-1])
    return "\n\n".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; returns 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows per id kind (1M)")
    parser.add_argument("--rate-ids", type=int, default=200_000, help="ids per rate run")
    parser.add_argument("--runs", type=int, default=3, help="rate runs; medians (3)")
    parser.add_argument("--kinds", default=",".join(ID_KINDS), help="id kinds, comma-separated")
    parser.add_argument("--no-postgres", action="store_true", help="skip PostgreSQL")
    parser.add_argument("--quick", action="store_true", help="20,000 rows, 20,000 ids, 1 run")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON")
    args = parser.parse_args(argv)
    if args.quick:
        args.rows, args.rate_ids, args.runs = min(args.rows, 20_000), 20_000, 1
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    if ANCHOR not in kinds:
        kinds.insert(0, ANCHOR)
    unknown = sorted(set(kinds) - set(ID_KINDS))
    if unknown or args.rows < 200 or args.rate_ids < 1 or args.runs < 1:
        parser.error(f"unknown kinds {unknown}" if unknown else "need --rows >= 200")

    def say(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    results: dict[str, Any] = {"machine": machine_summary(), "rows": args.rows}
    print(f"# bench_ids — {results['machine']}")
    with tempfile.TemporaryDirectory(prefix="bench-ids-") as tmp:
        work = Path(tmp)
        say("ids per second ...")
        results["rates"] = bench_rates(args.rate_ids, args.runs, work)
        say("SQLite ...")
        rows = sqlite_locality(kinds, args.rows, work, progress=say)
        results["sqlite"] = {
            "rows_per_kind": args.rows,
            "rows": [r.as_dict() for r in rows],
            "ratios": ratios(rows),
        }
        if not args.no_postgres:
            results["postgres"] = bench_postgres(kinds, args.rows, work, say)
    report(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
