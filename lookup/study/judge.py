"""Judging one answer to one item, whatever its kind — shared by the CLI and the dashboard.

An estimate or a prediction is a number (units accepted) scored by ratio against the
planner's figure or the experiment's measurement; a drill's answer is one of its
choices, judged against what the real drill measured; a concept or flashcard answer is
free text, shown against the model answer's key points as a checklist. A bad answer
raises :class:`~lookup.study.answers.AnswerError` with a message meant for the learner.
"""

from __future__ import annotations

from typing import Any

from lookup.study.answers import AnswerError, parse_answer
from lookup.study.bank import Item
from lookup.study.measure import DrillOutcome, Measured

__all__ = ["answer_item"]

_GRADE = {"exact": "good", "close": "hard", "off": "again"}


def answer_item(
    item: Item,
    answer: str,
    variant: int = 0,
    *,
    measured: Measured | None = None,
    outcome: DrillOutcome | None = None,
) -> dict[str, Any]:
    """Judge ``answer`` to ``item`` the way its kind is judged (used by the CLI and the page).

    ``measured`` reuses a predict item's experiment already run (a second try need not run
    it again); ``outcome`` likewise reuses a drill's outcome. Without them the experiment
    or drill runs here.
    """
    from lookup.study.checking import check_choice, check_number, compute, drill, run_drill
    from lookup.study.keypoints import coverage, suggested_grade

    out: dict[str, Any] = {"id": item.id, "kind": item.kind, "variant": variant}
    if item.kind in ("estimate", "predict"):
        if item.kind == "predict":
            if answer is None or not str(answer).strip():
                parse_answer(answer, "count")  # the empty-answer message, before any run
            # Check the answer's form before paying for the experiment.
            measured = measured or compute(item, variant)
            parse_answer(answer, measured.unit)
            verdict, figure = check_number(item, answer, variant, measured)
        else:
            verdict, figure = check_number(item, answer, variant)
        out.update(verdict.as_json())
        out["expectedText"] = figure.text
        out["unit"] = figure.unit
        out["chain"] = list(figure.chain)
        out["details"] = dict(figure.details)
        out["grade"] = _GRADE[verdict.verdict]
    elif item.kind == "drill":
        choice = (answer or "").strip()
        d = drill(item.checker.drill if item.checker and item.checker.drill else "")
        if choice not in d.choices:
            raise AnswerError(f"choose one of {', '.join(d.choices)}")
        outcome = outcome or run_drill(item)
        out.update(check_choice(item, choice, outcome))
        out["outcome"] = outcome.as_json()
        out["grade"] = "good" if out["verdict"] == "exact" else "again"
    else:
        if answer is None or not answer.strip():
            raise AnswerError("the answer is empty; write what you would say")
        results = coverage(answer, list(item.key_points))
        out["keyPoints"] = [r.as_json() for r in results]
        out["covered"] = sum(r.covered for r in results)
        out["total"] = len(results)
        out["grade"] = suggested_grade(results)
    out["source"] = item.source.model_dump()
    out["see"] = list(item.see)
    return out
