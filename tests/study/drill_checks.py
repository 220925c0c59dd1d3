"""Running a drill in a test, with the checks every outcome must pass."""

from __future__ import annotations

import json

from lookup.study.drills import DRILLS, run_drill
from lookup.study.measure import DrillOutcome


def run_checked(name: str, **params: float | int | str | bool) -> DrillOutcome:
    """Run a drill and check the outcome's shape: one of its choices, numeric figures, JSON."""
    got = run_drill(name, **params)
    assert isinstance(got, DrillOutcome)
    assert got.choice in DRILLS[name].choices, (name, got.choice)
    assert got.summary and got.chain and got.figures
    assert all(isinstance(v, float) for v in got.figures.values())
    json.dumps(got.as_json())
    return got
