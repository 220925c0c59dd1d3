"""A writer process for the crash drill: writes keys through write-behind or write-through
and prints ``ack KEY`` after each acknowledged write, until it is killed.

``python -m lookup.blocks.cache.writer --redis URL --store PATH --mode write-behind``
(:func:`lookup.blocks.cache.experiments.write_behind_crash` runs it and sends SIGKILL).
"""

from __future__ import annotations

import argparse
import sys

from lookup.blocks.cache.patterns import WriteBehind, WriteThrough
from lookup.blocks.cache.store import BackingStore
from lookup.blocks.cache.tier import RedisTier


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lookup.blocks.cache.writer")
    parser.add_argument("--redis", required=True)
    parser.add_argument("--store", required=True)
    parser.add_argument("--mode", choices=["write-behind", "write-through"], required=True)
    parser.add_argument("--flush-interval", type=float, default=0.5)
    args = parser.parse_args(argv)
    tier = RedisTier(args.redis, prefix=f"{args.mode}:")
    store = BackingStore(args.store)
    pattern: WriteBehind | WriteThrough
    if args.mode == "write-behind":
        pattern = WriteBehind(tier, store, flush_interval_s=args.flush_interval)
    else:
        pattern = WriteThrough(tier, store)
    n = 0
    while True:  # until SIGKILL
        key = f"order:{n}"
        pattern.write(key, f"value {n}")
        sys.stdout.write(f"ack {key}\n")
        sys.stdout.flush()
        n += 1


if __name__ == "__main__":
    sys.exit(main())
