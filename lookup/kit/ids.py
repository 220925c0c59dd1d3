"""Ids that need no coordination per id: base62 and a keyed permutation.

The URL shortener's keys are built from three parts, each usable on its own:

* an id from a **range lease** — the seam :mod:`lookup.kit.idblocks` (an
  :class:`~lookup.kit.idblocks.IdAllocator` takes blocks of consecutive ids from one
  counter row; :func:`~lookup.kit.idblocks.open_id_allocator` picks the backend from a
  URL). Its names are still importable from here for one release;
* :class:`FeistelPermutation` is a **keyed one-to-one map** of ``[0, n)`` onto
  itself (a balanced Feistel network over the smallest even power of two ``>= n``,
  with cycle-walking back into range), so consecutive ids give unrelated outputs
  and uniqueness needs no check: distinct inputs always give distinct outputs.
* :func:`encode_base62` / :func:`decode_base62` turn the result into short text.

:func:`load_or_create_secret` keeps the permutation's key in the data directory
(created once, mode 0600, :func:`lookup.kit.secrets.file.create_once`) so the mapping
survives restarts and is not in the code.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from pathlib import Path

from lookup.kit.idblocks import IdAllocator, IdBlock, open_id_allocator
from lookup.kit.lazy import lazy_exports
from lookup.kit.secrets.file import create_once

__all__ = [
    "BASE62_ALPHABET",
    "FeistelPermutation",
    "IdAllocator",
    "IdBlock",
    "decode_base62",
    "encode_base62",
    "is_base62",
    "load_or_create_secret",
    "open_id_allocator",
]

#: The id allocator seam's names are kept here for one release (now :mod:`lookup.kit.idblocks`);
#: its SQLite backend is imported only when the name is used (so not in ``__all__``).
__getattr__, __dir__ = lazy_exports(__name__, {"SqliteIdAllocator": "lookup.kit.idblocks.sqlite"})

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

    Creation is atomic (:func:`~lookup.kit.secrets.file.create_once`: a temporary file
    hard-linked into place), so two processes starting together agree on one secret.
    """
    data = create_once(path, lambda: secrets.token_bytes(nbytes))
    if len(data) < 16:
        raise ValueError(f"the secret in {Path(path)} is too short ({len(data)} bytes)")
    return data
