"""Damaged data files: checksums taken when a file is written and checked when it is loaded,
one log line per damaged file, and whether the data directory can be written at all.

A system that finds a file damaged raises :class:`~lookup.errors.Damaged` (503 ``DAMAGED``,
naming the file and what to do) from the requests that need it and reports it in its health
probe; everything that does not need the file keeps serving. :class:`DamageLog` says so in
the server log once per file (again only if the file changes and is still damaged).
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
import zlib
from pathlib import Path

from lookup.errors import Damaged
from lookup.kit.engines.sqlite import is_read_only_error

__all__ = [
    "CHECKSUM_PREFIX",
    "DamageLog",
    "checksum_bytes",
    "checksum_file",
    "data_dir_problem",
    "file_signature",
    "is_not_writable",
    "not_writable",
]

#: Checksums are CRC-32 (zlib): they find flipped bits and truncation, fast enough to check
#: every file when it is opened. They are not a defence against deliberate tampering.
CHECKSUM_PREFIX = "crc32:"
_CHUNK = 1 << 20


def checksum_bytes(data: bytes | bytearray | memoryview) -> str:
    """``crc32:xxxxxxxx`` of some bytes."""
    return f"{CHECKSUM_PREFIX}{zlib.crc32(data) & 0xFFFFFFFF:08x}"


def checksum_file(path: str | os.PathLike[str]) -> str:
    """``crc32:xxxxxxxx`` of a file's bytes, read in 1 MiB chunks."""
    crc = 0
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            crc = zlib.crc32(chunk, crc)
    return f"{CHECKSUM_PREFIX}{crc & 0xFFFFFFFF:08x}"


def file_signature(path: str | os.PathLike[str]) -> tuple[int, int, int] | None:
    """``(inode, size, mtime_ns)`` of a file, None if it is missing: a file put back from a
    backup has a new signature, so a damage remembered for the old one is checked again."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def is_not_writable(exc: BaseException) -> bool:
    """Whether an error means a file or directory cannot be written (permissions, a read-only
    file system), as opposed to a damaged file."""
    if isinstance(exc, PermissionError):
        return True
    if isinstance(exc, OSError) and exc.errno == 30:  # EROFS
        return True
    return is_read_only_error(exc)


def not_writable(directory: str | os.PathLike[str], what: str) -> Damaged:
    """The error for a directory the server cannot write (``NOT_WRITABLE``, 503)."""
    where = str(directory)
    return Damaged(
        f"{what} cannot write to {where}: the directory is read-only for this server "
        "(SQLite also writes its -wal and -shm files beside a database)",
        code="NOT_WRITABLE",
        file=where,
        remedy=f"make {where} writable by the user running `lookup serve` (for example "
        f"`chmod -R u+w {where}`, or mount it read-write), then restart `lookup serve`",
    )


def data_dir_problem(data_dir: str | os.PathLike[str]) -> str | None:
    """Why ``data_dir`` cannot serve as the data directory (it, or the directory it would be
    made in, is not writable), or None. Creates it if missing; probes by writing a file."""
    root = Path(data_dir)
    try:
        root.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".write-check-", dir=root)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        return (
            f"the data directory {root} is not writable ({reason}): the systems keep their "
            "databases, logs and indexes there. Make it writable by this user (for example "
            f"`chmod -R u+w {root}`, or mount it read-write), or pass --data-dir (or set "
            "LOOKUP_DATA_DIR to) a writable directory."
        )
    return None


class DamageLog:
    """One log line per damaged file: the message, the file and the remedy.

    ``seen`` is keyed by the file and its :func:`file_signature`, so a file replaced by
    another damaged copy is reported again, and one that stays as it is never floods the log.
    """

    def __init__(self, logger: logging.Logger, system: str) -> None:
        self.logger = logger
        self.system = system
        self._seen: set[tuple[str, object, str]] = set()
        self._lock = threading.Lock()

    def report(self, damage: Damaged) -> None:
        """Log ``damage`` unless this file (as it is now) was already reported."""
        file = damage.file or ""
        key = (file, file_signature(file) if file else None, damage.code)
        with self._lock:
            if key in self._seen:
                return
            self._seen.add(key)
        remedy = f" What to do: {damage.remedy}." if damage.remedy else ""
        line = f"{self.system} {damage.code}: {damage.message}.{remedy}".replace("\n", " ")
        self.logger.error("%s", line)
