"""The search shard servers of ``lookup up --backend …,etcd``.

When the fleet has etcd and a search index is built, it starts
``search_fleet_replicas`` (default 2) ``lookup search serve-shard --register`` processes
per shard of the index beside the API workers — each on a free port, registered in the
fleet's etcd under its lease — and sets ``LOOKUP_SEARCH_SHARDS`` in the workers'
environment, so every worker's coordinator follows that membership
(:mod:`lookup.search.cluster`) instead of opening the shards itself. Without etcd, or
with no index yet, search stays in each worker's process as before. ``lookup search
serve-shard --register`` run by hand (here or on another machine given the etcd and the
index) joins the same cluster.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lookup import settings


@dataclass(frozen=True)
class SearchShards:
    """Which shard servers a fleet starts: ``shards`` × ``replicas``, registered in ``etcd``."""

    etcd: str
    index: str
    shards: int
    replicas: int

    @classmethod
    def plan(cls, data_dir: Path, etcd: str | None) -> SearchShards | None:
        """The shard servers to start, or None (no etcd, no replicas, no built index)."""
        replicas = int(settings.get("search_fleet_replicas"))
        if not etcd or replicas < 1:
            return None
        from lookup.search.location import index_location

        store = str(settings.get("search_index_store") or "")
        try:
            manifest = index_location(Path(data_dir) / "search", store or None).current()
        except Exception:  # noqa: BLE001 - a store out of reach: search stays in-process
            return None
        if manifest is None:
            return None
        index = store or str(Path(data_dir) / "search")
        return cls(etcd, index, int(manifest.shards), replicas)

    def environment(self) -> dict[str, str]:
        """What the API workers need to follow the shard servers."""
        return {"LOOKUP_SEARCH_SHARDS": self.etcd}

    def argv(self, cli: list[str], shard: int, replica: int) -> list[str]:
        """One shard server's command line."""
        return [*cli, "search", "serve-shard", "--index", self.index, "--shard", str(shard),
                "--replica", str(replica), "--register", "--etcd", self.etcd]  # fmt: skip

    def start(self, spawn: Callable[[str, list[str], dict[str, str]], Any],
              env: dict[str, str], cli: list[str]) -> None:  # fmt: skip
        """Start every shard server through the fleet's ``spawn(name, argv, env)``."""
        for s in range(self.shards):
            for r in range(self.replicas):
                spawn(f"search shard {s} replica {r}", self.argv(cli, s, r), env)

    def wait_registered(self, timeout: float = 90.0, stopping: Any = None) -> int:
        """Wait until every shard server is in the membership; how many are."""
        from lookup.kit.engines.etcd import etcd_client
        from lookup.search.membership import read_members

        want = self.shards * self.replicas
        client = etcd_client(self.etcd, timeout=2.0)
        deadline = time.monotonic() + timeout
        seen = 0
        while time.monotonic() < deadline and not (stopping is not None and stopping.is_set()):
            try:
                seen = len(read_members(client)["members"])
            except Exception:  # noqa: BLE001 - etcd still starting: look again
                seen = 0
            if seen >= want:
                break
            time.sleep(0.2)
        return seen

    def describe(self) -> dict[str, Any]:
        """For the fleet's state file."""
        return {"etcd": self.etcd, "shards": self.shards, "replicas": self.replicas}


__all__ = ["SearchShards"]
