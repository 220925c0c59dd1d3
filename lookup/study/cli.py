"""``lookup study``: the question bank on the command line.

``list``, ``show``, ``check``, ``run``, ``session`` (interactive), ``progress`` and
``export`` (an Anki deck). Every bad input — an unknown id, an answer that is not a
number, a variant out of range — is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from lookup.kit.cliargs import add_data_dir


def _variant(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"variant must be a whole number, got {text!r}") from None
    if not 0 <= value <= 10_000:
        raise argparse.ArgumentTypeError("variant must be between 0 and 10000")
    return value


def _minutes(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"minutes must be a number, got {text!r}") from None
    if not 1 <= value <= 180:
        raise argparse.ArgumentTypeError("minutes must be between 1 and 180")
    return value


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``lookup study {list,show,check,run,session,progress,export}``."""
    study = sub.add_parser(
        "study",
        help="interview practice: questions answered by the live systems",
        description=(
            "Practise system design: estimates checked by the capacity planner, predictions "
            "checked by running the real code, drills that break a real system, and concept "
            "questions scheduled by FSRS."
        ),
    )
    cmds = study.add_subparsers(dest="study_command", metavar="COMMAND", required=True)

    p = cmds.add_parser("list", help="every item of the bank")
    p.add_argument("--system", action="append", help="only this system (repeatable)")
    p.add_argument("--kind", action="append", help="only this kind (repeatable)")
    p.add_argument("--level", action="append", help="only this level (repeatable)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_guard(_list))

    p = cmds.add_parser(
        "show", help="one item: its prompt and, for an estimate, the computed answer"
    )
    p.add_argument("id")
    p.add_argument("--variant", type=_variant, default=0, help="0 = the design text's numbers")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_guard(_show))

    p = cmds.add_parser("check", help="judge an answer to one item")
    p.add_argument("id")
    p.add_argument(
        "--answer", required=True, help="a number (3.5k/s, 12 GB), free text, or a drill's choice"
    )
    p.add_argument("--variant", type=_variant, default=0)
    p.add_argument("--learner", help="record the answer in this learner's progress")
    p.add_argument("--grade", choices=("again", "hard", "good", "easy"),
                   help="your grade for a concept or flashcard (kept with --learner)")  # fmt: skip
    p.add_argument("--json", action="store_true")
    add_data_dir(p)
    p.set_defaults(func=_guard(_check))

    p = cmds.add_parser(
        "run", help="run a predict item's experiment or a drill and print what it measured"
    )
    p.add_argument("id")
    p.add_argument("--variant", type=_variant, default=0)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_guard(_run))

    p = cmds.add_parser("session", help="an interactive study session in the terminal")
    p.add_argument(
        "--learner", required=True, help="your name (no accounts; progress is kept per name)"
    )
    p.add_argument("--system", action="append", help="systems to study (repeatable; default all)")
    p.add_argument("--level", action="append", help="levels (repeatable; default all)")
    p.add_argument("--kind", action="append", help="kinds of question (repeatable; default all)")
    p.add_argument("--minutes", type=_minutes, default=15.0)
    p.add_argument(
        "--no-drills", action="store_true", help="leave out drills (they start real processes)"
    )
    p.add_argument("--seed", type=int, default=None, help="fix the draw of items and variants")
    add_data_dir(p)
    p.set_defaults(func=_guard(_session))

    p = cmds.add_parser("progress", help="a learner's accuracy by system and topic and cards due")
    p.add_argument("--learner", required=True)
    p.add_argument("--json", action="store_true")
    add_data_dir(p)
    p.set_defaults(func=_guard(_progress))

    p = cmds.add_parser("export", help="write the concept questions and flashcards as an Anki deck")
    p.add_argument("--format", choices=("apkg",), default="apkg")
    p.add_argument("--out", required=True, help="the .apkg file to write")
    p.add_argument("--system", action="append", help="only these systems (repeatable)")
    p.set_defaults(func=_guard(_export))


