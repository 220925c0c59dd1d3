"""Each figure is declared once: its formula, worked out with the inputs, gives its value.

Two readings of every formula are checked against the plan: the declared formula
worked out with the exact inputs (it must give the value itself, or agree with the
helper named by ``by=``), and the formula *as shown*, read back from its rounded
numbers (it must land within the rounding of what is on screen).
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lookup import capacity as cap
from lookup.capacity.core import Plan, Step, Workings, figure, quantity, working
from lookup.capacity.formula import Formula, Prose, Slot, Template, calculate, ceil

PLAN_CLASSES: list[type[Plan]] = [
    cap.ShortenerPlan,
    cap.TypeaheadPlan,
    cap.ProximityPlan,
    cap.CrawlerPlan,
    cap.SearchPlan,
]

#: Figures whose formula is a rule in words, decided by the helper named in ``by=``.
RULES = {("ShortenerPlan", "key_length"), ("CrawlerPlan", "bloom_hashes")}


def _strategy_for(f: dataclasses.Field) -> st.SearchStrategy:
    rule = f.metadata["rule"]
    if rule["integer"]:
        low = int(rule["minimum"]) + (0 if rule["inclusive"] else 1)
        return st.integers(max(low, 1), max(low, 1, f.default * 4))
    if rule["maximum"] is not None:
        return st.floats(0.001, 0.98 * rule["maximum"])
    return st.floats(max(rule["minimum"], f.default / 1000), f.default * 1000)


def _worked(plan: Any) -> tuple[Workings, dict[str, Any]]:
    """The plan's workings and every step's value, the working-only ones included."""
    values = plan.workings()
    return values, {step.key: values[step.key] for step in plan.steps}


def _check_formulas_give_values(plan: Any) -> None:
    values, every = _worked(plan)
    name = type(plan).__name__
    for step in plan.steps:
        if not step.formula.is_arithmetic:
            assert (name, step.key) in RULES, f"{name}.{step.key} is prose without a rule"
            continue
        worked = step.formula.evaluate(values.__getitem__)
        if step.at_least is not None:
            worked = max(step.at_least, worked)
        if step.by is None:
            assert worked == every[step.key], (name, step.key)
            assert type(worked) is type(every[step.key]), (name, step.key)
        else:
            assert worked == pytest.approx(every[step.key], rel=1e-6, abs=1e-12), (name, step.key)


def test_every_figure_of_the_seed_plans_is_its_formula_worked_out() -> None:
    for cls in PLAN_CLASSES:
        _check_formulas_give_values(cls.of(cls.inputs()))


@pytest.mark.parametrize("cls", PLAN_CLASSES, ids=lambda c: c.__name__)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_every_figure_is_its_formula_worked_out_for_any_assumptions(cls, data) -> None:
    values = {
        f.name: data.draw(_strategy_for(f), label=f.name) for f in dataclasses.fields(cls.inputs)
    }
    _check_formulas_give_values(cls.of(cls.inputs(**values)))


def test_the_rules_in_words_match_their_definitions() -> None:
    for links, bound in ((12e9, 0.01), (120e6, 0.01), (12e9, 1.0), (5, 0.5)):
        p = cap.shortener(
            cap.ShortenerAssumptions(
                links_per_month=links / 120, retention_years=10, max_key_density=bound
            )
        )
        brute = next(n for n in range(1, 30) if p.links_total / 62**n <= bound)
        assert p.key_length == brute
    for rate in (0.5, 0.1, 0.01, 0.001, 1e-6):
        p = cap.crawler(cap.CrawlerAssumptions(bloom_fp_rate=rate))
        bits = p.bloom_bits_per_url
        fp = {k: (1 - math.exp(-k / bits)) ** k for k in range(1, 60)}
        assert fp[p.bloom_hashes] == pytest.approx(min(fp.values()), rel=1e-12)


# ------------------------------------------------------------- as shown


_COMPACT = {"M": 1e6, "B": 1e9, "T": 1e12}
_UNITS = {"%": 0.01, "ms": 1e-3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
_PREFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
_QUANTITY = re.compile(
    r"(?P<num>\d[\d,]*(?:\.\d+)?)"
    r"(?:(?P<compact>[MBT])\b"
    r"|(?P<pct>%)"
    r"|\s(?P<prefix>[KMGTPE]?)(?:B|bit)(?:/s)?\b"
    r"|\s(?P<word>ms|million|billion|trillion)\b)?"
)


def _plain(text: str) -> str:
    """Shown numbers as plain ones: '100M' → 100000000.0, '6 TB' → 6e12, '40%' → 0.4."""

    def one(m: re.Match[str]) -> str:
        value = float(m["num"].replace(",", ""))
        if m["compact"]:
            value *= _COMPACT[m["compact"]]
        elif m["pct"]:
            value *= _UNITS["%"]
        elif m["prefix"] is not None:
            value *= _PREFIX[m["prefix"]]
        elif m["word"]:
            value *= _UNITS[m["word"]]
        return repr(value)

    text = re.sub(r"(?<=[\d%])/[A-Za-z]+", "", text)  # '38.6/s' is a rate, not a division
    return _QUANTITY.sub(one, text)


def _shown_arithmetic(step: Step, values: Workings) -> str:
    """What the row shows, without the prose."""
    out = []
    for part in step.formula.parts:
        if isinstance(part, Slot):
            out.append(part.show(values.__getitem__, values.unit))
        elif isinstance(part, str):
            out.append(part)
    return "".join(out)


SHOWN_CASES = [
    {},
    {"peak_factor": 3.0},
    {"days_per_month": 31.0},
]


@pytest.mark.parametrize("overrides", SHOWN_CASES, ids=str)
@pytest.mark.parametrize("cls", PLAN_CLASSES, ids=lambda c: c.__name__)
def test_every_shown_formula_read_back_gives_the_value_shown(cls, overrides) -> None:
    names = {f.name for f in dataclasses.fields(cls.inputs)}
    plan = cls.of(cls.inputs(**{k: v for k, v in overrides.items() if k in names}))
    values = plan.workings()
    rows = {r.key: r for r in plan.rows()}
    for step in plan.steps:
        if step.key not in rows or not step.formula.is_arithmetic:
            continue
        row = rows[step.key]
        assert "{" not in row.formula and "[" not in row.label + row.formula
        shown = _shown_arithmetic(step, values)
        read_back = calculate(_plain(shown))
        assert read_back == pytest.approx(row.value, rel=0.01), (step.key, shown, _plain(shown))


def test_a_floor_that_decides_the_value_is_shown() -> None:
    p = cap.proximity(cap.ProximityAssumptions(businesses=50, businesses_per_leaf=100))
    row = {r.key: r for r in p.rows()}["quadtree_leaves"]
    assert row.value == 1.0
    assert row.formula == "max(1, 50 / 100 per leaf)"
    assert calculate(row.formula) == row.value
    seed = {r.key: r for r in cap.proximity().rows()}["quadtree_leaves"]
    assert seed.formula == "200M / 100 per leaf"


# ------------------------------------------------------------ the notation


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1 + 2 × 3", 7),
        ("(1 + 2) × 3", 9),
        ("8 / 4 / 2", 1.0),
        ("2^3^2", 512),
        ("−2^2", -4),
        ("3²", 9),
        ("−ln 0.01 / (ln 2)²", -math.log(0.01) / math.log(2) ** 2),
        ("0.5^(1/7)", 0.5 ** (1 / 7)),
        ("1 − (1 − 0.001)^100", 1 - 0.999**100),
        ("ceil(4.0000000001)", 4),
        ("ceil(0.0000000000001)", 1),
        ("max(1, 0.5)", 1),
        ("100 pages × 2 s per host", 200),
        ("62^5", 916_132_832),
        ("{SECONDS_PER_DAY} × 2", 172_800),
        ("7 [→ this is not arithmetic: < ≤ ≈]", 7),
    ],
)
def test_calculate(text, value) -> None:
    assert calculate(text) == pytest.approx(value)


def test_ceil_ignores_noise_and_never_rounds_a_positive_amount_to_zero() -> None:
    assert ceil(4.000000000001) == 4
    assert ceil(4.01) == 5
    assert ceil(1e-15) == 1
    assert ceil(0) == 0
    assert isinstance(ceil(2.5), int)


def test_slots_render_in_their_style() -> None:
    t = Template("{a.x} | {a.x:raw} | {y:q} | {a.z:B} | {a.f:fraction} | [{a.x}]")
    values = {"a.x": 100_000_000, "y": 38.58, "a.z": 6e12, "a.f": 0.4}
    text = t.render(values.__getitem__, lambda name: "/s")
    assert text == "100M | 100000000 | 38.6/s | 6 TB | 40% | 100M"
    assert [s.name for s in t.slots()] == ["a.x", "a.x", "y", "a.z", "a.f", "a.x"]
    assert isinstance(Formula("1 [x {a.x}]").parts[-1], Prose)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1 + ", "expected more"),
        ("(1 + 2", r"expected \)"),
        ("1 2", "unexpected 2"),
        ("1 < 2", "not arithmetic"),
        ("{a.x", "unclosed slot"),
        ("[1 + 2", r"unclosed \["),
        ("1 ] 2", "unbalanced"),
        ("{2x}", "bad slot"),
    ],
)
def test_bad_formulas_are_refused_when_declared(text, message) -> None:
    with pytest.raises(ValueError, match=message):
        Formula(text)


def test_division_by_zero_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="cannot be worked out"):
        calculate("1 / (1 − 1)")
    with pytest.raises(ValueError, match="prose"):
        Formula("[only words]").evaluate(lambda name: 0)


def _declare(*steps: Step) -> type[Plan]:
    @dataclasses.dataclass(frozen=True)
    class Inputs:
        x: float = 2.0

    body = {"inputs": Inputs, "steps": steps, "driver": lambda self: "the test plan"}
    return type("Declared", (Plan,), body)


def test_a_plan_refuses_bad_declarations() -> None:
    with pytest.raises(TypeError, match="unknown name 'a.nope'"):
        _declare(figure("f", "F", "", "{a.nope} × 2"))
    with pytest.raises(TypeError, match="unknown name 'g'"):
        _declare(figure("f", "F", "", "{g} × 2"))
    with pytest.raises(TypeError, match="needs a step"):
        _declare(figure("f", "F", "", "{a.x:q} × 2"))
    with pytest.raises(TypeError, match="prose needs by="):
        _declare(figure("f", "F", "", "[the best one]"))
    with pytest.raises(TypeError, match="twice"):
        _declare(quantity("f", "1"), quantity("f", "2"))


def test_a_declared_plan_is_a_frozen_dataclass_of_its_kept_steps() -> None:
    cls = _declare(
        figure("double", "Twice {a.x}", "count", "{a.x} × 2"),
        working("hidden", "{double} + 1"),
        quantity("kept", "{hidden} × 10"),
        figure("loop", "Loop", "", "{loop} + 1", when=lambda v: False),
    )
    assert [f.name for f in dataclasses.fields(cls)][:3] == ["assumptions", "double", "kept"]
    with pytest.raises(ValueError, match="from itself"):
        cls.of(cls.inputs())
    ok = _declare(
        figure("double", "Twice {a.x}", "count", "{a.x} × 2"),
        working("hidden", "{double} + 1"),
        quantity("kept", "{hidden} × 10"),
    )
    p = ok.of(ok.inputs())
    assert (p.double, p.kept) == (4.0, 50.0)
    assert [(r.label, r.formula, r.text) for r in p.rows()] == [("Twice 2", "2 × 2", "4")]
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.double = 5  # type: ignore[misc]
