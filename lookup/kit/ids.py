"""Ids that need no coordination per id: base62, range leases and a keyed permutation.

The URL shortener's keys are built from three parts, each usable on its own:

* an :class:`IdAllocator` hands out **range leases** — blocks of consecutive ids taken
  from one allocator row with a single atomic ``UPDATE ... RETURNING``. A process
  spends its block in memory; a crash only leaves a gap, never a duplicate.
  :class:`SqliteIdAllocator` is the embedded one; :func:`open_id_allocator` picks the
  implementation from a URL (``sqlite:///path``; ``postgresql://…`` for the fleet's
  ``id_blocks`` row, :mod:`lookup.kit.ids_pg`).
* :class:`FeistelPermutation` is a **keyed one-to-one map** of ``[0, n)`` onto
  itself (a balanced Feistel network over the smallest even power of two ``>= n``,
  with cycle-walking back into range), so consecutive ids give unrelated outputs
  and uniqueness needs no check: distinct inputs always give distinct outputs.
* :func:`encode_base62` / :func:`decode_base62` turn the result into short text.

:func:`load_or_create_secret` keeps the permutation's key in the data directory
(created once, mode 0600) so the mapping survives restarts and is not in the code.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from lookup.kit.dblock import writer_lock
from lookup.kit.sqlite import connect
from lookup.kit.storeurl import parse_store_url

#: Digits, then lower case, then upper case: ``0 → "0"``, ``61 → "Z"``.
BASE62_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_BASE62_INDEX = {ch: i for i, ch in enumerate(BASE62_ALPHABET)}


def encode_base62(n: int, width: int | None = None) -> str:
    """Base62 text for ``n >= 0``, left-padded with ``"0"`` to ``width`` characters.

    Raises ``ValueError`` if ``n`` is negative or does not fit in ``width`` digits.
    """
    if n < 0:
        raise ValueError(f"cannot encode a negative number: {n}")
    digits: list[str] = []
    while n:
        n, r = divmod(n, 62)
        digits.append(BASE62_ALPHABET[r])
    text = "".join(reversed(digits)) or "0"
    if width is not None:
        if len(text) > width:
            raise ValueError(f"{text!r} does not fit in {width} base62 digits")
        text = text.rjust(width, "0")
    return text


def decode_base62(text: str) -> int:
    """The number a base62 string stands for; ``ValueError`` on any other character."""
    if not text:
        raise ValueError("empty base62 string")
    n = 0
    for ch in text:
        try:
            n = n * 62 + _BASE62_INDEX[ch]
        except KeyError:
            raise ValueError(f"{ch!r} is not a base62 character") from None
    return n


def is_base62(text: str) -> bool:
    """True when every character of a non-empty ``text`` is in the base62 alphabet."""
    return bool(text) and all(ch in _BASE62_INDEX for ch in text)


class FeistelPermutation:
    """A keyed bijection of ``[0, domain)``: a balanced Feistel network with cycle-walking.

    The network permutes ``[0, 2**(2*h))`` where ``2**(2*h)`` is the smallest even power
    of two ``>= domain``: the value is split into two ``h``-bit halves and each round
    does ``L, R = R, L ^ F_k(round, R)`` with ``F`` a keyed BLAKE2b. Every round is
    invertible whatever ``F`` is, so the network is a permutation. Outputs that land
    in ``[domain, 2**(2*h))`` are fed through again (cycle-walking) until they fall in
    range; because a permutation's cycles are closed, this ends and stays one-to-one.
    With ``domain = 62**7`` the network has 42 bits and ≈1.25 passes are needed on
    average.
    """

    def __init__(self, domain: int, key: bytes, rounds: int = 6) -> None:
        if domain < 2:
            raise ValueError("the domain must hold at least two values")
        if rounds < 3:
            raise ValueError("a Feistel network needs at least three rounds to scramble")
        if len(key) < 16:
            raise ValueError("use a key of at least 16 bytes")
        self.domain = domain
        self.rounds = rounds
        bits = max(2, (domain - 1).bit_length())
        self.half_bits = (bits + 1) // 2
        self._mask = (1 << self.half_bits) - 1
        self._half_bytes = (self.half_bits + 7) // 8
        # One keyed hasher per round, copied per call (cheaper than re-keying).
        self._round_hashers = [
            hashlib.blake2b(key=key, digest_size=8, person=b"feistel" + bytes([i]))
            for i in range(rounds)
        ]

    def _f(self, round_index: int, half: int) -> int:
        h = self._round_hashers[round_index].copy()
        h.update(half.to_bytes(self._half_bytes, "big"))
        return int.from_bytes(h.digest(), "big") & self._mask

    def _network(self, x: int) -> int:
        left, right = x >> self.half_bits, x & self._mask
        for i in range(self.rounds):
            left, right = right, left ^ self._f(i, right)
        return (left << self.half_bits) | right

    def _network_inverse(self, y: int) -> int:
        left, right = y >> self.half_bits, y & self._mask
        for i in reversed(range(self.rounds)):
            left, right = right ^ self._f(i, left), left
        return (left << self.half_bits) | right

    def permute(self, x: int) -> int:
        """The image of ``x`` (``0 <= x < domain``); distinct inputs never share one."""
        self._check(x)
        y = self._network(x)
        while y >= self.domain:
            y = self._network(y)
        return y

    def invert(self, y: int) -> int:
        """The ``x`` with ``permute(x) == y``."""
        self._check(y)
        x = self._network_inverse(y)
        while x >= self.domain:
            x = self._network_inverse(x)
        return x

    def _check(self, value: int) -> None:
        if not 0 <= value < self.domain:
            raise ValueError(f"{value} is outside the domain [0, {self.domain})")


def load_or_create_secret(path: str | os.PathLike[str], nbytes: int = 32) -> bytes:
    """The secret stored at ``path``; created once (random, file mode 0600) if missing.

    Creation is atomic (write a temporary file, then hard-link it into place), so two
    processes starting together agree on one secret.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.exists():
        tmp = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(secrets.token_bytes(nbytes))
                fh.flush()
                os.fsync(fh.fileno())
            try:
                os.link(tmp, target)
            except FileExistsError:
                pass  # another process won the race; use its secret
        finally:
            tmp.unlink(missing_ok=True)
    data = target.read_bytes()
    if len(data) < 16:
        raise ValueError(f"the secret in {target} is too short ({len(data)} bytes)")
    return data


