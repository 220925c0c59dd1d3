"""Where the shortener's domain blocklist is kept: the seam a fleet shares it through.

The :class:`~lookup.shortener.urls.Blocklist` the URL policy and the scanner consult is
a cache of a :class:`BlocklistSource` — the edited domains, with a cheap ``stamp`` that
changes whenever they may have. Two implementations, chosen by URL
(:func:`open_blocklist_source`):

* :class:`FileBlocklistSource` — ``file:///…/blocklist.txt``, the embedded default: a text
  file in the data directory, one domain per line with ``#`` comments, editable by hand
  (the stamp is its mtime); edits through the API keep the comments and are serialised
  across processes by an ``flock`` on a lock file beside it;
* :class:`~lookup.shortener.blocklist_pg.PostgresBlocklistSource` — ``postgresql://…``
  (the shortener store's URL when the links live there): a table plus a revision
  counter bumped in the same transaction as every edit, so API processes with
  different data directories enforce one list; each polls the counter (one indexed
  row) at most every ``recheck_s`` seconds.
"""

from __future__ import annotations

import fcntl
import os
import secrets
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Protocol, runtime_checkable
from urllib.parse import unquote, urlsplit

from lookup.kit.engines.storeurl import parse_store_url

__all__ = ["BlocklistSource", "FileBlocklistSource", "open_blocklist_source"]

#: Normalises one line or entry to a domain ("" when it is none), the Blocklist's rule.
Clean = Callable[[str], str]

TEMPLATE = (
    "# Domains the URL shortener refuses (and the scanner disables), one per line.\n"
    "# A domain blocks its subdomains too. Edits take effect within seconds.\n"
)


@runtime_checkable
class BlocklistSource(Protocol):
    """The edited blocked domains of one shortener (or one fleet)."""

    def describe(self) -> str:
        """Where the list lives (a file's URL, a server without its credentials)."""
        ...

    def stamp(self) -> object:
        """A value that changes whenever the entries may have changed (cheap to read)."""
        ...

    def entries(self, clean: Clean) -> frozenset[str]:
        """The stored domains, each passed through ``clean`` (empty results dropped)."""
        ...

    def edit(
        self, add: Iterable[str], remove: Iterable[str], clean: Clean
    ) -> tuple[list[str], list[str]]:
        """Add and remove (already clean) domains atomically; ``(added, removed)``, the
        domains that were actually absent / present."""
        ...

    def close(self) -> None:
        """Let go of connections (the next call reopens)."""
        ...


class FileBlocklistSource:
    """The blocklist as a text file (see the module docstring)."""

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

    def _lines(self) -> list[str]:
        try:
            return self.path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return []

    def entries(self, clean: Clean) -> frozenset[str]:
        return frozenset(clean(line) for line in self._lines()) - {""}

    def write_template(self) -> None:
        """Create the file with an explanatory header if it does not exist."""
        if self.path.exists():
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(TEMPLATE, encoding="utf-8")

    def edit(
        self, add: Iterable[str], remove: Iterable[str], clean: Clean
    ) -> tuple[list[str], list[str]]:
        wanted_add, wanted_remove = list(add), set(remove)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lock_path = self.path.with_name(f".{self.path.name}.lock")
        with open(lock_path, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one editor at a time, across processes
            kept: list[str] = []
            present: set[str] = set()
            removed: list[str] = []
            for line in self._lines():
                domain = clean(line)
                if domain and domain in wanted_remove:
                    removed.append(domain)
                    continue
                if domain:
                    present.add(domain)
                kept.append(line)
            added: list[str] = []
            for domain in wanted_add:
                if domain not in present and domain not in wanted_remove:
                    kept.append(domain)
                    present.add(domain)
                    added.append(domain)
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{secrets.token_hex(4)}")
            tmp.write_text("\n".join(kept) + "\n", encoding="utf-8")
            os.replace(tmp, self.path)
        return added, sorted(set(removed))

    def close(self) -> None:
        pass


def open_blocklist_source(url: str) -> BlocklistSource:
    """The source a URL names: ``file:///path/blocklist.txt`` or ``postgresql://…``."""
    parsed = parse_store_url(url, ("file", "postgresql"))
    if parsed.scheme == "postgresql":
        from lookup.shortener.blocklist_pg import PostgresBlocklistSource

        return PostgresBlocklistSource(parsed.url)
    path = unquote(urlsplit(parsed.url).path)
    if not path:
        raise ValueError(f"file URL {url!r} names no file (file:///path/blocklist.txt)")
    return FileBlocklistSource(path)
