"""Predict-then-run experiments on rate limiters and Snowflake ids.

The limiters are the in-process ones of :mod:`lookup.kit.ratelimit`, driven with an
injected clock by :mod:`lookup.blocks.limits.experiments` (minutes replay in
milliseconds); the ids come from :class:`lookup.blocks.ids.snowflake.Snowflake` with a
clock that ticks only after a set number of reads, so "how many in one millisecond" is
decided by the generator's sequence field, not by how fast this machine is.
"""

from __future__ import annotations

import time
from collections import Counter

from lookup.study.measure import Experiment, Measured

__all__ = ["EXPERIMENTS_LIMITS", "snowflake_per_ms", "split_quota", "window_boundary"]

_ALGORITHM_WORDS = {
    "token_bucket": "token bucket",
    "fixed_window": "fixed window",
    "sliding_log": "sliding-window log",
    "sliding_counter": "sliding-window counter",
    "leaky_bucket": "leaky bucket",
}


def window_boundary(
    limit: int = 100, window_s: float = 60.0, algorithm: str = "fixed_window"
) -> Measured:
    """Requests admitted when ``limit − 1`` arrive at 0:59 of a window and ``limit − 1``
    more at 1:00 (scaled to ``window_s``), by the limiter ``algorithm``."""
    from lookup.blocks.limits.experiments import boundary_burst

    if algorithm not in _ALGORITHM_WORDS:
        raise ValueError(f"algorithm must be one of {', '.join(_ALGORITHM_WORDS)}")
    if limit < 2 or window_s <= 0:
        raise ValueError("need limit >= 2 and a positive window")
    rows = {r["algorithm"]: r for r in boundary_burst(limit, window_s)}
    row = rows[algorithm]
    others = ", ".join(
        f"{_ALGORITHM_WORDS[a]} {r['admitted in 2 s']}" for a, r in rows.items() if a != algorithm
    )
    chain = (
        f"policy: {limit} requests per {window_s:g} s; a {_ALGORITHM_WORDS[algorithm]} "
        "limiter on an injected clock",
        f"sent {limit - 1} requests just before the window boundary (at {window_s * 59 / 60:g} s) "
        f"and {limit - 1} right at it ({window_s:g} s)",
        f"admitted before the boundary: {row['admitted at 0:59']}; at the boundary: "
        f"{row['admitted at 1:00']}",
        f"admitted in those two moments: {row['admitted in 2 s']} = {row['× limit']} × the limit",
        f"the same stream through the others: {others}",
    )
    return Measured(float(row["admitted in 2 s"]), "count", chain, {"rows": list(rows.values())})


_QUOTA_ROWS = {"divided": 1, "grown": 2, "hybrid": 3, "shared": 0}


def split_quota(
    limit: int = 100,
    instances: int = 4,
    hot_share: float = 0.8,
    offered: float = 2.0,
    figure: str = "divided",
    seed: int = 0,
) -> Measured:
    """One client's quota of ``limit`` enforced across ``instances`` servers that see its
    ``offered × limit`` requests unevenly (``hot_share`` on one, the rest spread evenly).

    ``figure``: ``divided`` — each server allows ``limit / instances``; ``grown`` — the
    fleet doubled and each still allows ``limit / instances``; ``hybrid`` — local
    budgets in front of one shared limit; ``shared`` — one exact shared limit.
    """
    from lookup.blocks.limits.experiments import split_quota as run_split

    if figure not in _QUOTA_ROWS:
        raise ValueError(f"figure must be one of {', '.join(_QUOTA_ROWS)}")
    if instances < 2 or not 0.0 < hot_share < 1.0 or limit < instances or offered <= 0:
        raise ValueError("need instances >= 2, 0 < hot_share < 1, limit >= instances, offered > 0")
    rest = (1.0 - hot_share) / (instances - 1)
    shares = (hot_share, *([rest] * (instances - 1)))
    rows = run_split(limit, shares, offered, seed=seed)
    row = rows[_QUOTA_ROWS[figure]]
    chain = (
        f"one client allowed {limit} requests (nothing refills meanwhile) sends "
        f"{row['offered']} through {instances} servers: {hot_share:.0%} to one, "
        f"{rest:.1%} to each other",
        *(
            f"{r['enforcement']}: admitted {r['admitted']} ({r['× limit']} × the limit; "
            f"per server {r['per instance']})"
            for r in rows
        ),
        f"reported: {row['enforcement']} — {row['admitted']} admitted, "
        f"{row['refused within the quota']} refused that the quota allowed, "
        f"{row['admitted beyond the quota']} admitted beyond it",
    )
    return Measured(float(row["admitted"]), "count", chain, {"rows": rows})


