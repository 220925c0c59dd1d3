"""Work split into partitions, and the fencing token every partition write carries.

A host's partition is ``hash(address) mod P``: the host's *address*, not its name, so
every name on one shared-hosting address lands in the same partition and so with the
same worker — whose frontier already allows one request per address at a time. That is
how the fleet keeps "one in flight per address" without a second lock service: the
partition lease that fences a host's state fences its address too (see
:mod:`lookup.crawler.worker`). ``P`` (the ``crawl_partitions`` setting, 256) is much
larger than the number of workers, so work moves in small pieces.

Every grant of a partition carries an **epoch** that only grows (etcd's revision of the
grant). A worker's writes for a partition run with :data:`current_fence` set to
``(partition, epoch)``; the store checks it in the same transaction as the write and
raises :class:`FencedOut` when a newer epoch has been granted since.
"""

from __future__ import annotations

import hashlib
from contextvars import ContextVar
from dataclasses import dataclass

from lookup.crawler.state import CrawlStateError

__all__ = ["Fence", "FencedOut", "current_fence", "partition_of"]


def partition_of(key: str, partitions: int) -> int:
    """The partition of ``key`` (a host's address): a stable hash mod ``partitions``.

    Stable across processes and machines (blake2b, not Python's salted ``hash``).
    """
    if partitions < 1:
        raise ValueError(f"partitions must be at least 1, not {partitions}")
    digest = hashlib.blake2b(key.lower().encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % partitions


@dataclass(frozen=True)
class Fence:
    """The partition a write is for and the epoch its writer holds."""

    partition: int
    epoch: int


class FencedOut(CrawlStateError):
    """A write carried an epoch older than the partition's current one: the writer lost it."""

    def __init__(self, fence: Fence, current: int | None, owner: str | None) -> None:
        self.fence = fence
        self.current = current
        self.owner = owner
        super().__init__(
            f"partition {fence.partition}: write with epoch {fence.epoch} refused, the store "
            f"holds epoch {current} (owner {owner})"
        )


#: The fence of the writes made in this context (an asyncio task has its own copy).
current_fence: ContextVar[Fence | None] = ContextVar("current_fence", default=None)
