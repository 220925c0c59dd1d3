"""Where the typeahead hot blocklist is kept: the seam the processes of a fleet share it through.

:class:`~lookup.typeahead.filters.HotBlocklist` (what every answer is checked against)
is a cache of a :class:`HotTermSource` — the phrases added at run time, with a cheap
``stamp`` that changes whenever they may have. Every edit goes to the source, which
applies it to what is stored *now* (never to one process's memory of it), so no process
can drop another's acknowledged edit. Two implementations, chosen by URL
(:func:`open_hot_term_source`, the setting ``typeahead_blocklist``):

* :class:`FileHotTermSource` — ``file:///…/blocklist.txt`` (or a plain path), the
  embedded default ``<data-dir>/typeahead/blocklist.txt``: one phrase per line, ``#``
  comments, editable by hand. An edit is a locked read-merge-write: an ``flock`` on a lock
  file beside it serialises editors across processes, the file is re-read under the lock,
  the change applied to what it holds (comments and other lines kept), written to a
  temporary file of this process's own, flushed to disk and renamed over the list. The
  stamp is the file's modification time, size and inode.
* :class:`~lookup.typeahead.blocklist_pg.PostgresHotTermSource` — ``postgresql://…`` (what
  ``lookup up --backend postgres`` sets): a table plus a revision counter bumped in the
  edit's transaction, so processes with different data directories serve one list.

Each process re-reads the list when the stamp moved, checked by its poller every second
(:data:`lookup.typeahead.http.POLL_SECONDS`), and at once after an edit of its own.
"""

from __future__ import annotations

import fcntl
import os
import secrets
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol, runtime_checkable
from urllib.parse import unquote, urlsplit

from lookup.kit.engines.storeurl import parse_store_url
from lookup.typeahead.normalize import MAX_QUERY_CHARS, has_control_chars, normalize_query

__all__ = ["FileHotTermSource", "HotTermSource", "clean_term", "open_hot_term_source"]

HEADER = "# hot blocklist: one phrase per line; edits take effect within seconds\n"


def clean_term(term: str) -> str:
    """The normalised form of a blocklist phrase, or ``ValueError`` if it cannot be one."""
    if not isinstance(term, str):
        raise ValueError("a blocklist term must be a string")
    if has_control_chars(term):
        raise ValueError("a blocklist term may not contain control characters")
    t = normalize_query(term)
    if not t:
        raise ValueError("a blocklist term may not be empty")
    if len(t) > MAX_QUERY_CHARS:
        raise ValueError(f"a blocklist term is at most {MAX_QUERY_CHARS} characters")
    return t


def _usable(line: str) -> str:
    """The phrase a stored line holds, or "" (a blank, a comment, an unusable line)."""
    if not line.strip() or line.lstrip().startswith("#"):
        return ""
    try:
        return clean_term(line)
    except ValueError:
        return ""


@runtime_checkable
class HotTermSource(Protocol):
    """The hot blocklist's phrases of one server (or one fleet)."""

    def describe(self) -> str:
        """Where the list lives (a file's URL, a server without its credentials)."""
        ...

    def stamp(self) -> object:
        """A value that changes whenever the phrases may have changed (cheap to read)."""
        ...

    def terms(self) -> list[str]:
        """The stored phrases, normalised, sorted, each once (unusable lines skipped)."""
        ...

    def edit(self, add: Iterable[str], remove: Iterable[str]) -> tuple[list[str], list[str]]:
        """Add and remove (already clean) phrases atomically; ``(added, removed)``: the
        phrases that were actually absent / present. A phrase in both is only removed."""
        ...

    def close(self) -> None:
        """Let go of connections (the next call reopens)."""
        ...


class FileHotTermSource:
    """The hot blocklist as a text file (see the module docstring)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

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


def open_hot_term_source(url: str | os.PathLike[str]) -> HotTermSource:
    """The source ``url`` names: ``file:///path/blocklist.txt`` (or a plain path) or
    ``postgresql://…``; ValueError for anything else, naming what is accepted."""
    text = str(url).strip()
    if text and "://" not in text:
        return FileHotTermSource(text)
    parsed = parse_store_url(text, ("file", "postgresql"))
    if parsed.scheme == "postgresql":
        from lookup.typeahead.blocklist_pg import PostgresHotTermSource

        return PostgresHotTermSource(parsed.url)
    path = unquote(urlsplit(parsed.url).path)
    if not path or path == "/":
        raise ValueError(f"file URL {text!r} names no file (file:///path/blocklist.txt)")
    return FileHotTermSource(path)
