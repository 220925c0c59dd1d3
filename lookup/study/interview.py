"""The mock interview: one design, six timed steps, the interviewer's prompts one at a time.

A script (``lookup/study/interviews/<design>.toml``) lists, for each step — clarify,
estimate, high-level design, deep dive, what breaks, curveballs — its minutes, the
interviewer's prompts, a rubric to assess oneself against, and for the estimate step
the bank's estimate items whose answers the planner checks. The run itself (notes, time
per step, rubric ticks, the written decision) is recorded by :mod:`.progress`.
"""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from lookup.study.bank import BankError

INTERVIEWS_DIR = Path(__file__).resolve().parent / "interviews"
STEPS = ("clarify", "estimate", "high-level", "deep-dive", "what-breaks", "curveballs")
STEP_TITLES = {
    "clarify": "Clarify the requirements",
    "estimate": "Estimate",
    "high-level": "High-level design",
    "deep-dive": "Deep dive",
    "what-breaks": "What breaks",
    "curveballs": "Curveballs",
}
#: The four parts of a written decision, each with what it asks for.
DECISION_PARTS = {
    "decision": "DECISION — what you chose",
    "because": "BECAUSE — the requirement or number that makes it right",
    "giving_up": "GIVING UP — what it costs",
    "boundary": "BOUNDARY — where it stops working, and what you would do then",
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Step(_Strict):
    """One step of a mock interview."""

    name: Literal[STEPS]  # type: ignore[valid-type]
    minutes: int = Field(ge=1, le=30)
    prompts: list[str] = Field(min_length=1)
    rubric: list[str] = Field(min_length=2)
    estimates: list[str] = Field(default_factory=list)

    @property
    def title(self) -> str:
        """The step's heading."""
        return STEP_TITLES[self.name]


class Script(_Strict):
    """One design's mock interview."""

    design: str
    title: str
    minutes: int = Field(ge=10, le=90)
    step: list[Step]

    @property
    def steps(self) -> list[Step]:
        """The steps in order (TOML's ``[[step]]`` tables)."""
        return self.step

    @model_validator(mode="after")
    def _six_steps_that_add_up(self) -> Script:
        names = tuple(s.name for s in self.step)
        if names != STEPS:
            raise ValueError(f"steps must be {', '.join(STEPS)} in that order, got {names}")
        if sum(s.minutes for s in self.step) != self.minutes:
            raise ValueError("the steps' minutes must add up to the interview's minutes")
        for s in self.step:
            if s.estimates and s.name != "estimate":
                raise ValueError("only the estimate step names estimate items")
        return self


def parse_script(path: Path) -> Script:
    """One interview file, validated; :class:`BankError` names what is wrong."""
    try:
        return Script.model_validate(tomllib.loads(path.read_text(encoding="utf-8")))
    except (tomllib.TOMLDecodeError, ValidationError) as exc:
        raise BankError(f"{path.name}: {exc}") from exc


@cache
def scripts() -> dict[str, Script]:
    """Every packaged interview script by design."""
    out = {}
    for path in sorted(INTERVIEWS_DIR.glob("*.toml")):
        script = parse_script(path)
        if script.design != path.stem:
            raise BankError(f"{path.name}: design {script.design!r} must match the file name")
        out[script.design] = script
    return out
