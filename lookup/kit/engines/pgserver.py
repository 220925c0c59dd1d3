"""A throw-away PostgreSQL cluster on a free loopback port, for tests, drills, benchmarks and
``lookup up --backend postgres``.

``initdb`` into its own directory, ``pg_ctl start`` listening on 127.0.0.1 only (plus a
Unix socket in the same directory), trust authentication for the ``postgres`` role.
PostgreSQL refuses to run as root, so when this process is root every server command
runs as the ``postgres`` system user (``runuser -u postgres -- …``) and the directory is
handed to that user. Durability is off (``fsync=off``) unless ``durable=True``: the
drills that stop the server with ``-m immediate`` and count what survived need it on.

``stop(mode)`` and ``start()`` again keep the data and the port, so a drill can stop the
server under load and bring the same database back. Readiness is ``pg_ctl -w``; this
module needs no PostgreSQL client library. A first start on a port drawn here that loses
the race for it (``Address already in use`` in ``server.log``) starts again on a fresh one
(:mod:`lookup.kit.engines.launch`); a port the caller named, or a restart, stays put.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType

from lookup import settings
from lookup.errors import Unavailable
from lookup.kit.engines.launch import log_since, log_size, start_failure, start_on_fresh_ports
from lookup.kit.engines.ports import free_port

__all__ = ["PostgresServer", "postgres_available", "postgres_bin"]

_PG_ROOT = Path("/usr/lib/postgresql")


def postgres_bin() -> Path | None:
    """The bin directory servers start from (``LOOKUP_POSTGRES_BIN``, else the newest
    installed under /usr/lib/postgresql), or ``None`` when there is none."""
    named = settings.get("postgres_bin")
    if named:
        return Path(named) if (Path(named) / "initdb").is_file() else None
    if not _PG_ROOT.is_dir():
        return None
    versions = sorted(
        (p for p in _PG_ROOT.iterdir() if (p / "bin" / "initdb").is_file()),
        key=lambda p: int(p.name) if p.name.isdigit() else 0,
    )
    return versions[-1] / "bin" if versions else None


def postgres_available() -> bool:
    """True when a PostgreSQL to start throw-away servers from is installed."""
    return postgres_bin() is not None


class PostgresServer:
    """One PostgreSQL cluster on 127.0.0.1; ``url`` is ``postgresql://postgres@127.0.0.1:PORT/postgres``.

    ``root``: where the cluster lives (a new temporary directory when ``None``; removed by
    :meth:`close` only if this object made it). ``durable``: keep ``fsync`` on.
    """

    def __init__(
        self, root: str | Path | None = None, *, durable: bool = False, port: int = 0,
        bindir: Path | None = None,
    ) -> None:  # fmt: skip
        found = bindir or postgres_bin()
        if found is None:
            raise Unavailable("PostgreSQL is not installed (apt-get install postgresql)")
        self.bindir = found
        self._own_root = root is None
        self.root = Path(root) if root is not None else Path(tempfile.mkdtemp(prefix="lookup-pg-"))
        self.data = self.root / "data"
        self.durable = durable
        self.port = port
        self.as_postgres = os.geteuid() == 0

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _cmd(self, *args: str) -> list[str]:
        return (["runuser", "-u", "postgres", "--"] if self.as_postgres else []) + list(args)

    def _run(self, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(self._cmd(*args), capture_output=True, timeout=timeout)

    def start(self, timeout: float = 60.0) -> PostgresServer:
        """initdb the first time, then start the server and wait until it accepts connections."""
        self.root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o755)
        if self.as_postgres:
            shutil.chown(self.root, "postgres")
        if not (self.data / "PG_VERSION").is_file():
            done = self._run(
                str(self.bindir / "initdb"),
                "-D",
                str(self.data),
                "-A",
                "trust",
                "-U",
                "postgres",
                "--no-sync",
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
            )
            if done.returncode != 0:
                raise Unavailable(f"initdb failed: {done.stderr.decode(errors='replace')[-400:]}")
        if self.port:
            return self._start_on(self.port, timeout)
        try:
            return start_on_fresh_ports(
                lambda _n: self._start_on(free_port(), timeout), "PostgreSQL"
            )
        except BaseException:
            self.port = 0  # a port it never got: the next start draws again
            raise

    def _start_on(self, port: int, timeout: float) -> PostgresServer:
        """``pg_ctl start`` on ``port``, waiting until the server accepts connections."""
        self.port = port
        opts = [
            f"-p {port}",
            f"-k {self.root}",
            "-c listen_addresses=127.0.0.1",
            "-c max_connections=200",
            "-c shared_buffers=64MB",
            # a standby can stream from it (pgstandby.py); these are also the defaults
            "-c wal_level=replica",
            "-c max_wal_senders=10",
        ]
        if not self.durable:
            opts += ["-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off"]
        log = self.root / "server.log"
        offset = log_size(log)
        done = self._run(
            str(self.bindir / "pg_ctl"),
            "-D",
            str(self.data),
            "-o",
            " ".join(opts),
            "-l",
            str(log),
            "-w",
            "-t",
            str(int(timeout)),
            "start",
            timeout=timeout + 10,
        )
        if done.returncode != 0:
            tail = log_since(log, offset)
            raise start_failure(f"PostgreSQL did not start on port {port}: {tail[-600:]}", tail)
        return self

    def running(self) -> bool:
        """True while the server's postmaster is up."""
        if not (self.data / "PG_VERSION").is_file():
            return False
        status = self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "status")
        return status.returncode == 0

    def stop(self, mode: str = "fast") -> None:
        """``pg_ctl stop -m MODE`` (``smart``, ``fast``, or ``immediate``: a crash); data stays."""
        if self.running():
            self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def close(self) -> None:
        """Stop the server at once and remove its directory if this object made it."""
        self.stop("immediate")
        if self._own_root:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:  # fmt: skip
        self.close()
