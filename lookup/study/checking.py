"""Asking and answering one item: its variant's parameters, its prompt, its answer, a verdict.

Variant 0 is the design text's own assumptions (the planner's defaults, or the
checker's ``params``). Variant ``n > 0`` draws every ``vary`` parameter from its range
with a generator seeded by the item id and ``n`` — log-uniformly, rounded to two
significant figures, whole where the parameter is whole — so the same variant always
asks the same question and a learner cannot memorise one number.
"""

from __future__ import annotations

import math
import random
import re
from typing import Any

from lookup.capacity.units import number
from lookup.study.answers import AnswerError, Verdict, parse_answer, score
from lookup.study.bank import Item
from lookup.study.computed import FUNCTIONS, function_value, plan_defaults, plan_figure
from lookup.study.measure import Drill, DrillOutcome, Experiment, Measured

MAX_VARIANT = 10_000
_SLOT = re.compile(r"\{([a-z_][a-z0-9_]*)\}")


def experiment(name: str) -> Experiment:
    """The predict-then-run experiment ``name`` (imported on first use: it is heavy)."""
    from lookup.study.experiments import EXPERIMENTS

    if name not in EXPERIMENTS:
        raise KeyError(f"no experiment {name!r}")
    return EXPERIMENTS[name]


def drill(name: str) -> Drill:
    """The scenario drill ``name``."""
    from lookup.study.drills import DRILLS

    if name not in DRILLS:
        raise KeyError(f"no drill {name!r}")
    return DRILLS[name]


def defaults(item: Item) -> dict[str, Any]:
    """Every parameter the item's checker takes, at variant 0."""
    c = item.checker
    if c is None:
        return {}
    if c.plan:
        base = plan_defaults(c.plan)
    elif c.function:
        formula = FUNCTIONS[c.function]
        base = dict(formula.defaults)
    elif c.experiment:
        base = dict(experiment(c.experiment).params)
    else:
        base = dict(drill(c.drill or "").params)
    return {**base, **c.params}


def _round2(x: float) -> float:
    if x == 0:
        return 0.0
    return round(x, 1 - math.floor(math.log10(abs(x))))


def check_variant(variant: int) -> int:
    """``variant`` as a whole number in range, or ``ValueError`` saying what is allowed."""
    if isinstance(variant, bool) or not isinstance(variant, int):
        raise ValueError("variant must be a whole number")
    if not 0 <= variant <= MAX_VARIANT:
        raise ValueError(f"variant must be between 0 and {MAX_VARIANT}")
    return variant


def params_for(item: Item, variant: int = 0) -> dict[str, Any]:
    """The checker's parameters for ``variant`` (0: the design text's; n: a seeded draw)."""
    check_variant(variant)
    params = defaults(item)
    if variant == 0 or item.checker is None or not item.checker.vary:
        return params
    rng = random.Random(f"{item.id}:{variant}")
    for name, (low, high) in sorted(item.checker.vary.items()):
        whole = isinstance(params.get(name), int) and not isinstance(params.get(name), bool)
        for _ in range(20):
            if low > 0:
                x = math.exp(rng.uniform(math.log(low), math.log(high)))
            else:
                x = rng.uniform(low, high)
            x = float(round(x)) if whole else _round2(x)
            x = min(max(x, low), high)
            if x != params.get(name):
                break
        params[name] = int(x) if whole else x
    return params


def _show(value: Any) -> str:
    if isinstance(value, bool) or isinstance(value, str):
        return str(value)
    return number(float(value))


def prompt_for(item: Item, variant: int = 0) -> str:
    """The item's prompt with the variant's values in its ``{slots}``."""
    params = params_for(item, variant) if item.checker else {}
    return _SLOT.sub(lambda m: _show(params[m[1]]) if m[1] in params else m[0], item.prompt)


def compute(item: Item, variant: int = 0) -> Measured:
    """An estimate's answer from the planner or formula; a predict item's measured figure.

    For a predict item this runs the real experiment (seconds, not milliseconds).
    """
    c = item.checker
    if c is None or c.drill:
        raise ValueError(f"{item.id} is a {item.kind} item: it has no single figure to compute")
    params = params_for(item, variant)
    if c.plan:
        return plan_figure(c.plan, c.figure or "", params)
    if c.function:
        return function_value(c.function, params)
    return experiment(c.experiment or "").run(**params)


def run_drill(item: Item) -> DrillOutcome:
    """Trigger the item's drill and measure what happened."""
    if item.checker is None or not item.checker.drill:
        raise ValueError(f"{item.id} is not a drill")
    from lookup.study.drills import run_drill as run

    # Refuses with Unavailable (SERVER_MISSING) when a server the drill needs is missing.
    return run(item.checker.drill, **params_for(item, 0))


def check_number(item: Item, text: str, variant: int = 0,
                 measured: Measured | None = None) -> tuple[Verdict, Measured]:  # fmt: skip
    """Parse the learner's ``text`` and judge it against the computed or measured figure.

    ``measured`` reuses a figure already computed (a predict item's experiment).
    Raises :class:`AnswerError` for an answer that is not a number in a fitting unit.
    """
    if item.kind not in ("estimate", "predict"):
        raise ValueError(f"{item.id} is a {item.kind} item: it is not answered with a number")
    unit = measured.unit if measured else _unit_of(item)
    value = parse_answer(text, unit)
    figure = measured or compute(item, variant)
    return score(value, figure.value, figure.unit), figure


def _unit_of(item: Item) -> str:
    c = item.checker
    assert c is not None
    if c.plan:
        return _plan_unit(c.plan, c.figure or "")
    if c.function:
        return FUNCTIONS[c.function].unit
    return compute(item, 0).unit


def _plan_unit(system: str, figure: str) -> str:
    from lookup import capacity

    plan = capacity.plan(system)
    return type(plan).step_index[figure].unit


def check_choice(item: Item, choice: str, outcome: DrillOutcome) -> dict[str, Any]:
    """A drill prediction against what the drill measured."""
    d = drill(item.checker.drill if item.checker and item.checker.drill else "")
    if choice not in d.choices:
        raise AnswerError(f"choose one of {', '.join(d.choices)}")
    return {
        "predicted": choice,
        "predictedText": d.choices[choice],
        "measured": outcome.choice,
        "measuredText": d.choices.get(outcome.choice, outcome.choice),
        "verdict": "exact" if choice == outcome.choice else "off",
    }


def describe(item: Item, variant: int = 0, *, answer: bool = True) -> dict[str, Any]:
    """What ``lookup study show`` prints: the prompt, and for an estimate the answer."""
    out: dict[str, Any] = {
        "id": item.id,
        "system": item.system,
        "topic": item.topic,
        "level": item.level,
        "kind": item.kind,
        "variant": variant,
        "prompt": prompt_for(item, variant),
        "source": item.source.model_dump(),
        "see": list(item.see),
        "keyPoints": [kp.text for kp in item.key_points],
    }
    if item.checker is not None:
        out["params"] = {k: v for k, v in params_for(item, variant).items()}
        out["checker"] = item.checker.target
    if item.kind == "drill" and item.checker is not None:
        out["choices"] = dict(drill(item.checker.drill or "").choices)
    if answer and item.kind == "estimate":
        out["answer"] = compute(item, variant).as_json()
    return out
