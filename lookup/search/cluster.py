"""An API worker's search over shard servers that it finds in etcd (``search_shards``).

With the ``search_shards`` setting empty the search service answers from replicas in its
own process (the embedded default, unchanged). Set to ``etcd`` (the ``etcd_url``
setting) or an etcd URL, the worker's coordinator is a
:func:`~lookup.search.remote.remote_coordinator` with no members at first, fed by a
:class:`~lookup.search.membership.MembershipWatcher`: each replica that registers
(``lookup search serve-shard --register``) joins its shard's group, one whose lease
expires or that leaves cleanly is dropped, all without a restart. While etcd does not
answer the watcher keeps the members it last read, so queries go on to them.
"""

from __future__ import annotations

from typing import Any

from lookup import settings
from lookup.search.coordinator import Coordinator
from lookup.search.membership import MemberRecord, MembershipWatcher
from lookup.search.remote import RemoteShards, remote_coordinator


def shards_url(value: str | None = None) -> str:
    """The etcd URL the ``search_shards`` setting names ('' for in-process shards)."""
    raw = (settings.get("search_shards") if value is None else value) or ""
    raw = str(raw).strip()
    if raw.lower() == "etcd":
        url = str(settings.get("etcd_url") or "")
        if not url:
            raise ValueError("LOOKUP_SEARCH_SHARDS=etcd needs LOOKUP_ETCD_URL")
        return url
    if raw and not raw.startswith(("http://", "https://")):
        raise ValueError(f"LOOKUP_SEARCH_SHARDS is empty, 'etcd' or an etcd URL, not {raw!r}")
    return raw


class ClusterSearch:
    """A remote coordinator and the membership watcher that keeps its members current."""

    def __init__(self, etcd_url: str, **options: Any) -> None:
        """``options`` are :class:`~lookup.search.coordinator.Coordinator`'s."""
        self.etcd_url = etcd_url
        self.coordinator: Coordinator
        self.shards: RemoteShards
        self.coordinator, self.shards = remote_coordinator([], **options)
        self.watcher = MembershipWatcher.for_url(etcd_url, on_change=self._apply)

    def _apply(self, members: list[MemberRecord]) -> None:
        self.shards.set_members([m.to_dict() for m in members])

    def start(self) -> None:
        """Read the membership once and keep following it."""
        self.watcher.start()

    def stop(self) -> None:
        """Stop following the membership (the coordinator is closed by its service)."""
        self.watcher.stop()

    def status(self) -> dict[str, Any]:
        """The members as this worker sees them: etcd's view, staleness, request counts."""
        view = self.watcher.snapshot()
        return {
            "etcd": self.etcd_url,
            "stale": view["stale"],
            "ageSeconds": view["ageSeconds"],
            "revision": view["revision"],
            "changes": view["changes"],
            "error": view["error"],
            "members": self.shards.members(),
        }


def coordinator_options() -> dict[str, Any]:
    """The coordinator options an API worker takes from its settings (as in-process)."""
    return {
        "deadline_ms": settings.get("search_deadline_ms"),
        "track_total_hits": settings.get("search_track_total_hits"),
        "typo_below": settings.get("search_typo_below") if settings.get("search_typos") else 0,
    }


def cluster_search() -> ClusterSearch | None:
    """The cluster an API worker's search follows, or None for in-process shards."""
    url = shards_url()
    return ClusterSearch(url, **coordinator_options()) if url else None


__all__ = ["ClusterSearch", "cluster_search", "coordinator_options", "shards_url"]
