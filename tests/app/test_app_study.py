"""The Study page through ``streamlit.testing``: a session's questions, a mock interview, progress.

Each test gets its own data directory (``LOOKUP_DATA_DIR``), so the progress the page
records is read back from a throw-away SQLite file. The items are taken from the bank
by kind (not by id), and the right answer to an estimate comes from the planner.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from dashboard_testing import ok, open_page, page_text
from streamlit.testing.v1 import AppTest

from lookup.study.bank import Item, bank
from lookup.study.checking import compute
from lookup.study.interview import scripts
from lookup.study.progress import ProgressStore, Review, progress_in

STUDY = "views/study.py"
NAME = "Ada Tester"


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A throw-away data directory the dashboard reads and writes; no API around."""
    path = tmp_path / "data"
    monkeypatch.setenv("LOOKUP_DATA_DIR", str(path))
    monkeypatch.setenv("LOOKUP_API_URL", "http://127.0.0.1:9")
    return path


@pytest.fixture
def at(data_dir: Path) -> Iterator[AppTest]:
    """The Study page, reached through the navigation, with a learner's name typed in."""
    app = open_page(STUDY)
    app.text_input(key="learner").input(NAME).run()
    yield ok(app)


def _store(data_dir: Path) -> ProgressStore:
    return progress_in(data_dir)


def _first(kind: str, *, plan: bool = False) -> Item:
    for item in bank().values():
        if item.kind == kind and (not plan or (item.checker and item.checker.plan)):
            return item
    pytest.fail(f"the bank holds no {kind} item")


def _ask(at: AppTest, *items: Item) -> AppTest:
    """Put a session of exactly these items (variant 0) in front of the learner."""
    at.session_state["study-entries"] = [{"id": i.id, "variant": 0, "reason": "new"} for i in items]
    at.session_state["study-pos"] = 0
    at.session_state["study-log"] = []
    return ok(at.run())


def _check(at: AppTest, key: str, answer: str) -> AppTest:
    at.text_input(key=f"{key}-text").input(answer)
    return ok(at.button(key=f"{key}-check").click().run())


def _errors(at: AppTest) -> list[str]:
    return [e.value for e in at.error]


def test_every_tab_renders_and_a_name_is_asked_for(data_dir: Path) -> None:
    at = open_page(STUDY)
    assert [t.label for t in at.tabs] == ["Session", "Mock interview", "Progress"]
    text = page_text(at)
    assert "Type your name above to start a session." in text
    assert "Type your name above to see your progress." in text
    assert at.button(key="study-start").disabled
    # A blank name is refused with the store's own message, not an exception.
    ok(at.text_input(key="learner").input("   ").run())
    assert any("give a learner name" in e for e in _errors(at)), _errors(at)
    assert at.button(key="study-start").disabled
    ok(at.text_input(key="learner").input(NAME).run())
    assert not at.button(key="study-start").disabled
    assert "No answers recorded for Ada Tester yet" in page_text(at)
    assert {m.label for m in at.metric} >= {"Reviews", "Due now", "Due today", "Due this week"}


def test_an_estimate_refuses_bad_input_then_scores_the_planners_figure(
    at: AppTest, data_dir: Path
) -> None:
    item = _first("estimate", plan=True)
    figure = compute(item, 0)
    _ask(at, item)
    assert item.id in "\n".join(c.value for c in at.caption)
    for bad, says in (
        ("12 parsecs", "'parsecs' is not a unit"),
        ("lots", "is not a number"),
        ("-5", "never negative"),
        ("", "the answer is empty"),
    ):
        _check(at, "study-q-0", bad)
        assert any(says in e for e in _errors(at)), (bad, _errors(at))
    assert _store(data_dir).reviews(NAME) == []  # nothing recorded for a bad answer

    _check(at, "study-q-0", f"{figure.value:.6g}")
    assert not _errors(at)
    text = page_text(at)
    assert "Exact]" in text and figure.text in text
    for line in figure.chain:  # the planner's own chain, shown after the answer
        assert line.split(":")[0] in text
    assert f"design notes (text {item.source.file})" in text
    reviews = _store(data_dir).reviews(NAME)
    assert [(r["item_id"], r["verdict"], r["grade"]) for r in reviews] == [
        (item.id, "exact", "good")
    ]
    ok(at.button(key="study-next-0").click().run())
    assert "Session done: 1 answered, 0 skipped." in page_text(at)


def test_a_wrong_estimate_is_off_and_comes_back_soon(at: AppTest, data_dir: Path) -> None:
    item = _first("estimate", plan=True)
    _ask(at, item)
    _check(at, "study-q-0", f"{compute(item, 0).value * 10:.6g}")
    assert "Off]" in page_text(at)
    assert _store(data_dir).reviews(NAME)[0]["grade"] == "again"


def test_a_concept_shows_the_key_point_checklist_and_records_the_self_grade(
    at: AppTest, data_dir: Path
) -> None:
    item = _first("concept")
    _ask(at, item)
    ok(at.text_area(key="study-q-0-text").input("   ").run())
    ok(at.button(key="study-q-0-check").click().run())
    assert any("the answer is empty" in e for e in _errors(at)), _errors(at)
    # An answer naming one synonym of every group of the first key point covers it.
    first = item.key_points[0]
    answer = " and ".join(group[0] for group in first.terms)
    at.text_area(key="study-q-0-text").input(answer)
    ok(at.button(key="study-q-0-check").click().run())
    text = page_text(at)
    assert "your answer covered" in text
    assert first.text.split(",")[0][:30].replace("*", "") in text.replace("\\", "")
    assert "covered]" in text
    assert [b.key for b in at.button if b.key and b.key.startswith("study-grade-")] == [
        "study-grade-0-again",
        "study-grade-0-hard",
        "study-grade-0-good",
        "study-grade-0-easy",
    ]
    ok(at.button(key="study-grade-0-hard").click().run())
    reviews = _store(data_dir).reviews(NAME)
    assert [(r["item_id"], r["grade"], r["verdict"]) for r in reviews] == [(item.id, "hard", None)]
    assert "Session done: 1 answered" in page_text(at)


