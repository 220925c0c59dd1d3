"""A Bloom filter: "definitely not seen" or "probably seen" in about 10 bits per item.

Sized from the number of items it must hold and the false-positive rate wanted:

    m = -n · ln(p) / (ln 2)²   bits        k = (m / n) · ln 2   hash functions

The k bit positions come from one 128-bit BLAKE2b digest split into two 64-bit
halves and combined by double hashing (Kirsch–Mitzenmacher): ``h1 + i·h2 mod m``,
which is as good as k independent hashes for a Bloom filter and costs one digest.
It never answers "not seen" for an item that was added; it answers "seen" for an
item that was not with probability about ``(1 - e^(-k·n/m))^k``.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable

__all__ = ["BloomFilter", "optimal_size"]


def optimal_size(capacity: int, fp_rate: float) -> tuple[int, int]:
    """Bits ``m`` and hash count ``k`` for ``capacity`` items at ``fp_rate`` false positives."""
    if capacity <= 0:
        raise ValueError(f"capacity must be positive, got {capacity}")
    if not 0.0 < fp_rate < 1.0:
        raise ValueError(f"fp_rate must be between 0 and 1, got {fp_rate}")
    m = math.ceil(-capacity * math.log(fp_rate) / (math.log(2) ** 2))
    k = max(1, round(m / capacity * math.log(2)))
    return m, k


class BloomFilter:
    """A fixed-size Bloom filter over strings or bytes.

    It cannot delete and grows less accurate as it fills past ``capacity``: size it
    for the items you expect and rebuild it (from the durable store) rather than
    patch it.
    """

    __slots__ = ("capacity", "fp_rate", "num_bits", "num_hashes", "_bits", "_count")

    def __init__(self, capacity: int, fp_rate: float = 0.01) -> None:
        self.capacity = capacity
        self.fp_rate = fp_rate
        self.num_bits, self.num_hashes = optimal_size(capacity, fp_rate)
        self._bits = bytearray((self.num_bits + 7) // 8)
        self._count = 0

    # -- hashing ---------------------------------------------------------------
    def _positions(self, item: str | bytes) -> list[int]:
        data = item.encode("utf-8") if isinstance(item, str) else item
        digest = hashlib.blake2b(data, digest_size=16).digest()
        h1 = int.from_bytes(digest[:8], "little")
        h2 = int.from_bytes(digest[8:], "little") | 1  # odd, so the k probes differ
        m = self.num_bits
        return [(h1 + i * h2) % m for i in range(self.num_hashes)]

    # -- the two operations ----------------------------------------------------
    def add(self, item: str | bytes) -> bool:
        """Add ``item``; returns True when it was definitely new (some bit was off)."""
        bits = self._bits
        new = False
        for pos in self._positions(item):
            byte, mask = pos >> 3, 1 << (pos & 7)
            if not bits[byte] & mask:
                bits[byte] |= mask
                new = True
        if new:
            self._count += 1
        return new

    def might_contain(self, item: str | bytes) -> bool:
        """False means definitely never added; True means probably added."""
        bits = self._bits
        return all(bits[pos >> 3] & (1 << (pos & 7)) for pos in self._positions(item))

    __contains__ = might_contain

    def update(self, items: Iterable[str | bytes]) -> None:
        """Add every item of ``items``."""
        for item in items:
            self.add(item)

    # -- accounting ------------------------------------------------------------
    @property
    def added(self) -> int:
        """How many adds set at least one new bit (≈ distinct items added)."""
        return self._count

    @property
    def size_bytes(self) -> int:
        """Memory held by the bit array."""
        return len(self._bits)

    def bits_set(self) -> int:
        """How many of the ``num_bits`` bits are on."""
        return sum(bin(b).count("1") for b in self._bits)

    def expected_fp_rate(self, n: int | None = None) -> float:
        """The theoretical false-positive rate after ``n`` items (default: items added)."""
        n = self._count if n is None else n
        return (1.0 - math.exp(-self.num_hashes * n / self.num_bits)) ** self.num_hashes

    def __len__(self) -> int:
        return self._count

    def __repr__(self) -> str:
        return (
            f"BloomFilter(capacity={self.capacity}, fp_rate={self.fp_rate}, "
            f"bits={self.num_bits}, hashes={self.num_hashes}, added={self._count})"
        )
