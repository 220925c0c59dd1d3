"""Every row of the seed's id table as something that makes ids, with its declared traits.

The traits (coordination, sortable, size, weakness) are the seed's; the measured
columns (ids/s, index locality) come from the benchmark and the notebook, which make
ids through :func:`make_kind`. A kind makes database *keys*: an ``int`` for the 64-bit
kinds, 16 big-endian ``bytes`` for the 128-bit ones (what a ``BLOB``/``uuid`` key holds;
big-endian so byte order is numeric order).
"""

from __future__ import annotations

import itertools
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lookup.blocks.ids.formats import ULIDGenerator, UUIDv7Generator, uuid4_by_hand
from lookup.blocks.ids.snowflake import SEED_LAYOUT, Snowflake
from lookup.kit.engines.storeurl import sqlite_url
from lookup.kit.idblocks import open_id_allocator

__all__ = [
    "ID_KINDS",
    "LAYOUTS",
    "IdKind",
    "bit_fields",
    "library_uuid4",
    "make_kind",
    "timestamp_ms",
]

Key = int | bytes


@dataclass(frozen=True)
class IdKind:
    """One approach of the seed's table."""

    name: str
    coordination: str
    sortable: bool
    bits: int
    weakness: str


ID_KINDS: dict[str, IdKind] = {
    k.name: k
    for k in [
        IdKind("sequential int", "every insert", True, 64, "single writer, write ceiling"),
        IdKind("UUIDv4", "none", False, 128, "index fragmentation, size"),
        IdKind("UUIDv7", "none", True, 128, "size; still index-friendly"),
        IdKind("ULID", "none", True, 128, "size; still index-friendly"),
        IdKind("ticket server", "every batch", True, 64, "central dependency"),
        IdKind("Snowflake", "worker id only", True, 64, "clock dependency"),
    ]
}


def _uuid4_key() -> bytes:
    return uuid4_by_hand().to_bytes(16, "big")


def make_kind(
    name: str, *, workdir: str | Path | None = None, worker: int = 1, block_size: int = 1_000
) -> Callable[[], Key]:
    """A zero-argument maker of keys for id kind ``name``.

    ``sequential int`` stands for the database's auto-increment (a counter here: the
    anchor); ``ticket server`` is the shortener's range leases
    (:class:`~lookup.kit.ids.IdAllocator`, one SQLite row, ``block_size`` ids a lease)
    in ``workdir`` (a temporary directory if none).
    """
    if name == "sequential int":
        return itertools.count(1).__next__
    if name == "UUIDv4":
        return _uuid4_key
    if name == "UUIDv7":
        return UUIDv7Generator().next_bytes
    if name == "ULID":
        return ULIDGenerator().next_bytes
    if name == "ticket server":
        where = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="lookup-ticket-"))
        return open_id_allocator(sqlite_url(where / "tickets.db"), block_size=block_size).next_id
    if name == "Snowflake":
        return Snowflake(worker).next_id
    raise ValueError(f"unknown id kind {name!r}; choose from {', '.join(ID_KINDS)}")


#: Each kind's fields, high bits first: (name, width in bits).
LAYOUTS: dict[str, list[tuple[str, int]]] = {
    "Snowflake": [("sign", 1), ("timestamp", 41), ("worker", 10), ("sequence", 12)],
    "UUIDv7": [
        ("unix ms", 48),
        ("version", 4),
        ("rand_a / counter", 12),
        ("variant", 2),
        ("rand_b", 62),
    ],
    "ULID": [("unix ms", 48), ("randomness", 80)],
    "UUIDv4": [("random", 48), ("version", 4), ("random", 12), ("variant", 2), ("random", 62)],
    "sequential int": [("counter", 64)],
    "ticket server": [("counter", 64)],
}


def bit_fields(kind: str, key: int | bytes) -> list[dict[str, object]]:
    """``key`` cut into ``kind``'s fields: name, bits (as text) and value, high bits first."""
    n = key if isinstance(key, int) else int.from_bytes(key, "big")
    width = sum(w for _, w in LAYOUTS[kind])
    bits = format(n, f"0{width}b")
    out: list[dict[str, object]] = []
    at = 0
    for name, w in LAYOUTS[kind]:
        chunk = bits[at : at + w]
        out.append({"field": name, "bits": w, "binary": chunk, "value": int(chunk, 2)})
        at += w
    return out


def timestamp_ms(kind: str, key: int | bytes) -> int | None:
    """The Unix ms a key of ``kind`` carries, or ``None`` for kinds that carry no time."""
    if kind == "Snowflake":
        assert isinstance(key, int)
        return SEED_LAYOUT.decode(key).unix_ms
    if kind in ("UUIDv7", "ULID"):
        assert isinstance(key, bytes)
        return int.from_bytes(key, "big") >> 80
    return None


def library_uuid4() -> bytes:
    """``uuid.uuid4()`` as 16 bytes: the standard library's anchor."""
    return uuid.uuid4().bytes
