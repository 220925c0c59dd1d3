"""Arguments every ``lookup`` subcommand shares, for the edge and the systems' own commands."""

from __future__ import annotations

import argparse


def add_data_dir(p: argparse.ArgumentParser) -> None:
    """Add ``--data-dir`` (default ``$LOOKUP_DATA_DIR`` or ``./data``)."""
    p.add_argument(
        "--data-dir",
        default=None,
        help="where all state lives (default: $LOOKUP_DATA_DIR or ./data)",
    )


def port(value: str) -> int:
    """An argparse type: a TCP port number 0..65535, with a clear message otherwise."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {value!r}") from None
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"port must be between 0 and 65535, got {number}")
    return number
