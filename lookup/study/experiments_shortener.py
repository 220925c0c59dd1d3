"""Predict-then-run experiments on the URL shortener's keys and id leases.

Keys come from the real :class:`lookup.shortener.keys.KeyMinter`: ids leased in blocks
from a :class:`lookup.kit.idblocks.sqlite.SqliteIdAllocator` (a SQLite file in a temporary
directory), sent through the keyed :class:`~lookup.kit.ids.FeistelPermutation` of
``[0, 62^7)`` and written as seven base62 characters.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from lookup.study.measure import Experiment, Measured

__all__ = ["EXPERIMENTS_SHORTENER", "id_block_gaps", "key_neighbours"]


def key_neighbours(
    keys: int = 5_000, start: int = 1_000_000, permute: bool = True, secret: int = 1
) -> Measured:
    """Mint ``keys`` keys from consecutive ids (starting at ``start``): the share of
    consecutive pairs whose keys begin with the same character.

    ``permute=False`` writes the id itself in base62, the plain counter design.
    """
    from lookup.kit.idblocks.sqlite import SqliteIdAllocator
    from lookup.kit.ids import FeistelPermutation, encode_base62
    from lookup.shortener.keys import KEY_LENGTH, KEY_SPACE, KeyMinter, ReservedWords

    if not 2 <= keys <= 200_000 or not 0 <= start < KEY_SPACE - keys:
        raise ValueError("need 2 <= keys <= 200,000 and a start inside the key space")
    key = hashlib.sha256(f"study-secret-{secret}".encode()).digest()
    with tempfile.TemporaryDirectory(prefix="study-keys-") as tmp:
        allocator = SqliteIdAllocator(Path(tmp) / "ids.sqlite3", block_size=10_000, start=start)
        try:
            minter = KeyMinter(allocator, FeistelPermutation(KEY_SPACE, key), ReservedWords())
            minted = [minter.mint() for _ in range(keys)]
        finally:
            allocator.close()
    ids = [i for i, _ in minted]
    made = [k for _, k in minted] if permute else [encode_base62(i, KEY_LENGTH) for i in ids]
    shared = [len(os.path.commonprefix([a, b])) for a, b in zip(made, made[1:], strict=False)]
    mean = sum(shared) / len(shared)
    some = sum(s > 0 for s in shared)
    share = some / len(shared)
    if permute:
        back = all(minter.id_for(k) == i for i, k in minted[:200])
        how = "through the keyed Feistel permutation, then base62"
        last = f"inverting the permutation gave back the id of each of the first 200 keys: {back}"
    else:
        how = "written straight in base62 (no permutation)"
        last = "anyone holding one key can list its neighbours by counting up and down"
    chain = (
        f"leased ids {ids[0]:,}…{ids[-1]:,} from the allocator and turned each into a "
        f"{KEY_LENGTH}-character key {how}",
        f"first keys: {', '.join(made[:4])}",
        f"{len(set(made)):,} distinct keys for {keys:,} ids (the mapping is one-to-one)",
        f"consecutive pairs whose keys share the first character: {some:,} of "
        f"{len(shared):,} = {share:.2%} (chance alone: 1/62 = {1 / 62:.2%})",
        f"leading characters shared with the previous key, on average: {mean:.3f}",
        last,
    )
    return Measured(
        share,
        "fraction",
        chain,
        {
            "keys": keys,
            "distinct": len(set(made)),
            "mean shared prefix": round(mean, 4),
            "sample": made[:10],
        },
    )


def id_block_gaps(
    instances: int = 3, lives: int = 2, minted: int = 2_500, block_size: int = 10_000
) -> Measured:
    """Ids leased but never used when each of ``instances`` servers is started ``lives``
    times, mints ``minted`` keys per life from blocks of ``block_size``, and dies."""
    from lookup.kit.idblocks.sqlite import SqliteIdAllocator

    if not (
        1 <= instances <= 50
        and 1 <= lives <= 20
        and 1 <= minted <= 100_000
        and 1 <= block_size <= 10_000_000
    ):
        raise ValueError(
            "need 1 <= instances <= 50, 1 <= lives <= 20, 1 <= minted <= 100,000 "
            "and 1 <= block_size <= 10,000,000"
        )
    issued: list[int] = []
    leases = 0
    with tempfile.TemporaryDirectory(prefix="study-ids-") as tmp:
        path = Path(tmp) / "ids.sqlite3"
        for _ in range(lives):
            servers = [
                SqliteIdAllocator(path, "links", block_size=block_size) for _ in range(instances)
            ]
            for _ in range(minted):  # the servers take turns, as traffic would spread
                for server in servers:
                    issued.append(server.next_id())
            for server in servers:  # each dies holding what is left of its block
                leases += server.leases_taken
                server.close()
        counter = SqliteIdAllocator(path, "links", block_size=1).lease().start
    burned = counter - len(issued)
    distinct = len(set(issued))
    chain = (
        f"{instances} servers share one allocator row; each leases {block_size:,} ids at a time",
        f"{lives} time(s) over, each server minted {minted:,} keys and then died, keeping the "
        "rest of its block",
        f"leases taken: {leases}; the shared counter moved to {counter:,}",
        f"ids handed out: {len(issued):,}, all distinct: {distinct == len(issued)}",
        f"ids leased but never used (gaps, never duplicates): {counter:,} − {len(issued):,} "
        f"= {burned:,}",
    )
    return Measured(
        float(burned),
        "count",
        chain,
        {
            "issued": len(issued),
            "leases": leases,
            "counter": counter,
            "duplicates": len(issued) - distinct,
        },
    )


EXPERIMENTS_SHORTENER = (
    Experiment(
        "key_neighbours",
        "How alike the keys of consecutive ids are",
        key_neighbours,
        {"keys": 5_000, "start": 1_000_000, "permute": True, "secret": 1},
    ),
    Experiment(
        "id_block_gaps",
        "Ids lost to leased blocks when servers restart",
        id_block_gaps,
        {"instances": 3, "lives": 2, "minted": 2_500, "block_size": 10_000},
    ),
)
