"""What a checker hands back: a figure with its unit and how it was got.

The three kinds of computed items share these shapes so that the scoring, the CLI and
the Study page treat a planner's figure, an experiment's measurement and a drill's
outcome the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from lookup.capacity.units import format_quantity

Params = Mapping[str, float | int | str | bool]


@dataclass(frozen=True)
class Measured:
    """A figure answered by real code: value in base units, its unit and the chain behind it.

    ``unit`` is one :func:`lookup.capacity.units.format_quantity` knows (``"B"``, ``"/s"``,
    ``"fraction"``, ``"s"``, ``"count"``, ``"bit"``, ``"chars"`` …). ``chain`` is the
    formula chain or the steps of the experiment, one line each, with the numbers in.
    ``details`` holds any further figures (JSON-serialisable) the page may tabulate.
    """

    value: float
    unit: str
    chain: tuple[str, ...] = ()
    details: Mapping[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """The value as people read it ("139,000/s", "6 TB", "0.34%")."""
        return format_quantity(self.value, self.unit)

    def as_json(self) -> dict[str, Any]:
        """The JSON the CLI prints and the page shows."""
        return {
            "value": self.value,
            "unit": self.unit,
            "text": self.text,
            "chain": list(self.chain),
            "details": dict(self.details),
        }


@dataclass(frozen=True)
class Experiment:
    """A predict-then-run experiment: the real implementation run on ``params``.

    ``run(**params)`` returns the :class:`Measured` figure the learner predicted.
    ``params`` are the defaults (variant 0); an item may override some and vary others.
    ``requires`` names servers it needs beyond this process (``"redis"``, ``"postgres"``,
    ``"etcd"``); empty means it runs embedded.
    """

    name: str
    title: str
    run: Callable[..., Measured]
    params: Params = field(default_factory=dict)
    requires: tuple[str, ...] = ()


@dataclass(frozen=True)
class DrillOutcome:
    """What a drill measured and which of its choices the measurement bears out."""

    choice: str
    figures: Mapping[str, float]
    summary: str
    chain: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        """The JSON the CLI prints and the page shows."""
        return {
            "choice": self.choice,
            "figures": dict(self.figures),
            "summary": self.summary,
            "chain": list(self.chain),
        }


@dataclass(frozen=True)
class Drill:
    """A scenario drill: a real failure triggered and its outcome measured.

    ``choices`` maps a short id to the text the learner picks from; ``run(**params)``
    triggers the failure on real code and returns a :class:`DrillOutcome` whose
    ``choice`` is decided from the measured figures, never fixed in advance.
    """

    name: str
    title: str
    choices: Mapping[str, str]
    run: Callable[..., DrillOutcome]
    params: Params = field(default_factory=dict)
    requires: tuple[str, ...] = ()
