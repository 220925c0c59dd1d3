"""``lookup capacity SYSTEM [--assumption VALUE ...] [--json]``: the capacity estimate.

One flag per assumption, generated from the assumptions dataclass so the CLI never
drifts from :mod:`lookup.capacity`. Numbers accept ``1e8``, ``100_000_000``, a
``k``/``M``/``G``/``T`` suffix (``100M``) and, for fractions, a percent sign (``1%``).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import MISSING, Field, asdict, fields
from typing import Any

from lookup import capacity

_SUFFIXES = {"k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def parse_number(text: str) -> float:
    """Parse a human number: ``'100M'`` → 1e8, ``'1%'`` → 0.01, ``'2.5e3'`` → 2500."""
    raw = text.strip()
    scale = 1.0
    if raw.endswith("%"):
        raw, scale = raw[:-1], 0.01
    elif raw[-1:] in _SUFFIXES:
        raw, scale = raw[:-1], _SUFFIXES[raw[-1]]
    try:
        value = float(raw) * scale
    except ValueError:
        raise ValueError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"not a finite number: {text!r}")
    return value


def _argument_type(cls: type, f: Field) -> Any:
    """An argparse ``type`` that parses a number and applies the field's own rule."""
    rule = f.metadata["rule"]

    def convert(text: str) -> int | float:
        try:
            return capacity.validate_assumption(cls, f.name, parse_number(text))
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = "integer" if rule["integer"] else "number"
    return convert


def default_text(f: Field) -> str:
    """A field's default written so that :func:`parse_number` reads it back ('100M')."""
    assert f.default is not MISSING, f.name  # every assumption is declared with a default
    value = float(f.default)
    if value.is_integer():
        for scale, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M")):
            if abs(value) >= scale and (value / scale).is_integer():
                return f"{int(value / scale)}{suffix}"
        return str(int(value))
    return f"{value:g}"


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``lookup capacity {shortener,typeahead,proximity,crawler,search}``."""
    cap = sub.add_parser(
        "capacity",
        help="back-of-envelope capacity estimate for one system",
        description=(
            "Turn assumptions into per-second rates and bytes, then name the one number "
            "that drives the design. Defaults are the seed's assumptions; override any "
            "of them with its flag."
        ),
    )
    systems = cap.add_subparsers(dest="system", metavar="SYSTEM", required=True)
    for name, (cls, planner) in capacity.PLANNERS.items():
        doc = (planner.__doc__ or "").strip().splitlines()[0]
        p = systems.add_parser(
            name,
            help=doc,
            description=f"{doc} Numbers accept 1e8, 100_000_000, 100M, 1%.",
        )
        for f in fields(cls):
            p.add_argument(
                "--" + f.name.replace("_", "-"),
                dest=f.name,
                type=_argument_type(cls, f),
                default=f.default,
                metavar="N",
                help=f"{f.metadata['help']} (default: {default_text(f)})".replace("%", "%%"),
            )
        p.add_argument("--json", action="store_true", help="print the plan as JSON")
        p.set_defaults(func=_run, capacity_system=name)


def _run(args: argparse.Namespace) -> int:
    cls, planner = capacity.PLANNERS[args.capacity_system]
    values = {f.name: getattr(args, f.name) for f in fields(cls)}
    assumptions = cls(**values)  # each flag was already checked against its rule
    result = planner(assumptions)
    rows = result.rows()
    if args.json:
        document = {
            "system": args.capacity_system,
            "assumptions": asdict(assumptions),
            "figures": capacity.figures(result),
            "rows": [{**asdict(r), "text": r.text} for r in rows],
            "driver": result.driver(),
        }
        json.dump(document, sys.stdout, indent=2, allow_nan=False)
        sys.stdout.write("\n")
        return 0
    print(render_table(rows))
    print()
    print(result.driver())
    return 0


def render_table(rows: list[capacity.Figure]) -> str:
    """Three aligned columns: label, value, formula."""
    table = [(r.label, r.text, r.formula) for r in rows]
    header = ("figure", "value", "how")
    w0 = max(len(header[0]), *(len(t[0]) for t in table))
    w1 = max(len(header[1]), *(len(t[1]) for t in table))
    lines = [f"{header[0]:<{w0}}  {header[1]:>{w1}}  {header[2]}", f"{'-' * w0}  {'-' * w1}  ---"]
    lines += [f"{label:<{w0}}  {value:>{w1}}  {formula}" for label, value, formula in table]
    return "\n".join(lines)
