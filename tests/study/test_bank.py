"""The question bank: schema, coverage, computed answers from the real code, our own words."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from lookup.study.answers import parse_answer, score
from lookup.study.bank import KINDS, LEVELS, SYSTEMS, BankError, bank, load_items, parse_file
from lookup.study.checking import compute, params_for, prompt_for

ROOT = Path(__file__).resolve().parents[2]
SEEDS = ROOT.parent / "shared" / "seeds"
ITEMS = bank()
ESTIMATES = sorted(i.id for i in ITEMS.values() if i.kind == "estimate")


def test_the_bank_loads_and_is_big_enough() -> None:
    assert len(ITEMS) >= 150
    assert load_items() == ITEMS  # the packaged files, loaded again, give the same bank


def test_every_system_block_kind_and_level_is_covered() -> None:
    systems = Counter(i.system for i in ITEMS.values())
    assert set(systems) == set(SYSTEMS), set(SYSTEMS) - set(systems)
    assert min(systems.values()) >= 8, systems
    assert set(Counter(i.kind for i in ITEMS.values())) == set(KINDS)
    assert set(Counter(i.level for i in ITEMS.values())) == set(LEVELS)
    for system in ("shortener", "typeahead", "proximity", "crawler", "search"):
        kinds = {i.kind for i in ITEMS.values() if i.system == system}
        assert {"estimate", "concept"} <= kinds, (system, kinds)


def test_a_file_that_breaks_the_schema_is_refused_with_its_name(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(
        '[[item]]\nid = "shortener.x"\nsystem = "shortener"\ntopic = "tt"\nlevel = "easy"\n'
        'kind = "concept"\nprompt = "A prompt long enough"\n'
        'key_points = [{ text = "a point", terms = [["a"]] }]\n'
        'source = { file = "000", section = "Somewhere" }\n',
        encoding="utf-8",
    )
    with pytest.raises(BankError, match=r"(?s)bad\.toml: shortener\.x: .*level"):
        parse_file(bad)
    bad.write_text(
        bad.read_text().replace('"easy"', '"interview"')
        + 'checker = { plan = "shortener", figure = "reads_per_s" }\n'
    )
    with pytest.raises(BankError, match="has no checker"):
        parse_file(bad)
    (tmp_path / "bad.toml").write_text("[[item]\n", encoding="utf-8")
    with pytest.raises(BankError, match="not valid TOML"):
        parse_file(bad)


def test_prompts_name_only_known_parameters_and_every_varied_one() -> None:
    bad = []
    for item in ITEMS.values():
        if item.checker is None:
            assert "{" not in item.prompt or not re.search(r"\{[a-z_]+\}", item.prompt), item.id
            continue
        if item.kind == "drill":
            continue
        params = params_for(item, 0)
        slots = set(re.findall(r"\{([a-z_][a-z0-9_]*)\}", item.prompt))
        if slots - set(params):
            bad.append(f"{item.id}: unknown slots {slots - set(params)}")
        if set(item.checker.vary) - slots:
            bad.append(f"{item.id}: varies {set(item.checker.vary) - slots} without saying so")
        if set(item.checker.vary) - set(params):
            bad.append(
                f"{item.id}: varies unknown parameters {set(item.checker.vary) - set(params)}"
            )
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("item_id", ESTIMATES)
def test_an_estimate_is_answered_by_its_checker_and_a_tenfold_answer_is_off(item_id: str) -> None:
    item = ITEMS[item_id]
    figure = compute(item, 0)
    assert figure.value > 0 and figure.chain, item_id
    # The answer comes from the real planner or formula, not from the bank.
    c = item.checker
    assert c is not None
    if c.plan:
        from lookup import capacity

        direct = capacity.figures(capacity.plan(c.plan, **c.params))[c.figure or ""]
    else:
        from lookup.study.computed import FUNCTIONS

        f = FUNCTIONS[c.function or ""]
        direct = f.fn(**{**f.defaults, **c.params})[0]
    assert figure.value == pytest.approx(direct, rel=1e-12)
    assert score(figure.value, figure.value, figure.unit).verdict == "exact"
    assert score(figure.value * 10, figure.value, figure.unit).verdict == "off"
    assert score(figure.value / 10, figure.value, figure.unit).verdict == "off"
    # The figure as people read it parses back to itself (within the shown rounding).
    assert (
        score(
            parse_answer(figure.text.replace(" chars", ""), figure.unit), figure.value, figure.unit
        ).verdict
        == "exact"
    )


@pytest.mark.parametrize(
    "item_id", [i for i in ESTIMATES if ITEMS[i].checker and ITEMS[i].checker.vary]
)
def test_variants_change_the_question_and_the_answer(item_id: str) -> None:
    item = ITEMS[item_id]
    answers = {round(compute(item, v).value, 9) for v in range(6)}
    prompts = {prompt_for(item, v) for v in range(6)}
    assert len(prompts) >= 5, item_id
    assert len(answers) >= 2, item_id
    assert params_for(item, 3) == params_for(item, 3)  # seeded: the same variant asks the same


def test_variant_zero_is_the_design_texts_own_assumptions() -> None:
    for item in ITEMS.values():
        if item.kind == "estimate" and item.checker and item.checker.plan:
            from lookup.study.computed import plan_defaults

            assert params_for(item, 0) == {
                **plan_defaults(item.checker.plan),
                **item.checker.params,
            }


def test_every_item_has_estimate_ids_that_interviews_name() -> None:
    from lookup.study.interview import scripts

    for script in scripts().values():
        for step in script.steps:
            for item_id in step.estimates:
                assert ITEMS[item_id].kind == "estimate", item_id
                assert ITEMS[item_id].system == script.design, item_id


def _ngrams(text: str, n: int = 8) -> set[tuple[str, ...]]:
    words = re.findall(r"[a-z0-9]+", text.lower())
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


@pytest.mark.skipif(not SEEDS.is_dir(), reason="the design texts sit beside the checkout only")
def test_no_item_copies_eight_words_from_the_design_texts() -> None:
    seed = set().union(*(_ngrams(p.read_text(encoding="utf-8")) for p in SEEDS.glob("0*.txt")))
    texts = [(i.id, t) for i in ITEMS.values() for t in [i.prompt, *(k.text for k in i.key_points)]]
    from lookup.study.interview import scripts

    for script in scripts().values():
        for step in script.steps:
            texts += [(f"interview:{script.design}", t) for t in [*step.prompts, *step.rubric]]
    copied = [
        f"{ident}: {' '.join(sorted(_ngrams(t) & seed)[0])}"
        for ident, t in texts
        if _ngrams(t) & seed
    ]
    assert not copied, "\n".join(copied)


def test_every_predict_item_varies_what_it_asks() -> None:
    """Experiments are run by tests/study/test_experiments.py; here: the variants differ."""
    for item in ITEMS.values():
        if item.kind != "predict":
            continue
        assert item.checker is not None and item.checker.vary, item.id
        asked = {prompt_for(item, v) for v in range(6)}
        assert len(asked) >= 3, item.id
        assert prompt_for(item, 0) == prompt_for(item, 0)
