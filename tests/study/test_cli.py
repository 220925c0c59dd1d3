"""``lookup study`` as a learner runs it: JSON out, clear errors in.

Most commands run in this process through ``lookup.cli.main`` (the same parser and code
a shell runs; a process start costs seconds here); the terminal session and one refusal
run as real processes, stdin and exit status included.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from lookup.study.bank import bank

ESTIMATE = next(i for i in bank().values() if i.kind == "estimate" and i.checker and i.checker.plan
                and i.checker.vary)  # fmt: skip
CONCEPT = next(i for i in bank().values() if i.kind == "concept")


def study(
    *args: str, data_dir: Path | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``lookup study ARGS`` in this process (``stdin`` given: as a real process)."""
    extra = ["--data-dir", str(data_dir)] if data_dir else []
    argv = ["study", *args, *extra]
    if stdin is not None:
        return subprocess.run(
            [sys.executable, "-m", "lookup.cli", *argv],
            capture_output=True, text=True, input=stdin, timeout=300,
        )  # fmt: skip
    from lookup.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse's own refusals
            code = int(exc.code or 0)
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())


def test_a_refusal_from_a_real_process_is_one_line_and_exit_2() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "lookup.cli", "study", "check", ESTIMATE.id, "--answer", "lots"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0 and "not a number" in out.stderr


def test_list_json_is_every_item() -> None:
    out = study("list", "--json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert {r["id"] for r in rows} == set(bank())
    assert set(rows[0]) == {"id", "system", "topic", "kind", "level", "prompt"}


def test_show_prints_the_computed_answer_and_its_chain() -> None:
    from lookup import capacity

    out = json.loads(study("show", ESTIMATE.id, "--json").stdout)
    c = ESTIMATE.checker
    direct = capacity.figures(capacity.plan(c.plan, **c.params))[c.figure]
    assert out["answer"]["value"] == pytest.approx(direct)
    assert out["answer"]["chain"]
    varied = json.loads(study("show", ESTIMATE.id, "--variant", "7", "--json").stdout)
    assert varied["params"] != out["params"] and varied["prompt"] != out["prompt"]
    assert varied["answer"]["value"] == pytest.approx(
        capacity.figures(
            capacity.plan(c.plan, **{k: varied["params"][k] for k in c.vary}, **c.params)
        )[c.figure]
    )


def test_check_scores_an_estimate_and_records_it(tmp_path: Path) -> None:
    value = json.loads(study("show", ESTIMATE.id, "--json").stdout)["answer"]["value"]
    exact = json.loads(study("check", ESTIMATE.id, "--answer", repr(value), "--json",
                             "--learner", "ana", data_dir=tmp_path).stdout)  # fmt: skip
    assert exact["verdict"] == "exact" and exact["recorded"]["grade"] == "good"
    off = json.loads(study("check", ESTIMATE.id, "--answer", repr(value * 10), "--json").stdout)
    assert off["verdict"] == "off"
    progress = json.loads(study("progress", "--learner", "ana", "--json", data_dir=tmp_path).stdout)
    assert progress["reviews"] == 1 and progress["accuracy"][0]["accuracy"] == 1.0


def test_check_a_concept_lists_the_key_points() -> None:
    words = " ".join(group[0] for kp in CONCEPT.key_points for group in kp.terms)
    out = json.loads(study("check", CONCEPT.id, "--answer", words, "--json").stdout)
    assert out["covered"] == out["total"] == len(CONCEPT.key_points)
    out = json.loads(study("check", CONCEPT.id, "--answer", "no idea", "--json").stdout)
    assert out["covered"] == 0 and out["grade"] == "again"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("check", "{est}", "--answer", "lots"), "not a number"),
        (("check", "{est}", "--answer", "12 parsecs"), "not a unit"),
        (("check", "{est}", "--answer", ""), "empty"),
        (("check", "{est}", "--answer", "-5"), "never negative"),
        (("check", "{concept}", "--answer", "  "), "empty"),
        (("check", "{est}", "--answer", "5", "--variant", "-1"), "variant"),
        (("check", "{est}", "--answer", "5", "--variant", "x"), "variant"),
        (("check", "{est}", "--answer", "5", "--learner", "  "), "learner name"),
        (("show", "shortener.no-such-item"), "no study item"),
        (("run", "{concept}"), "only predict and drill items run"),
        (("list", "--system", "mainframe"), "unknown system"),
    ],
)
def test_bad_input_is_one_clear_line_and_exit_2(args: tuple[str, ...], message: str) -> None:
    filled = [a.format(est=ESTIMATE.id, concept=CONCEPT.id) for a in args]
    out = study(*filled)
    assert out.returncode == 2
    assert message in out.stderr and "Traceback" not in out.stderr


def test_export_writes_an_anki_deck(tmp_path: Path) -> None:
    out = study(
        "export", "--format", "apkg", "--out", str(tmp_path / "deck.apkg"), "--system", "kv"
    )
    assert out.returncode == 0, out.stderr
    n = sum(1 for i in bank().values() if i.system == "kv" and i.kind in ("concept", "flashcard"))
    assert f"wrote {n} notes" in out.stdout and (tmp_path / "deck.apkg").stat().st_size > 0


def test_an_interactive_session_in_the_terminal(tmp_path: Path) -> None:
    """A learner answers badly, retries after an error, grades a concept, then quits."""
    from lookup.study.progress import progress_in
    from lookup.study.session import plan_session

    store = progress_in(tmp_path)
    plan = plan_session(store, "ana", systems=["shortener"], minutes=10, seed=5, drills=False,
                        kinds=["estimate", "concept"])  # fmt: skip
    store.close()
    lines = []
    for entry in plan:
        if bank()[entry.item_id].kind == "estimate":
            lines += ["lots", "1"]  # an error first: the question is asked again
        else:
            lines += ["a short answer", "hard"]
    args = (
        "--learner",
        "ana",
        "--system",
        "shortener",
        "--minutes",
        "10",
        "--seed",
        "5",
        "--kind",
        "estimate",
        "--kind",
        "concept",
    )
    out = study("session", *args, "--no-drills", data_dir=tmp_path, stdin="\n".join(lines) + "\n")
    assert out.returncode == 0, out.stderr
    assert "not a number" in out.stdout
    assert f"Answered {len(plan)}" in out.stdout
    store = progress_in(tmp_path)
    assert len(store.reviews("ana")) == len(plan)
    store.close()
