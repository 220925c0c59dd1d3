"""The shortener's domain blocklist as a text file (``file:///…/blocklist.txt``): the
embedded default.

One domain per line with ``#`` comments, editable by hand; the stamp is the file's
modification time, size and inode. An edit through the API keeps the comments and other
lines: an ``flock`` on a lock file beside the list serialises editors across processes,
the file is re-read under the lock, and the new text written to a temporary file and
renamed over the list.
"""

from __future__ import annotations

import fcntl
import os
import secrets
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import unquote, urlsplit

from lookup.kit.engines.storeurl import StoreUrl
from lookup.shortener.blocklist import Clean

__all__ = ["TEMPLATE", "FileBlocklistSource"]

#: The header a new list file starts with.
TEMPLATE = (
    "# Domains the URL shortener refuses (and the scanner disables), one per line.\n"
    "# A domain blocks its subdomains too. Edits take effect within seconds.\n"
)


class FileBlocklistSource:
    """The blocklist as a text file (see the module docstring)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    @classmethod
    def from_url(cls, url: StoreUrl) -> FileBlocklistSource:
        """The list in the file ``url`` names (``file:///path/blocklist.txt``)."""
        path = unquote(urlsplit(url.url).path)
        if not path:
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
