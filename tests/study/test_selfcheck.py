"""The notebooks' self-check questions: picked from the bank, judged by the bank's own code."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from lookup.study import selfcheck
from lookup.study.bank import bank, get_item
from lookup.study.checking import compute

NOTEBOOK_DIR = Path(__file__).resolve().parents[2] / "notebooks"
#: Every system a notebook is about.
NOTEBOOK_SYSTEMS = sorted({s for names in selfcheck.NOTEBOOK_SYSTEMS.values() for s in names})
_CALL = re.compile(r"selfcheck\.(ask|check)\(\s*\"([a-z]+\.[a-z0-9-]+)\"")


@pytest.mark.parametrize("system", NOTEBOOK_SYSTEMS)
def test_questions_are_three_existing_items_of_the_system(system: str) -> None:
    items = selfcheck.questions(system)
    assert len(items) == 3
    assert len({i.id for i in items}) == 3
    for item in items:
        assert bank()[item.id] == item
        assert item.system == system
        assert item.kind != "drill"
    assert items[0].kind == "estimate"
    assert items[1].kind == "concept"
    assert items[2].kind in ("flashcard", "predict")


@pytest.mark.parametrize("system", NOTEBOOK_SYSTEMS)
def test_questions_are_the_same_every_call(system: str) -> None:
    assert [i.id for i in selfcheck.questions(system)] == [
        i.id for i in selfcheck.questions(system)
    ]


def test_questions_take_kinds_and_several_systems() -> None:
    three = selfcheck.questions(("kv", "cache"), n=3, kinds=("estimate",))
    assert [i.kind for i in three] == ["estimate"] * 3
    assert [i.system for i in three][:2] == ["kv", "cache"]
    assert len(selfcheck.questions("shortener", n=7)) == 7


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"system": "nowhere"}, "unknown system"),
        ({"system": "kv", "kinds": ("essay",)}, "unknown kind"),
        ({"system": "kv", "n": 0}, "at least 1"),
    ],
)
def test_questions_reject_bad_arguments(args: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        selfcheck.questions(**args)


@pytest.mark.parametrize("name", sorted(selfcheck.NOTEBOOKS))
def test_notebook_questions_exist(name: str) -> None:
    ids = selfcheck.NOTEBOOKS[name]
    assert len(ids) == 3
    for item_id in ids:
        assert item_id in bank(), f"{name}: {item_id} is not in the bank"
    assert [i.id for i in selfcheck.for_notebook(name)] == list(ids)


@pytest.mark.parametrize("name", sorted(selfcheck.NOTEBOOKS))
def test_notebook_ends_with_its_self_check(name: str) -> None:
    nb = nbformat.read(NOTEBOOK_DIR / f"{name}.ipynb", as_version=4)
    headings = [
        i
        for i, c in enumerate(nb.cells)
        if c.cell_type == "markdown" and "Check yourself" in c.source
    ]
    assert headings, f"{name} has no 'Check yourself' section"
    tail = "\n".join(c.source for c in nb.cells[headings[-1] :] if c.cell_type == "code")
    asked = [m[2] for m in _CALL.finditer(tail) if m[1] == "ask"]
    checked = [m[2] for m in _CALL.finditer(tail) if m[1] == "check"]
    assert asked == list(selfcheck.NOTEBOOKS[name])
    assert checked == asked


def _estimates() -> list[str]:
    return sorted(
        {i for ids in selfcheck.NOTEBOOKS.values() for i in ids if get_item(i).kind == "estimate"}
    )


@pytest.mark.parametrize("item_id", _estimates())
def test_estimate_exact_at_the_computed_figure_and_off_at_ten_times(item_id: str) -> None:
    figure = compute(get_item(item_id))
    right = selfcheck.check(item_id, repr(figure.value))
    assert right.error is None
    assert right.verdict == "exact"
    assert right.chain == list(figure.chain) and right.chain
    wrong = selfcheck.check(item_id, repr(figure.value * 10))
    assert wrong.verdict == "off"
    shown = wrong._repr_markdown_()
    assert "**Off**" in shown
    assert figure.chain[-1].split()[-1] in str(wrong)


def test_estimate_shows_figure_and_chain() -> None:
    result = selfcheck.check("shortener.peak-reads", "15k/s")
    assert result.verdict == "close"
    assert result.expected == compute(get_item("shortener.peak-reads")).text
    text = str(result)
    assert result.expected in text
    for line in result.chain:
        assert line in text
    assert "Source: design notes, text" in text


def test_variant_changes_the_question_and_the_answer() -> None:
    item = get_item("search.fanout-tail")
    v0, v3 = compute(item, 0), compute(item, 3)
    assert v0.value != v3.value
    assert selfcheck.ask("search.fanout-tail", 3) != selfcheck.ask("search.fanout-tail", 0)
    assert selfcheck.check("search.fanout-tail", repr(v3.value), variant=3).verdict == "exact"


@pytest.mark.parametrize("item_id", ["shortener.alias-race", "kv.isolated-replica-w1"])
def test_concept_check_lists_the_key_points(item_id: str) -> None:
    item = get_item(item_id)
    result = selfcheck.check(item_id, "I do not know")
    assert result.verdict is None
    assert [p["point"] for p in result.points] == [kp.text for kp in item.key_points]
    shown = result._repr_markdown_()
    assert f"of {len(item.key_points)} key points" in shown
    assert shown.count("✗") == len(item.key_points) - (result.covered or 0)


def test_concept_check_marks_what_the_answer_covered() -> None:
    answer = (
        "Both requests read the table, see the alias free and both write, so the second "
        "overwrites the first. Make it one conditional insert: exactly one wins, the other "
        "gets 409, and no lock is needed."
    )
    result = selfcheck.check("shortener.alias-race", answer)
    assert result.covered == 4
    assert result.grade == "good"
    assert "✗" not in str(result)


@pytest.mark.parametrize("answer", ["lots", "12 parsecs", "", "-5"])
def test_unreadable_answer_is_a_clear_message(answer: str) -> None:
    result = selfcheck.check("shortener.peak-reads", answer)
    assert result.error
    assert result.verdict is None
    assert "Could not read the answer" in result._repr_markdown_()


def test_empty_free_text_is_a_clear_message() -> None:
    result = selfcheck.check("kv.virtual-nodes", "   ")
    assert result.error and "empty" in result.error


def test_unknown_id_names_close_ids() -> None:
    with pytest.raises(KeyError, match="did you mean"):
        selfcheck.check("shortener.peak-read", "1")
    with pytest.raises(KeyError):
        selfcheck.ask("nowhere.at-all")


def test_ask_is_markdown_with_the_variant_numbers() -> None:
    prompt = selfcheck.ask("typeahead.trie-memory")
    assert isinstance(prompt, str)
    assert prompt._repr_markdown_() == str(prompt)
    assert "`typeahead.trie-memory`" in prompt
    assert "100M" in prompt and "{" not in prompt
    assert "size" in prompt  # the hint says what kind of answer is wanted
    concept = selfcheck.ask("kv.isolated-replica-w1")
    assert "key points" in concept
    with pytest.raises(ValueError):
        selfcheck.ask("typeahead.trie-memory", variant=-1)


def test_selfcheck_imports_no_jupyter() -> None:
    source = Path(selfcheck.__file__).read_text(encoding="utf-8")
    assert not re.search(
        r"^\s*(import|from)\s+(IPython|ipywidgets|jupyter|streamlit)", source, re.M
    )


def test_predict_check_runs_the_real_experiment() -> None:
    item = get_item("kv.run-ring-growth")
    measured = compute(item)
    result = selfcheck.check("kv.run-ring-growth", repr(measured.value))
    assert result.verdict == "exact"
    assert result.expected == measured.text
    assert "the real code measured" in str(result)
    assert "runs" in selfcheck.ask("kv.run-ring-growth")


def test_notebook_predict_items_are_embedded() -> None:
    from lookup.study.checking import experiment

    for ids in selfcheck.NOTEBOOKS.values():
        for item_id in ids:
            item = get_item(item_id)
            if item.kind == "predict":
                assert item.checker is not None and item.checker.experiment
                assert not experiment(item.checker.experiment).requires, item_id
