"""The typeahead hot blocklist as a text file (``file:///…/blocklist.txt`` or a plain
path): the embedded default, ``<data-dir>/typeahead/blocklist.txt``.

One phrase per line, ``#`` comments, editable by hand; the stamp is the file's
modification time, size and inode. An edit is a locked read-merge-write: an ``flock`` on
a lock file beside it serialises editors across processes, the file is re-read under the
lock, the change applied to what it holds (comments and other lines kept), written to a
temporary file of this process's own, flushed to disk and renamed over the list.
"""

from __future__ import annotations

import fcntl
import os
import secrets
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import unquote, urlsplit

from lookup.kit.engines.storeurl import StoreUrl
from lookup.typeahead.blocklist import clean_term

__all__ = ["HEADER", "FileHotTermSource"]

#: The first line of a list file this module creates.
HEADER = "# hot blocklist: one phrase per line; edits take effect within seconds\n"


def _usable(line: str) -> str:
    """The phrase a stored line holds, or "" (a blank, a comment, an unusable line)."""
    if not line.strip() or line.lstrip().startswith("#"):
        return ""
    try:
        return clean_term(line)
    except ValueError:
        return ""


class FileHotTermSource:
    """The hot blocklist as a text file (see the module docstring)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    @classmethod
    def from_url(cls, url: StoreUrl) -> FileHotTermSource:
        """The list in the file ``url`` names (``file:///path/blocklist.txt``; a plain
        path comes as ``url.path`` and is kept as given)."""
        if url.path is not None:
            return cls(url.path)
        path = unquote(urlsplit(url.url).path)
        if not path or path == "/":
            raise ValueError(f"file URL {url.url!r} names no file (file:///path/blocklist.txt)")
        return cls(path)

    def describe(self) -> str:
        return self.path.resolve().as_uri()

    def stamp(self) -> object:
        try:
            st = self.path.stat()
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def _lines(self) -> list[str] | None:
        try:
            return self.path.read_text(encoding="utf-8", errors="replace").splitlines()
        except FileNotFoundError:
            return None

    def terms(self) -> list[str]:
        return sorted({t for line in self._lines() or () if (t := _usable(line))})

    def edit(self, add: Iterable[str], remove: Iterable[str]) -> tuple[list[str], list[str]]:
        wanted_remove = set(remove)
        wanted_add = [t for t in dict.fromkeys(add) if t not in wanted_remove]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_name(f".{self.path.name}.lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one editor at a time, across processes
            lines = self._lines()
            kept = [HEADER.rstrip("\n")] if lines is None else []
            present: set[str] = set()
            removed: set[str] = set()
            for line in lines or ():
                term = _usable(line)
                if term and term in wanted_remove:
                    removed.add(term)
                    continue
                if term:
                    present.add(term)
                kept.append(line)
            added = [t for t in wanted_add if t not in present]
            if not added and not removed and lines is not None:
                return [], []
            kept += added
            self._replace("".join(line + "\n" for line in kept))
        return added, sorted(removed)

    def _replace(self, body: str) -> None:
        """Write ``body`` to a temporary file of this process's own, flush it to disk and
        rename it over the list (readers see the old list or the new one, never half)."""
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(body)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)  # the rename itself survives a crash
        finally:
            os.close(fd)

    def close(self) -> None:
        pass