class _TickingClock:
    """Integer milliseconds that advance by one every ``reads_per_ms`` reads."""

    def __init__(self, start_ms: int, reads_per_ms: int) -> None:
        self.start_ms, self.reads_per_ms, self.reads = start_ms, reads_per_ms, 0

    def __call__(self) -> int:
        self.reads += 1
        return self.start_ms + self.reads // self.reads_per_ms


def snowflake_per_ms(sequence_bits: int = 12, ids: int = 0, reads_per_ms: int = 50_000) -> Measured:
    """The most ids one Snowflake worker stamps with the same millisecond.

    The generator asks a clock that ticks once every ``reads_per_ms`` reads — a worker
    asked for ids far faster than its sequence can number them — and every id is decoded
    to count ids per millisecond. The timestamp keeps 41 bits; the worker field gets what
    the sequence leaves of the other 22. ``ids=0`` asks for five milliseconds' worth at
    the sequence's limit.
    """
    from lookup.blocks.ids.snowflake import SEED_EPOCH_MS, Snowflake, SnowflakeLayout

    if not 1 <= sequence_bits <= 21:
        raise ValueError("sequence_bits must be within 1..21 (the worker field keeps >= 1 bit)")
    ids = ids or 5 * 2**sequence_bits
    if not 1 <= ids <= 2_000_000 or reads_per_ms < 1:
        raise ValueError("need 1 <= ids <= 2,000,000 and reads_per_ms >= 1")
    layout = SnowflakeLayout(41, 22 - sequence_bits, sequence_bits)
    gen = Snowflake(1, layout=layout, clock=_TickingClock(SEED_EPOCH_MS + 1, reads_per_ms))
    issued = gen.take(ids)
    per_ms = Counter(layout.decode(i).unix_ms for i in issued)
    most = max(per_ms.values())
    in_order = all(a < b for a, b in zip(issued, issued[1:], strict=False))
    wall = Snowflake(2, layout=layout)
    end = time.perf_counter() + 0.05
    count = 0
    while time.perf_counter() < end:
        wall.next_id()
        count += 1
    wall_rate = count / 50.0
    chain = (
        f"layout: 41 bits of milliseconds, {22 - sequence_bits} of worker, "
        f"{sequence_bits} of sequence",
        f"asked one worker for {ids:,} ids on a clock that moves one millisecond per "
        f"{reads_per_ms:,} reads",
        f"decoded every id: they span {len(per_ms)} milliseconds; the fullest holds "
        f"{most:,} ids (2^{sequence_bits} = {2**sequence_bits:,})",
        f"the sequence ran out and the generator waited for the next millisecond "
        f"{gen.waits} time(s); all {len(set(issued)):,} ids distinct, "
        f"{'strictly increasing' if in_order else 'NOT in order'}",
        f"{2 ** (22 - sequence_bits):,} workers × {most:,} = "
        f"{2 ** (22 - sequence_bits) * most:,} ids per millisecond for the whole fleet",
        f"on this machine's real clock this Python generator issued about {wall_rate:,.0f} "
        "ids per millisecond",
    )
    return Measured(
        float(most),
        "exact",
        chain,
        {
            "milliseconds": len(per_ms),
            "waits": gen.waits,
            "distinct": len(set(issued)),
            "increasing": in_order,
            "wall-clock ids per ms": round(wall_rate),
        },
    )


EXPERIMENTS_LIMITS = (
    Experiment(
        "window_boundary",
        "What a limiter admits across a window boundary",
        window_boundary,
        {"limit": 100, "window_s": 60.0, "algorithm": "fixed_window"},
    ),
    Experiment(
        "split_quota",
        "One quota split across servers under skewed traffic",
        split_quota,
        {
            "limit": 100,
            "instances": 4,
            "hot_share": 0.8,
            "offered": 2.0,
            "figure": "divided",
            "seed": 0,
        },
    ),
    Experiment(
        "snowflake_per_ms",
        "Ids one Snowflake worker issues in a millisecond",
        snowflake_per_ms,
        {"sequence_bits": 12, "ids": 0, "reads_per_ms": 50_000},
    ),
)
