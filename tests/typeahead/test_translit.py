"""Hindi in Latin letters: romanisation and spelling-variant grouping."""

from __future__ import annotations

from lookup.typeahead.translit import group_variants, phonetic_key, romanize


def test_romanize_gives_the_spelling_people_type() -> None:
    assert romanize("क्या है") == "kya hai"
    assert romanize("मौसम") == "mausam"
    assert romanize("दिल्ली का मौसम") == "dilli ka mausam"
    assert romanize("already latin") == "already latin"


def test_variants_share_a_key() -> None:
    assert phonetic_key("kya") == phonetic_key("kyaa") == phonetic_key("kia")
    assert phonetic_key("kaise") == phonetic_key("kese") == phonetic_key("kaisey")
    assert phonetic_key("mausam") == phonetic_key("mosam") == phonetic_key("मौसम")
    assert phonetic_key("kya kar rahe ho") == phonetic_key("kya kar rhe ho")
    assert phonetic_key("kya") != phonetic_key("ke")


def test_group_shows_each_script_its_own_spelling() -> None:
    queries = ["kya hai", "kyaa hai", "kia hai", "क्या है", "mausam"]
    scores = [50.0, 20.0, 10.0, 40.0, 99.0]
    groups = group_variants(queries, scores)
    assert len(groups) == 1
    g = groups[0]
    assert set(g.members) == {"kya hai", "kyaa hai", "kia hai", "क्या है"}
    assert g.display == {"latn": "kya hai", "deva": "क्या है"}


def test_devanagari_joins_only_through_an_observed_romanisation() -> None:
    # माता (mother) and मत (opinion) collide phonetically; only the one whose
    # romanisation people actually typed joins the Latin group
    groups = group_variants(["maata", "माता", "मत"], [5.0, 4.0, 3.0])
    assert len(groups) == 1 and set(groups[0].members) == {"maata", "माता"}
    assert group_variants(["मत", "मौसम"], [1.0, 2.0]) == []
