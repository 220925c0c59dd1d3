"""Normalisation: builder and server must agree byte for byte."""

from __future__ import annotations

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from lookup.typeahead.normalize import (
    code_points,
    has_control_chars,
    normalize_prefix,
    normalize_query,
    script_of,
)


def test_case_whitespace_and_trim() -> None:
    assert normalize_query("  IPhone   17\tPRICE \n") == "iphone 17 price"
    assert normalize_prefix("  IPL ") == "ipl "  # one trailing space survives while typing
    assert normalize_prefix("ipl   sc") == "ipl sc"


def test_nfc_makes_keyboards_agree() -> None:
    decomposed = "cafe\u0301"  # e + combining acute
    assert normalize_query(decomposed) == normalize_query("café") == "café"
    # Devanagari: क + nukta composes to क़ in NFC (U+0958 is excluded from composition,
    # so NFC keeps the pair; both inputs still end up identical)
    assert normalize_query("\u0958") == normalize_query("\u0915\u093c")


def test_conjunct_is_three_code_points() -> None:
    assert code_points("क्ष") == ["क", "्", "ष"]
    assert len(normalize_query("क्ष")) == 3


def test_control_characters() -> None:
    assert has_control_chars("a\x00b")
    assert has_control_chars("a\u202eb")  # right-to-left override (format character)
    assert not has_control_chars("a b\tc")
    assert not has_control_chars("क्\u200dष")  # ZWJ is meaningful in Devanagari


def test_script_of() -> None:
    assert script_of("मौसम") == "deva"
    assert script_of("kya hai") == "latn"
    assert script_of("2026") == "other"


@given(st.text(max_size=40))
def test_normalize_is_idempotent_and_canonical(text: str) -> None:
    once = normalize_query(text)
    assert normalize_query(once) == once
    assert unicodedata.is_normalized("NFC", once)
    assert "  " not in once and once == once.strip()


@given(st.text(max_size=30))
def test_a_prefix_of_a_query_normalises_to_a_prefix(text: str) -> None:
    q = normalize_query(text)
    for i in range(len(q) + 1):
        assert q.startswith(normalize_prefix(q[:i]))
