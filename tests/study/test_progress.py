"""Progress in SQLite, scheduled by FSRS; sessions; the Anki export; key-point checklists."""

from __future__ import annotations

import sqlite3
import zipfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fsrs import Card, Rating, Scheduler

from lookup.study.anki import export_apkg
from lookup.study.bank import KeyPoint, bank
from lookup.study.keypoints import coverage, suggested_grade
from lookup.study.progress import ProgressStore, Review, check_learner, progress_in
from lookup.study.session import MINUTES, plan_session

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def _review(item_id: str, grade: str, verdict: str | None = None) -> Review:
    item = bank()[item_id]
    return Review(item.id, item.kind, item.system, item.topic, item.level, grade, verdict=verdict)


def _some(kind: str, n: int = 1) -> list[str]:
    return [i.id for i in bank().values() if i.kind == kind][:n]


@pytest.fixture
def store(tmp_path: Path) -> ProgressStore:
    s = progress_in(tmp_path)
    yield s
    s.close()


def test_due_dates_are_fsrs_own(store: ProgressStore) -> None:
    """The oracle: the fsrs package's scheduler run by hand on the same reviews."""
    item = _some("concept")[0]
    scheduler = Scheduler(enable_fuzzing=False)
    card = Card(due=T0)
    when = T0
    for grade, rating in (("good", Rating.Good), ("good", Rating.Good), ("hard", Rating.Hard),
                          ("again", Rating.Again), ("easy", Rating.Easy)):  # fmt: skip
        due = store.record("ana", _review(item, grade), when)
        card, _ = scheduler.review_card(card, rating, review_datetime=when)
        assert due == card.due
        when = card.due + timedelta(hours=1)
    assert store.due("ana", card.due) == [(item, card.due.replace(microsecond=0))]
    assert store.due("ana", card.due - timedelta(seconds=5)) == []


def test_accuracy_weakest_first_and_due_counts(store: ProgressStore) -> None:
    estimates = [i for i in bank().values() if i.kind == "estimate"]
    a = estimates[0].id
    b = next(
        i.id for i in estimates if (i.system, i.topic) != (estimates[0].system, estimates[0].topic)
    )
    c = next(
        i.id
        for i in bank().values()
        if i.kind == "concept" and i.system not in (bank()[a].system, bank()[b].system)
    )
    store.record("ana", _review(a, "good", "exact"), T0)
    store.record("ana", _review(b, "again", "off"), T0)
    store.record("ana", _review(c, "hard"), T0)
    rows = store.accuracy("ana")
    assert [r["accuracy"] for r in rows] == sorted(r["accuracy"] for r in rows)
    assert rows[0]["accuracy"] == 0.0
    assert sum(r["reviews"] for r in rows) == 3
    counts = store.due_counts("ana", T0 + timedelta(hours=1))
    assert counts["now"] == 3 and counts["week"] == 3  # all three still in FSRS learning steps
    assert store.learners() == ["ana"]
    assert store.due_counts("bob", T0) == {"now": 0, "today": 0, "week": 0}


def test_progress_survives_reopening_the_file(tmp_path: Path) -> None:
    s = progress_in(tmp_path)
    s.record("ana", _review(_some("flashcard")[0], "good"), T0)
    steps = [{"step": "clarify", "seconds": 30, "notes": "n"}]
    decision = {"decision": "d", "because": "b", "giving_up": "g", "boundary": "x"}
    s.save_interview("ana", "shortener", T0, steps, decision)
    s.close()
    s = progress_in(tmp_path)
    assert len(s.reviews("ana")) == 1
    assert s.interviews("ana")[0]["decision"]["boundary"] == "x"
    s.close()


@pytest.mark.parametrize("name", ["", "   ", "x" * 41, "a\x00b", "tab\there"])
def test_bad_learner_names_are_refused(name: str) -> None:
    with pytest.raises(ValueError):
        check_learner(name)


def test_odd_unicode_names_are_kept() -> None:
    assert check_learner("  Zoë 山田  ") == "Zoë 山田"


def test_grades_must_be_fsrs_ratings(store: ProgressStore) -> None:
    with pytest.raises(ValueError, match="grade"):
        store.record("ana", _review(_some("concept")[0], "exact"), T0)


def test_a_session_mixes_due_cards_estimates_and_a_drill(store: ProgressStore) -> None:
    entries = plan_session(store, "ana", minutes=30, seed=1)
    kinds = [bank()[e.item_id].kind for e in entries]
    assert "estimate" in kinds and "drill" in kinds and "predict" in kinds
    assert kinds.count("drill") == 1 and kinds[-1] == "drill"
    assert sum(MINUTES[k] for k in kinds) <= 30
    assert len({e.item_id for e in entries}) == len(entries)
    # Answer the first one badly: it comes back first, as due, in a later session.
    first = bank()[entries[0].item_id]
    store.record("ana", _review(first.id, "again", "off" if first.computed else None), T0)
    later = plan_session(store, "ana", minutes=10, seed=2, now=T0 + timedelta(hours=1))
    assert later[0].item_id == first.id and later[0].reason == "due"


def test_a_session_keeps_to_the_systems_and_levels_chosen(store: ProgressStore) -> None:
    entries = plan_session(store, "ana", systems=["typeahead"], levels=["staff"], minutes=20,
                           seed=3, drills=False)  # fmt: skip
    assert entries
    for e in entries:
        item = bank()[e.item_id]
        assert item.system == "typeahead" and item.level == "staff" and item.kind != "drill"
    with pytest.raises(ValueError, match="unknown system"):
        plan_session(store, "ana", systems=["mainframe"])
    with pytest.raises(ValueError, match="minutes"):
        plan_session(store, "ana", minutes=0)


def test_the_anki_deck_holds_one_note_per_concept_and_flashcard(tmp_path: Path) -> None:
    out = tmp_path / "deck.apkg"
    n = export_apkg(out)
    expected = [i for i in bank().values() if i.kind in ("concept", "flashcard")]
    assert n == len(expected)
    with zipfile.ZipFile(out) as z:
        z.extract("collection.anki2", tmp_path)
    db = sqlite3.connect(tmp_path / "collection.anki2")
    rows = db.execute("SELECT flds, tags FROM notes").fetchall()
    db.close()
    assert len(rows) == len(expected)
    ids = {r[0].split("\x1f")[0] for r in rows}
    assert ids == {i.id for i in expected}
    some = expected[0]
    tags = next(r[1] for r in rows if r[0].startswith(some.id + "\x1f"))
    assert f"system::{some.system}" in tags and f"level::{some.level}" in tags


def test_key_points_are_a_checklist_by_stem_and_synonym() -> None:
    points = [
        KeyPoint(
            text="302 keeps every click",
            terms=[["302", "temporary redirect"], ["click", "analytics"]],
        ),
        KeyPoint(text="quorums overlap", terms=[["R+W>N", "overlap"]]),
        KeyPoint(text="cafés fold", terms=[["cafe"]]),
    ]
    got = coverage("A Temporary Redirect, so all the clicks are counted. Café!", points)
    assert [r.covered for r in got] == [True, False, True]
    assert got[0].matched == ("temporary redirect", "click")
    assert got[1].missing == (("R+W>N", "overlap"),)
    assert coverage("we need r + w > n", points[1:2])[0].covered
    assert not coverage("redirect temporary", points[:1])[0].covered  # a phrase is in order
    assert suggested_grade(got) == "hard"
    assert suggested_grade(coverage("", points)) == "again"
