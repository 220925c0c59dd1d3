"""The fleet as its coordinator sees it: live workers, the partitions each holds, epochs, expiry.

Read from etcd, the only authority on who holds what right now (the store's
``crawl_partitions`` says who was *granted* a partition last; etcd says whose lease is
alive): the membership keys ``/lookup/crawl/<crawl>/workers/<w>``, the partition keys
``…/parts/<p>`` (value: the worker; create revision: the grant's epoch) and each
worker's lease time-to-live. :func:`coordinator_owner` maps a host's address to its
partition's holder for the per-host health view (:mod:`lookup.crawler.health`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lookup.crawler.health import LeaseInfo
from lookup.crawler.partitions import partition_of

__all__ = ["FleetView", "WorkerView", "coordinator_owner", "fleet_view", "store_owner"]


@dataclass
class WorkerView:
    """One live worker: its lease's time left and the partitions it holds (part → epoch)."""

    name: str
    lease_id: int | None = None
    ttl_left: float | None = None  # seconds until its lease expires without a renewal
    partitions: dict[int, int] = field(default_factory=dict)

    @property
    def expires_at(self) -> float | None:
        return None if self.ttl_left is None else time.time() + self.ttl_left


@dataclass
class FleetView:
    """Every live worker and every held partition, read at ``at`` (wall clock)."""

    at: float
    workers: dict[str, WorkerView]
    holders: dict[int, tuple[str, int]]  # part -> (worker, epoch)

    def balance(self) -> dict[str, int]:
        """Partitions held per worker (live workers holding none count 0)."""
        return {w: len(v.partitions) for w, v in sorted(self.workers.items())}

    def to_json(self) -> dict[str, Any]:
        return {
            "at": self.at,
            "workers": [
                {
                    "worker": w.name,
                    "leaseTtlLeft": w.ttl_left,
                    "partitions": len(w.partitions),
                    "epochs": {str(p): e for p, e in sorted(w.partitions.items())},
                }
                for w in sorted(self.workers.values(), key=lambda v: v.name)
            ],
        }


def fleet_view(client: Any, crawl: str = "crawl") -> FleetView:
    """What etcd (an ``etcd3gw`` client) holds for the fleet named ``crawl`` now."""
    prefix = f"/lookup/crawl/{crawl}/"
    workers: dict[str, WorkerView] = {}
    for _value, meta in client.get_prefix(f"{prefix}workers/"):
        name = meta["key"].decode().rsplit("/", 1)[1]
        lease = int(meta.get("lease") or 0) or None
        workers[name] = WorkerView(name, lease)
    holders: dict[int, tuple[str, int]] = {}
    for value, meta in client.get_prefix(f"{prefix}parts/"):
        part = int(meta["key"].decode().rsplit("/", 1)[1])
        worker, epoch = value.decode(), int(meta["create_revision"])
        holders[part] = (worker, epoch)
        workers.setdefault(worker, WorkerView(worker)).partitions[part] = epoch
    for w in workers.values():
        if w.lease_id is not None:
            try:
                url = client.get_url("/kv/lease/timetolive")
                result = client.post(url, json={"ID": w.lease_id})
                w.ttl_left = float(result.get("TTL", -1))
            except Exception:  # noqa: BLE001 - a lease that vanished meanwhile: unknown
                w.ttl_left = None
    return FleetView(time.time(), workers, holders)


def coordinator_owner(view: FleetView, partitions: int) -> Callable[[str], LeaseInfo | None]:
    """An address's partition holder and epoch in ``view`` (``None``: a free partition)."""
    expiry = {w.name: w.expires_at for w in view.workers.values()}

    def owner(address: str) -> LeaseInfo | None:
        held = view.holders.get(partition_of(address, partitions))
        return None if held is None else LeaseInfo(held[0], held[1], expiry.get(held[0]))

    return owner


def store_owner(reader: Any) -> Callable[[str], LeaseInfo | None] | None:
    """An address's partition owner and epoch as the fleet's store last granted them
    (``crawl_partitions``), for a reader without the coordinator at hand; ``None`` for a
    crawl that is not a fleet's."""
    epochs = getattr(reader, "partition_epochs", None)
    if epochs is None:
        return None
    partitions = int(reader.meta().get("partitions") or 0)
    if partitions < 1:
        return None
    granted = epochs()

    def owner(address: str) -> LeaseInfo | None:
        held = granted.get(partition_of(address, partitions))
        return None if held is None else LeaseInfo(held[1], held[0])

    return owner