def test_start_plans_a_session_from_the_choices(at: AppTest) -> None:
    system = _first("estimate", plan=True).system
    at.multiselect(key="study-systems").set_value([system])
    at.slider(key="study-minutes").set_value(5)
    at.checkbox(key="study-drill").uncheck()
    ok(at.button(key="study-start").click().run())
    entries = at.session_state["study-entries"]
    assert entries and all(bank()[e["id"]].system == system for e in entries)
    assert all(bank()[e["id"]].kind != "drill" for e in entries)
    assert at.get("progress")[0].proto.text == f"Question 1 of {len(entries)}"
    ok(at.button(key="study-skip-0").click().run())
    assert at.session_state["study-pos"] == 1
    if len(entries) > 1:
        ok(at.button(key="study-end").click().run())
    else:
        assert "1 skipped" in page_text(at)
        ok(at.button(key="study-again").click().run())
    assert not at.button(key="study-start").disabled  # back at the setup


def _script_with_estimates():  # type: ignore[no-untyped-def]
    for script in scripts().values():
        if any(step.estimates for step in script.steps):
            return script
    pytest.fail("no interview script names estimate items")


def test_a_mock_interview_runs_six_steps_and_saves_the_decision(
    at: AppTest, data_dir: Path
) -> None:
    script = _script_with_estimates()
    at.selectbox(key="iv-design").select(script.design)
    ok(at.button(key="iv-start").click().run())
    for index, step in enumerate(script.steps):
        assert f"Step {index + 1} of 6" in str(at.get("progress")[0].proto.text)
        shown = [m.value for m in at.markdown if "Interviewer]" in m.value]
        assert len(shown) == 1
        if len(step.prompts) > 1:
            ok(at.button(key=f"iv-next-prompt-{step.name}").click().run())
            assert len([m for m in at.markdown if "Interviewer]" in m.value]) == 2
        for item_id in step.estimates[:1]:
            key = f"iv-est-{item_id.replace('.', '-')}"
            _check(at, key, "12 parsecs")
            assert any("parsecs" in e for e in _errors(at))
            _check(at, key, f"{compute(bank()[item_id], 0).value:.6g}")
            assert "Exact]" in page_text(at)
        at.text_area(key=f"iv-step-{step.name}-notes").input(f"notes for {step.name}")
        ok(at.button(key=f"iv-next-step-{step.name}").click().run())
    assert "Interview over" in page_text(at)
    for box in at.checkbox:
        if box.key and box.key.startswith(f"iv-rubric-{script.steps[0].name}-"):
            box.check()
    ok(at.button(key="iv-save").click().run())
    assert any("still empty: DECISION, BECAUSE, GIVING UP, BOUNDARY" in e for e in _errors(at))
    for part in ("decision", "because", "giving_up", "boundary"):
        at.text_area(key=f"iv-decision-{part}").input(f"my {part}")
    ok(at.button(key="iv-save").click().run())
    assert "Saved as interview #1." in page_text(at)

    saved = _store(data_dir).interviews(NAME)
    assert len(saved) == 1
    run = saved[0]
    assert run["design"] == script.design
    assert [s["name"] for s in run["steps"]] == [s.name for s in script.steps]
    assert all(s["seconds"] >= 0 for s in run["steps"])
    assert run["steps"][0]["notes"] == f"notes for {script.steps[0].name}"
    assert all(r["met"] for r in run["steps"][0]["rubric"])
    assert not any(r["met"] for r in run["steps"][1]["rubric"])
    estimate = next(s for s in run["steps"] if s["name"] == "estimate")
    assert estimate["estimates"][0]["verdict"] == "exact"
    assert run["decision"] == {
        p: f"my {p}" for p in ("decision", "because", "giving_up", "boundary")
    }
    # The Progress tab counts it and lists it.
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Mock interviews"] == "1"
    assert any(e.label.startswith("#1 · ") for e in at.expander)


def test_progress_shows_accuracy_weakest_topics_and_cards_due(data_dir: Path) -> None:
    store = _store(data_dir)
    concept, estimate = _first("concept"), _first("estimate")
    store.record(
        NAME,
        Review(concept.id, concept.kind, concept.system, concept.topic, concept.level, "again"),
    )
    store.record(
        NAME,
        Review(
            estimate.id,
            estimate.kind,
            estimate.system,
            estimate.topic,
            estimate.level,
            "good",
            verdict="exact",
            answer="1",
        ),
    )
    at = open_page(STUDY)
    ok(at.text_input(key="learner").input(NAME).run())
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Reviews"] == "2"
    assert int(metrics["Due this week"]) == 2
    chart = at.get("plotly_chart")
    assert chart, "the accuracy chart is drawn"
    weakest, recent = (d.value for d in at.dataframe)  # left column, then right
    assert list(weakest["topic"])[0] == concept.topic  # the one graded again comes first
    assert list(recent["item"]) == [estimate.id, concept.id]
