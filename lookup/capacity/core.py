"""A plan is a list of steps; each figure is declared once, as its key, label, unit and formula.

A system's plan class lists its steps::

    class ShortenerPlan(Plan):
        inputs = ShortenerAssumptions
        steps = (
            figure("writes_per_s", "Writes (new links)", "/s",
                   "{a.links_per_month} / {seconds_per_month} s"),
            ...
        )

and becomes a frozen dataclass with one field per kept step. The value of a step is
its formula worked out (:class:`~lookup.capacity.formula.Formula`) and the text shown
beside it is the same formula rendered with the numbers, so the two cannot drift. A
step whose formula is a rule in words, or a closed form that loses precision, names
the helper that decides it with ``by=``; the tests check that helper against the
formula shown.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from lookup.capacity.formula import CONSTANTS, Formula, Template
from lookup.capacity.units import format_quantity, number


@dataclass(frozen=True)
class Figure:
    """One line of an estimate: what it is, its value in base units and how it was got."""

    key: str
    label: str
    value: float
    unit: str
    formula: str

    @property
    def text(self) -> str:
        """The value rendered for people (``format_quantity``)."""
        return format_quantity(self.value, self.unit)


@dataclass(frozen=True)
class Step:
    """One quantity of a plan: its key, how it is worked out and, for a figure, how it reads.

    ``label`` set makes it a row of the estimate; ``kept`` makes it a field of the plan
    (a working step is neither, only shown inside other formulas); ``when`` hides the
    row unless it holds; ``at_least`` floors the value (the text then says so).
    """

    key: str
    formula: Formula
    unit: str = ""
    label: Template | None = None
    by: Formula | None = None
    when: Callable[[Workings], bool] | None = None
    at_least: float | None = None
    kept: bool = True

    def work_out(self, values: Workings) -> Any:
        """The step's value from the values it names."""
        rule = self.by or self.formula
        value = rule.evaluate(values.__getitem__)
        return value if self.at_least is None else max(self.at_least, value)

    def shown_formula(self, values: Workings) -> str:
        """The formula with the numbers in; a floor that decided the value is written out."""
        text = self.formula.render(values.__getitem__, values.unit)
        if self.at_least is not None and self.formula.evaluate(values.__getitem__) < self.at_least:
            return f"max({number(self.at_least)}, {text})"
        return text

    def row(self, values: Workings) -> Figure:
        """The step as a line of the estimate."""
        assert self.label is not None
        return Figure(
            self.key,
            self.label.render(values.__getitem__, values.unit),
            values[self.key],
            self.unit,
            self.shown_formula(values),
        )

    def templates(self) -> list[Template]:
        """Every text of the step that holds slots."""
        return [t for t in (self.formula, self.label, self.by) if t is not None]


def figure(
    key: str,
    label: str,
    unit: str,
    formula: str,
    *,
    by: str | None = None,
    when: Callable[[Workings], bool] | None = None,
    at_least: float | None = None,
) -> Step:
    """A figure: a field of the plan and a row of its estimate."""
    return Step(
        key,
        Formula(formula),
        unit,
        Template(label),
        Formula(by) if by else None,
        when,
        at_least,
    )


def quantity(key: str, formula: str, unit: str = "") -> Step:
    """A field of the plan that is not a row of its own (other rows show it)."""
    return Step(key, Formula(formula), unit)


def working(key: str, formula: str, unit: str = "") -> Step:
    """A value worked out on the way, shown inside other formulas; not a field of the plan."""
    return Step(key, Formula(formula), unit, kept=False)


class Workings:
    """Every value one plan can name, each worked out once, when first needed."""

    def __init__(
        self, plan: type[Plan], assumptions: Any, known: Mapping[str, Any] | None = None
    ) -> None:
        self._steps = plan.step_index
        self._assumptions = assumptions
        self._values: dict[str, Any] = dict(known or {})
        self._busy: set[str] = set()

    def __getitem__(self, name: str) -> Any:
        if name.startswith("a."):
            return getattr(self._assumptions, name[2:])
        if name in CONSTANTS:
            return CONSTANTS[name]
        if name not in self._values:
            if name in self._busy:
                raise ValueError(f"{name} is worked out from itself")
            self._busy.add(name)
            try:
                self._values[name] = self._steps[name].work_out(self)
            finally:
                self._busy.discard(name)
        return self._values[name]

    def unit(self, name: str) -> str:
        """The unit of the step ``name`` (for ``{name:q}``)."""
        return self._steps[name].unit


class Plan(ABC):
    """Base of every system's estimate: subclasses list ``inputs`` and ``steps``.

    Each subclass becomes a frozen dataclass with ``assumptions`` and one field per
    kept step, in the order declared. ``rows()`` lists the figures with their worked
    formulas; ``driver()`` is the one sentence naming the number that shapes the design.
    """

    assumptions: Any
    inputs: ClassVar[type]
    steps: ClassVar[tuple[Step, ...]]
    step_index: ClassVar[dict[str, Step]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.step_index = {step.key: step for step in cls.steps}
        if len(cls.step_index) != len(cls.steps):
            raise TypeError(f"{cls.__name__} declares a step twice")
        _check_names(cls)
        cls.__annotations__ = {
            "assumptions": cls.inputs,
            **{step.key: float for step in cls.steps if step.kept},
        }
        dataclass(frozen=True)(cls)

    @classmethod
    def of(cls, assumptions: Any) -> Any:
        """The plan for ``assumptions``: every kept step worked out."""
        values = Workings(cls, assumptions)
        kept = {step.key: values[step.key] for step in cls.steps if step.kept}
        return cls(assumptions=assumptions, **kept)  # type: ignore[call-arg]

    def workings(self) -> Workings:
        """This plan's values by name, ready to be shown."""
        known = {f.name: getattr(self, f.name) for f in fields(self)}  # type: ignore[arg-type]
        return Workings(type(self), self.assumptions, known)

    def rows(self) -> list[Figure]:
        """The estimate in reading order, each figure with its worked formula."""
        values = self.workings()
        return [
            step.row(values)
            for step in self.steps
            if step.label is not None and (step.when is None or step.when(values))
        ]

    def say(self, text: str) -> str:
        """``text`` with this plan's values in its slots (for the driver sentence)."""
        values = self.workings()
        return Template(text).render(values.__getitem__, values.unit)

    @abstractmethod
    def driver(self) -> str:
        """The one number that shapes the design, and why."""


def _check_names(cls: type[Plan]) -> None:
    """Every slot names an assumption, a step or a constant; ``{x:q}`` only a step."""
    inputs = {f.name for f in fields(cls.inputs)}
    for step in cls.steps:
        if not (step.formula.is_arithmetic or step.by is not None):
            raise TypeError(f"{cls.__name__}.{step.key}: a formula in prose needs by=")
        for template in step.templates():
            for slot in template.slots():
                name = slot.name
                known = (
                    name[2:] in inputs
                    if name.startswith("a.")
                    else name in cls.step_index or name in CONSTANTS
                )
                if not known:
                    raise TypeError(f"{cls.__name__}.{step.key}: unknown name {name!r}")
                if slot.style == "q" and name not in cls.step_index:
                    raise TypeError(f"{cls.__name__}.{step.key}: {{{name}:q}} needs a step")
