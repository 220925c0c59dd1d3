"""No shared tier at all (``none:``, the embedded default): every read misses, writes are
dropped, and nothing can be missed, so a process's in-process copies stay trusted."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lookup.kit.engines.storeurl import StoreUrl
from lookup.kit.sharedcache import CacheRead

__all__ = ["NullSharedCache"]


class NullSharedCache:
    """No shared tier at all: every ``get`` misses, writes are dropped."""

    name = "none"

    @classmethod
    def from_url(cls, url: StoreUrl, **options: Any) -> NullSharedCache:
        """From ``none:``; it takes no ``options`` (any are ignored)."""
        return cls()

    def get(self, key: str) -> bytes | None:
        """Always a miss."""
        return None

    def set(self, key: str, value: bytes, ttl: float) -> None:
        """Dropped."""

    def delete(self, key: str) -> None:
        """Nothing to invalidate."""

    def lookup(self, key: str) -> CacheRead:
        """A miss that must not be filled."""
        return CacheRead(None, None)

    def fill(self, key: str, value: bytes, ttl: float, token: Any, version: int) -> bool:
        """Nothing is kept."""
        return False

    def watch(self, fn: Callable[[str | None], None]) -> None:
        """No other process shares this tier: nothing to hear."""

    def listening(self) -> bool:
        """Nothing can be missed."""
        return True

    def stats(self) -> dict[str, Any]:
        """No counters of its own."""
        return {}

    def describe(self) -> str:
        """``none``."""
        return "none"
