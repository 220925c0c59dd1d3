"""The column-wise text index build against the per-place path it replaced.

``TextIndex.build`` tokenises each distinct text once and forms every place's row with
one sort; ``TextIndex.encode_place`` (used for live edits) codes one place at a time.
Both must give every place the same (word, field) pairs: the best field per word,
accents folded, plurals stripped, nothing for numbers no place has.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.geo.index import GeohashIndex
from lookup.geo.ranking import TextIndex
from lookup.geo.store import COLUMNS

WORDS = [
    "biryani",
    "Biryanis",
    "café",
    "CAFE",
    "dosa",
    "pizza",
    "Pizzas",
    "golden",
    "ōsaka",
    "naïve",
    "x",
    "42",
    "under_score",
    "दिल्ली",
    "north-east",
    "a\x00b",
    "",
]
CATEGORIES = ["restaurant", "cafe", "pizza", "fuel", ""]

texts = st.lists(st.sampled_from(WORDS), max_size=4).map(" ".join)
tag_lists = st.lists(st.sampled_from(WORDS), max_size=3)


def _one_by_one(name: str, category: str, tags: list[str]) -> set[tuple[str, str]]:
    """The oracle: the per-place path, decoded to (word, field) pairs."""
    index = TextIndex()
    codes = index.encode_place(name, category, tags)
    names = {v: k for k, v in index.vocab.items()}
    fields = ("name", "tags", "category")
    return {(names[int(c) >> 2], fields[int(c) & 3]) for c in codes}


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            texts,
            st.sampled_from(CATEGORIES),
            tag_lists,
            st.sampled_from(["list", "tuple", "json"]),
        ),
        max_size=25,
    ),
    st.randoms(use_true_random=False),
)
def test_build_matches_the_per_place_path(
    places: list[tuple[str, str, list[str], str]], rnd: Any
) -> None:
    nums = list(range(0, 3 * len(places), 3))  # gaps: numbers no place has
    rnd.shuffle(nums)
    tags: list[Any] = []
    for _, _, tg, form in places:
        tags.append(tuple(tg) if form == "tuple" else json.dumps(tg) if form == "json" else tg)
    index = TextIndex.build(nums, [p[0] for p in places], [p[1] for p in places], tags)
    assert len(index.indptr) == (max(nums) + 2 if nums else 1)
    for num, (name, category, tg, _) in zip(nums, places, strict=True):
        assert set(index.words_of(num)) == _one_by_one(name, category, tg)
        row = index.data[index.indptr[num] : index.indptr[num + 1]]
        assert (np.diff(row) > 0).all()  # sorted by word, one entry per word
    absent = sorted(set(range(max(nums, default=-1) + 1)) - set(nums))
    assert all(index.words_of(n) == [] for n in absent)
    # relevance through the built index equals relevance through per-place edits
    edited = TextIndex.build(nums, [""] * len(nums), [""] * len(nums), [[]] * len(nums))
    for num, (name, category, tg, _) in zip(nums, places, strict=True):
        edited.set_place(num, name, category, tg)
    for query in ("biryani", "cafe pizza", "osaka naive", "42 under_score", "nothing"):
        want = edited.relevance(np.array(nums, dtype=np.int64), edited.query_ids(query))
        got = index.relevance(np.array(nums, dtype=np.int64), index.query_ids(query))
        assert got.tolist() == want.tolist()


def test_from_rows_accepts_dicts_tuples_and_nulls() -> None:
    base: dict[str, Any] = dict.fromkeys(COLUMNS)
    rows = [
        {
            **base,
            "num": 0,
            "name": "Biryani House",
            "lat": 12.9,
            "lng": 77.6,
            "category": "restaurant",
            "tags": '["dum biryani", "kebab"]',
            "price": 2,
            "review_count": 10,
            "review_stars": 45,
            "timezone": "Asia/Kolkata",
        },
        {
            **base,
            "num": 2,
            "name": "Café Olé",
            "lat": -33.9,
            "lng": 151.2,
            "category": "cafe",
            "tags": None,
            "price": None,
            "review_count": None,
            "review_stars": None,
        },
    ]
    from_dicts = GeohashIndex.from_rows(rows)
    from_tuples = GeohashIndex.from_rows(iter([tuple(r[c] for c in COLUMNS) for r in rows]))
    for index in (from_dicts, from_tuples):
        assert len(index) == 2
        assert sorted(index.base.num.tolist()) == [0, 2]
        assert ("kebab", "tags") in index.text.words_of(0)
        assert ("cafe", "name") in index.text.words_of(2)  # the name beats the category
        assert index.text.words_of(1) == []
        price = dict(zip(index.base.num.tolist(), index.base.price.tolist(), strict=True))
        assert price == {0: 2, 2: 0}
    assert from_dicts.text.nbytes == from_tuples.text.nbytes
    assert GeohashIndex.from_rows([]).memory()["places"] == 0