@dataclass(frozen=True)
class IdBlock:
    """A block of ids ``[start, end)`` taken from the allocator row."""

    start: int
    end: int


@runtime_checkable
class IdAllocator(Protocol):
    """What a key minter needs from an id source: blocks of ids no other allocator gets.

    ``lease()`` takes the next block from the shared counter; ``next_id()`` spends the
    current block (leasing another when it runs out); ``leases_taken`` counts leases for
    the metrics; ``close()`` lets go of the connection (the next lease reopens it).
    """

    leases_taken: int

    def lease(self) -> IdBlock:
        """Take the next block ``[start, end)``; two allocators never get overlapping ones."""
        ...

    def next_id(self) -> int:
        """The next unused id; raises ``OverflowError`` past the allocator's limit."""
        ...

    def close(self) -> None:
        """Release the connection; a later lease reopens it."""
        ...


class SqliteIdAllocator:
    """Range-leased ids from one allocator row in a SQLite database.

    ``lease()`` moves the row forward by ``block_size`` in one atomic
    ``UPDATE ... RETURNING`` statement, so concurrent processes (each with its own
    allocator) always get disjoint blocks. ``next_id()`` spends the current block in
    memory and leases a new one when it runs out. Ids left in a block when a process
    dies are never handed out again: a gap, never a duplicate.
    """

    def __init__(
        self,
        db_path: str | os.PathLike[str],
        name: str = "default",
        *,
        block_size: int = 10_000,
        limit: int | None = None,
        start: int = 0,
    ) -> None:
        if block_size < 1:
            raise ValueError("block_size must be at least 1")
        self.db_path = str(db_path)
        self.name = name
        self.block_size = block_size
        self.limit = limit
        self.leases_taken = 0
        self._lock = threading.Lock()
        self._db_lock = threading.Lock()
        self._next = 0
        self._end = 0
        self._start = start
        self._conn: sqlite3.Connection | None = None
        with self._db_lock, writer_lock(self.db_path):
            self._connect()

    def _connect(self) -> sqlite3.Connection:
        if self._conn is None:
            # The table shares a file whose journal mode its owner sets (the link store).
            conn = connect(self.db_path, wal=False, synchronous=None, busy_timeout_ms=10_000)
            conn.execute(
                "CREATE TABLE IF NOT EXISTS id_allocator ("
                " name TEXT PRIMARY KEY, next_id INTEGER NOT NULL)"
            )
            conn.execute(
                "INSERT INTO id_allocator(name, next_id) VALUES (?, ?)"
                " ON CONFLICT(name) DO NOTHING",
                (self.name, self._start),
            )
            self._conn = conn
        return self._conn

    def lease(self) -> IdBlock:
        """Take the next block from the allocator row (one atomic statement)."""
        with self._db_lock, writer_lock(self.db_path):
            rows = (
                self._connect()
                .execute(
                    "UPDATE id_allocator SET next_id = next_id + ?"
                    " WHERE name = ? RETURNING next_id",
                    (self.block_size, self.name),
                )
                .fetchall()
            )  # step to the end, so the statement completes and commits
            if not rows:
                raise RuntimeError(f"allocator row {self.name!r} disappeared")
            end = int(rows[0][0])
            self.leases_taken += 1
        return IdBlock(end - self.block_size, end)

    def next_id(self) -> int:
        """The next unused id; thread-safe. Raises ``OverflowError`` past ``limit``."""
        with self._lock:
            if self._next >= self._end:
                lease = self.lease()
                self._next, self._end = lease.start, lease.end
            value = self._next
            if self.limit is not None and value >= self.limit:
                raise OverflowError(f"id space exhausted: {value} >= {self.limit}")
            self._next += 1
            return value

    def remaining_in_block(self) -> int:
        """How many ids of the current lease are still unspent in this process."""
        with self._lock:
            return max(0, self._end - self._next)

    def close(self) -> None:
        """Close the connection (reopened on the next lease); the current block stays usable."""
        with self._db_lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def open_id_allocator(url: str, name: str = "default", **options: Any) -> IdAllocator:
    """The id allocator a URL names: ``sqlite:///path`` (the row ``name`` in that file) or
    ``postgresql://…`` (the ``id_blocks`` row ``name``, :mod:`lookup.kit.ids_pg`).

    ``options`` go to the implementation (``block_size``, ``limit``, ``start``).
    """
    parsed = parse_store_url(url, ("sqlite", "postgresql"))
    if parsed.scheme == "postgresql":
        from lookup.kit.ids_pg import PostgresIdAllocator

        return PostgresIdAllocator(parsed.url, name, **options)
    assert parsed.path is not None
    return SqliteIdAllocator(parsed.path, name, **options)
