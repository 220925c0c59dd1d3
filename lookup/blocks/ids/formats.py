"""128-bit ids that need no coordination at all: UUIDv7 (RFC 9562), ULID and UUIDv4.

Written by hand because they are the subject; the tests parse ours with established
libraries (``uuid6``, ``python-ulid``) and check that both agree on the timestamp and
the order.

* **UUIDv7**: 48 bits of Unix ms | version 7 | 12 bits ``rand_a`` | variant ``10`` |
  62 bits ``rand_b``. Within one millisecond ``rand_a`` is a counter (RFC 9562 §6.2,
  method 1, "fixed bit-length dedicated counter", seeded with its top bit clear), so
  ids from one generator strictly increase; when the counter runs out the generator
  borrows the next millisecond, and it never steps back when the clock does.
* **ULID**: 48 bits of Unix ms | 80 random bits, written as 26 Crockford base32
  characters. Within one millisecond the random part is incremented by one (the
  spec's monotonic mode).
* **UUIDv4**: 122 random bits with the version and variant set — the unsorted anchor.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable

from lookup.blocks.ids.snowflake import Clock, wall_clock_ms
from lookup.errors import InvalidInput

__all__ = [
    "CROCKFORD32",
    "ULIDGenerator",
    "UUIDv7Generator",
    "decode_crockford",
    "encode_crockford",
    "ulid_timestamp_ms",
    "uuid4_by_hand",
    "uuid7_timestamp_ms",
]

Random = Callable[[int], bytes]

_MS_MASK = (1 << 48) - 1
_RAND_A_MASK = 0xFFF
_RAND_B_MASK = (1 << 62) - 1
_VERSION_7 = 0x7 << 76
_VARIANT_RFC = 0b10 << 62


class UUIDv7Generator:
    """RFC 9562 UUIDv7 with a 12-bit per-millisecond counter; thread-safe."""

    #: Random bytes drawn from the OS at a time (one system call per 409 ids, not per id).
    POOL_BYTES = 4090

    def __init__(self, clock: Clock = wall_clock_ms, random: Random = os.urandom) -> None:
        self._clock = clock
        self._random = random
        self._lock = threading.Lock()
        self._last_ms = -1
        self._counter = 0
        self._pool = b""
        self._at = 0

    def next_int(self) -> int:
        """The next UUIDv7 as a 128-bit integer."""
        with self._lock:
            if self._at + 10 > len(self._pool):
                self._pool, self._at = self._random(self.POOL_BYTES), 0
            rand = int.from_bytes(self._pool[self._at : self._at + 10], "big")
            self._at += 10
            ms = self._clock() & _MS_MASK
            if ms > self._last_ms:
                self._last_ms, self._counter = ms, (rand >> 64) & 0x7FF  # top bit clear
            else:  # same ms, or the clock went back: count on in the last ms
                self._counter += 1
                if self._counter > _RAND_A_MASK:  # counter spent: borrow the next ms
                    self._last_ms, self._counter = self._last_ms + 1, 0
            ms, counter = self._last_ms, self._counter
        return (ms << 80) | _VERSION_7 | (counter << 64) | _VARIANT_RFC | (rand & _RAND_B_MASK)

    def next_uuid(self) -> uuid.UUID:
        """The next UUIDv7 as a :class:`uuid.UUID`."""
        return uuid.UUID(int=self.next_int())

    def next_bytes(self) -> bytes:
        """The next UUIDv7 as 16 big-endian bytes (what a BLOB key stores)."""
        return self.next_int().to_bytes(16, "big")


def uuid7_timestamp_ms(value: uuid.UUID | int) -> int:
    """The Unix ms in a UUIDv7's top 48 bits."""
    n = value.int if isinstance(value, uuid.UUID) else value
    return n >> 80


#: Crockford's base32: digits and letters without I, L, O, U.
CROCKFORD32 = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_CROCKFORD_INDEX = {c: i for i, c in enumerate(CROCKFORD32)}
_CROCKFORD_INDEX.update({c.lower(): i for c, i in list(_CROCKFORD_INDEX.items())})
_CROCKFORD_INDEX.update({"I": 1, "i": 1, "L": 1, "l": 1, "O": 0, "o": 0})


def encode_crockford(n: int, width: int = 26) -> str:
    """``n`` as ``width`` Crockford base32 characters (26 for a 128-bit ULID)."""
    if not 0 <= n < 1 << (5 * width):
        raise InvalidInput(f"{n} does not fit in {width} base32 characters")
    out = []
    for _ in range(width):
        n, r = divmod(n, 32)
        out.append(CROCKFORD32[r])
    return "".join(reversed(out))


def decode_crockford(text: str) -> int:
    """The number a Crockford base32 string stands for (case-insensitive, I/L→1, O→0)."""
    n = 0
    for ch in text:
        try:
            n = n * 32 + _CROCKFORD_INDEX[ch]
        except KeyError:
            raise InvalidInput(f"{ch!r} is not a Crockford base32 character") from None
    if len(text) == 26 and n >= 1 << 128:
        raise InvalidInput(f"{text!r} is larger than 128 bits")
    return n


class ULIDGenerator:
    """Monotonic ULIDs: 48-bit ms | 80 random bits, incremented within a millisecond."""

    def __init__(self, clock: Clock = wall_clock_ms, random: Random = os.urandom) -> None:
        self._clock = clock
        self._random = random
        self._lock = threading.Lock()
        self._last_ms = -1
        self._rand = 0

    def next_int(self) -> int:
        """The next ULID as a 128-bit integer."""
        with self._lock:
            ms = self._clock() & _MS_MASK
            if ms > self._last_ms:
                self._last_ms, self._rand = ms, int.from_bytes(self._random(10), "big")
            else:
                self._rand += 1
                if self._rand >> 80:  # 2^80 ids in one ms: the spec says fail
                    raise OverflowError("ULID randomness exhausted in this millisecond")
            return (self._last_ms << 80) | self._rand

    def next_str(self) -> str:
        """The next ULID as its 26-character text."""
        return encode_crockford(self.next_int())

    def next_bytes(self) -> bytes:
        """The next ULID as 16 big-endian bytes."""
        return self.next_int().to_bytes(16, "big")


def ulid_timestamp_ms(value: str | int) -> int:
    """The Unix ms in a ULID (text or integer)."""
    n = decode_crockford(value) if isinstance(value, str) else value
    return n >> 80


def uuid4_by_hand(random: Random = os.urandom) -> int:
    """A random (version 4) UUID as an integer: 122 random bits, version and variant set."""
    n = int.from_bytes(random(16), "big")
    n &= ~(0xF << 76) & ~(0b11 << 62)
    return n | (0x4 << 76) | _VARIANT_RFC
