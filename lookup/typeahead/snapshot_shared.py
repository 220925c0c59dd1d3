"""Typeahead snapshots in a shared version store (``postgresql://…``): no shared disk needed.

:class:`SharedSnapshotStore` is the typeahead's
:class:`~lookup.kit.snapshots.SnapshotStore` over a
:class:`~lookup.kit.versionstore.VersionStore`: each market is the line
``typeahead/<market>``, each version holds one file (``snapshot.trie``), and a refused
candidate is kept on the line ``typeahead-rejected/<market>`` beside its report
(``reason.json``), never activated. :meth:`~SharedSnapshotStore.open` copies a version
into this machine's cache (chunks verified, shared with the versions before it) and maps
it from there, as the directory store maps its own files. :meth:`~SharedSnapshotStore.wait`
returns when a market's ``current`` pointer moves (``LISTEN``/``NOTIFY`` on PostgreSQL),
which is how a shard server learns of a new snapshot without polling.

The embedded default stays the directory of trie files (:class:`~lookup.typeahead.
snapshot.TrieSnapshotStore`); ``open_snapshot_store`` picks this one for a ``postgresql://``
URL.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lookup import settings
from lookup.errors import NotFound
from lookup.kit.engines.storeurl import StoreUrl
from lookup.kit.versionstore import Pointer, VersionStore, open_version_store
from lookup.kit.versionstore.cache import LocalCache
from lookup.typeahead.snapshot import _MARKET_RE, _VERSION_RE, Snapshot

__all__ = ["FILE", "REJECTED", "SERVED", "SharedSnapshotStore", "default_cache_dir"]

#: The line prefixes of served and of refused snapshots, and the one file of a version.
SERVED = "typeahead/"
REJECTED = "typeahead-rejected/"
FILE = "snapshot.trie"


def default_cache_dir() -> Path:
    """Where fetched snapshots are kept: the ``typeahead_snapshot_cache`` setting, or a
    directory of this user's under the system's temporary directory."""
    chosen = str(settings.get("typeahead_snapshot_cache") or "").strip()
    if chosen:
        return Path(chosen).expanduser()
    return Path(tempfile.gettempdir()) / f"lookup-snapshot-cache-{os.getuid()}"


class SharedSnapshotStore:
    """Typeahead snapshots as versions of a version store (see the module docstring)."""

    def __init__(
        self, versions: VersionStore, *, keep: int = 5, cache_dir: str | os.PathLike[str] | None
    ) -> None:
        self.versions_store = versions
        self.keep = keep
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()

    @classmethod
    def from_url(
        cls, url: StoreUrl | str, *, keep: int = 5, cache_dir: str | os.PathLike[str] | None = None
    ) -> SharedSnapshotStore:
        """The store in the version store ``url`` names (``postgresql://…``)."""
        text = url.url if isinstance(url, StoreUrl) else url
        return cls(open_version_store(text), keep=keep, cache_dir=cache_dir)

    @staticmethod
    def line(market: str) -> str:
        """The version-store line of a market (``ValueError`` for a malformed market)."""
        if not _MARKET_RE.fullmatch(market):
            raise ValueError(f"not a market: {market!r}")
        return SERVED + market

    @staticmethod
    def _check(version: str) -> str:
        if not _VERSION_RE.match(version):
            raise ValueError(f"not a snapshot version: {version!r}")
        return version

    def names(self) -> list[str]:
        """Markets with at least one stored snapshot."""
        return [
            line[len(SERVED) :] for line in self.versions_store.lines() if line.startswith(SERVED)
        ]

    def versions(self, market: str) -> list[str]:
        """Stored versions of a market, oldest first."""
        return self.versions_store.versions(self.line(market))

    def current(self, market: str) -> str | None:
        """The version a market serves."""
        return self.versions_store.current(self.line(market))

    def pointer(self, market: str) -> Pointer:
        """A market's pointer (current, previous, swap serial)."""
        return self.versions_store.pointer(self.line(market))

    def wait(self, market: str, seen: int | None, timeout: float) -> Pointer:
        """The market's pointer once its serial differs from ``seen`` (or at ``timeout``)."""
        return self.versions_store.wait(self.line(market), seen, timeout)

    def open(self, market: str, version: str | None = None) -> Snapshot | None:
        """Fetch a version into the local cache (checked chunk by chunk) and load it."""
        version = version or self.current(market)
        if version is None:
            return None
        line = self.line(market)
        try:
            d = self.versions_store.fetch(line, self._check(version), self.cache_dir, (FILE,))
        except LookupError:
            raise NotFound(f"no snapshot {version} for {market}") from None
        snap = Snapshot(d / FILE)
        # the cache holds what the store holds, no more (an open snapshot keeps its file)
        cache = LocalCache(self.cache_dir, self.versions_store.describe())
        cache.evict(line, [*self.versions(market), version])
        return snap

    def publish(self, market: str, version: str, source: str | os.PathLike[str]) -> None:
        """Store a checked file as ``version`` and make it current (one transaction), then
        drop the source and the versions beyond retention."""
        line = self.line(market)
        self.versions_store.publish(
            line, self._check(version), {FILE: source}, {"market": market}, activate=True
        )
        Path(source).unlink(missing_ok=True)
        self.versions_store.gc(line, self.keep)

    def activate(self, market: str, version: str) -> None:
        """Swap ``current`` to a stored version; ``NotFound`` if it is not stored."""
        try:
            self.versions_store.activate(self.line(market), self._check(version))
        except LookupError:
            raise NotFound(f"no snapshot {version} for {market}") from None

    def rollback(self, market: str) -> str:
        """Make the version current before the last swap current again; returns it."""
        previous = self.pointer(market).previous
        if previous is None:
            raise NotFound(f"{market} has no previous snapshot to roll back to", code="NO_PREVIOUS")
        if previous not in self.versions(market):
            raise NotFound(f"{previous} was pruned from the store", code="NO_PREVIOUS")
        self.activate(market, previous)
        return previous

    def reject(
        self,
        market: str,
        version: str,
        source: str | os.PathLike[str],
        reason: Mapping[str, Any],
    ) -> None:
        """Keep a refused file with its report on the market's rejected line."""
        self.line(market)
        files = {FILE: source, "reason.json": json.dumps(dict(reason), indent=2).encode()}
        self.versions_store.publish(REJECTED + market, self._check(version), files)
        Path(source).unlink(missing_ok=True)

    def describe(self) -> str:
        """The version store's address (never a password)."""
        return self.versions_store.describe()

    def close(self) -> None:
        """Let go of the version store's connections."""
        self.versions_store.close()