def _guard(fn: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """The study code's refusals (bad input, a missing server): one line on stderr, exit 2."""

    def run(args: argparse.Namespace) -> int:
        from lookup.errors import WorkbenchError

        try:
            return fn(args)
        except (ValueError, KeyError, WorkbenchError) as exc:
            message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
            print(f"lookup study: {message}", file=sys.stderr)
            return 2

    return run


def _print(data: Any) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def _filtered(args: argparse.Namespace) -> list[Any]:
    from lookup.study.bank import KINDS, LEVELS, SYSTEMS, bank
    from lookup.study.session import check_choice

    systems = check_choice(args.system, SYSTEMS, "system")
    kinds = check_choice(args.kind, KINDS, "kind")
    levels = check_choice(args.level, LEVELS, "level")
    return [
        i for i in bank().values() if i.system in systems and i.kind in kinds and i.level in levels
    ]


def _list(args: argparse.Namespace) -> int:
    from lookup.study.bank import as_row

    items = _filtered(args)
    if args.json:
        _print([as_row(i) for i in items])
        return 0
    for i in items:
        print(f"{i.id:<44} {i.kind:<9} {i.level:<12} {i.prompt[:70]}")
    print(f"{len(items)} items")
    return 0


def _show(args: argparse.Namespace) -> int:
    from lookup.study.bank import get_item
    from lookup.study.checking import describe

    out = describe(get_item(args.id), args.variant)
    if args.json:
        _print(out)
        return 0
    print(f"[{out['system']} · {out['kind']} · {out['level']}] {out['id']}")
    print(out["prompt"])
    if "choices" in out:
        for key, text in out["choices"].items():
            print(f"  {key}) {text}")
    if "answer" in out:
        print(f"\nAnswer: {out['answer']['text']}")
        for line in out["answer"]["chain"]:
            print(f"  {line}")
    return 0


def answer_item(item: Any, answer: str, variant: int = 0) -> dict[str, Any]:
    """Judge ``answer`` to ``item`` (:func:`lookup.study.judge.answer_item`, imported lazily)."""
    from lookup.study.judge import answer_item as judge

    return judge(item, answer, variant)


def _record(args: argparse.Namespace, item: Any, out: dict[str, Any], grade: str) -> None:
    from lookup.kit.mounts import resolve_data_dir
    from lookup.study.progress import Review, progress_in

    store = progress_in(resolve_data_dir(args.data_dir))
    try:
        due = store.record(args.learner, Review(
            item.id, item.kind, item.system, item.topic, item.level, grade,
            verdict=out.get("verdict"), variant=args.variant, answer=args.answer,
            expected=out.get("expectedText") or out.get("measuredText"),
        ))  # fmt: skip
    finally:
        store.close()
    out["recorded"] = {"learner": args.learner, "grade": grade, "due": due.isoformat()}


def _check(args: argparse.Namespace) -> int:
    from lookup.study.bank import get_item
    from lookup.study.progress import check_learner

    item = get_item(args.id)
    if args.learner is not None:
        check_learner(args.learner)
    out = answer_item(item, args.answer, args.variant)
    if args.learner:
        grade = (
            args.grade or out["grade"] if item.kind in ("concept", "flashcard") else out["grade"]
        )
        _record(args, item, out, grade)
    if args.json:
        _print(out)
        return 0
    _print_result(out)
    return 0


def _print_result(out: dict[str, Any]) -> None:
    if "verdict" in out and "expectedText" in out:
        print(f"{out['verdict'].upper()}: the answer is {out['expectedText']}"
              + (f" (you were {out['ratio']}× off)" if out.get("ratio") else ""))  # fmt: skip
        for line in out["chain"]:
            print(f"  {line}")
    elif "outcome" in out:
        print(f"You predicted {out['predicted']}; the drill measured {out['measured']}: "
              f"{out['measuredText']}")  # fmt: skip
        print(f"  {out['outcome']['summary']}")
        for line in out["outcome"]["chain"]:
            print(f"  {line}")
    else:
        print(f"You covered {out['covered']} of {out['total']} key points:")
        for kp in out["keyPoints"]:
            print(f"  [{'x' if kp['covered'] else ' '}] {kp['point']}")
    print(f"  (design notes, text {out['source']['file']}: {out['source']['section']})")


def _run(args: argparse.Namespace) -> int:
    from lookup.study.bank import get_item
    from lookup.study.checking import compute, run_drill

    item = get_item(args.id)
    if item.kind == "predict":
        out = {
            "id": item.id,
            "variant": args.variant,
            "measured": compute(item, args.variant).as_json(),
        }
    elif item.kind == "drill":
        out = {"id": item.id, "outcome": run_drill(item).as_json()}
    else:
        raise ValueError(f"{item.id} is a {item.kind} item; only predict and drill items run")
    if args.json:
        _print(out)
        return 0
    if "measured" in out:
        print(f"Measured: {out['measured']['text']}")
        lines = out["measured"]["chain"]
    else:
        print(f"Outcome: {out['outcome']['choice']} — {out['outcome']['summary']}")
        lines = out["outcome"]["chain"]
    for line in lines:
        print(f"  {line}")
    return 0


def _progress(args: argparse.Namespace) -> int:
    from lookup.kit.mounts import resolve_data_dir
    from lookup.study.progress import check_learner, progress_in

    learner = check_learner(args.learner)
    store = progress_in(resolve_data_dir(args.data_dir))
    try:
        out: dict[str, Any] = {
            "learner": learner,
            "reviews": len(store.reviews(learner)),
            "due": store.due_counts(learner),
            "accuracy": store.accuracy(learner),
        }
    finally:
        store.close()
    if args.json:
        _print(out)
        return 0
    print(f"{learner}: {out['reviews']} reviews; due now {out['due']['now']}, "
          f"today {out['due']['today']}, this week {out['due']['week']}")  # fmt: skip
    for row in out["accuracy"]:
        print(f"  {row['accuracy']:>6.0%}  {row['system']:<10} {row['topic']} ({row['reviews']})")
    return 0


def _export(args: argparse.Namespace) -> int:
    from lookup.study.anki import export_apkg
    from lookup.study.bank import SYSTEMS, bank
    from lookup.study.session import check_choice

    systems = check_choice(args.system, SYSTEMS, "system")
    n = export_apkg(args.out, [i for i in bank().values() if i.system in systems])
    print(f"wrote {n} notes to {args.out}")
    return 0


def _session(args: argparse.Namespace) -> int:
    from lookup.kit.mounts import resolve_data_dir
    from lookup.study.answers import AnswerError
    from lookup.study.bank import get_item
    from lookup.study.checking import describe
    from lookup.study.progress import Review, check_learner, progress_in
    from lookup.study.session import plan_session

    learner = check_learner(args.learner)
    store = progress_in(resolve_data_dir(args.data_dir))
    try:
        entries = plan_session(
            store, learner, systems=args.system, levels=args.level, kinds=args.kind,
            minutes=args.minutes, seed=args.seed, drills=not args.no_drills,
        )  # fmt: skip
        print(f"{len(entries)} questions for {learner}. Type 'skip' to pass, 'quit' to stop.\n")
        done = 0
        for n, entry in enumerate(entries, start=1):
            item = get_item(entry.item_id)
            shown = describe(item, entry.variant, answer=False)
            print(
                f"Q{n} [{item.system} · {item.kind} · {item.level}]"
                + (" (due)" if entry.reason == "due" else "")
            )
            print(shown["prompt"])
            for key, text in shown.get("choices", {}).items():
                print(f"  {key}) {text}")
            while True:
                try:
                    answer = input("> ").strip()
                except EOFError:
                    answer = "quit"
                if answer in ("quit", "skip"):
                    break
                try:
                    out = answer_item(item, answer, entry.variant)
                except AnswerError as exc:
                    print(f"  {exc}")
                    continue
                _print_result(out)
                grade = out["grade"]
                if item.kind in ("concept", "flashcard"):
                    grade = _ask_grade(grade)
                store.record(learner, Review(item.id, item.kind, item.system, item.topic,
                                             item.level, grade, verdict=out.get("verdict"),
                                             variant=entry.variant, answer=answer))  # fmt: skip
                done += 1
                break
            print()
            if answer == "quit":
                break
        counts = store.due_counts(learner)
        print(f"Answered {done}. Due today: {counts['today']}, this week: {counts['week']}.")
    finally:
        store.close()
    return 0


def _ask_grade(suggested: str) -> str:
    while True:
        try:
            text = input(f"Grade yourself again/hard/good/easy [{suggested}]: ").strip().lower()
        except EOFError:
            return suggested
        if not text:
            return suggested
        if text in ("again", "hard", "good", "easy"):
            return text
        print("  type again, hard, good or easy")
