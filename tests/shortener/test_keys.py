"""Keys: minted keys are 7 base62 chars, unique, invertible; aliases never look generated."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.kit.ids import BASE62_ALPHABET, FeistelPermutation, SqliteIdAllocator
from lookup.shortener.keys import (
    KEY_LENGTH,
    KEY_SHAPE,
    KEY_SPACE,
    RESERVED_WORDS,
    AliasRejected,
    KeyMinter,
    ReservedWords,
    is_generated_shape,
    validate_alias,
)

SECRET = b"0123456789abcdef0123456789abcdef"


def _minter(tmp_path: Path, reserved: ReservedWords | None = None) -> KeyMinter:
    tmp_path.mkdir(parents=True, exist_ok=True)
    alloc = SqliteIdAllocator(tmp_path / "ids.sqlite3", "links", block_size=50)
    return KeyMinter(alloc, FeistelPermutation(KEY_SPACE, SECRET), reserved or ReservedWords())


def test_minted_keys_are_seven_base62_characters_unique_and_invertible(tmp_path: Path) -> None:
    minter = _minter(tmp_path)
    minted = [minter.mint() for _ in range(2_000)]
    keys = [k for _, k in minted]
    assert len(set(keys)) == len(keys)
    for ident, key in minted:
        assert len(key) == KEY_LENGTH and all(c in BASE62_ALPHABET for c in key)
        assert is_generated_shape(key)
        assert minter.id_for(key) == ident
    # consecutive ids give keys that share no common prefix beyond chance
    shared_prefix = sum(a[:3] == b[:3] for a, b in zip(keys, keys[1:], strict=False))
    assert shared_prefix < 5


def test_id_for_refuses_keys_that_are_not_generated(tmp_path: Path) -> None:
    minter = _minter(tmp_path)
    for bad in ("ipl-final", "abc", "abcdefgh"):
        with pytest.raises(ValueError):
            minter.id_for(bad)


def test_a_key_spelling_a_reserved_word_is_skipped(tmp_path: Path) -> None:
    probe = _minter(tmp_path / "a")
    first_key = probe.key_for(0)  # the key id 0 would get
    reserved = ReservedWords([first_key])
    minter = _minter(tmp_path / "b", reserved)
    ident, key = minter.mint()
    assert (ident, minter.skipped_reserved) == (1, 1) and key != first_key


@pytest.mark.parametrize(
    "alias",
    ["ipl-final", "abc", "ipl_2026", "ipl20266", "a-b-c-d", "X" * 64, "Summer-Sale", "007"],
)
def test_good_aliases(alias: str) -> None:
    assert validate_alias(alias, ReservedWords()) == alias


@pytest.mark.parametrize(
    ("alias", "code"),
    [
        ("ab", "INVALID_ALIAS"),
        ("x" * 65, "INVALID_ALIAS"),
        ("ipl2026", "INVALID_ALIAS"),  # 7 alphanumerics: the generated-key shape
        ("-start", "INVALID_ALIAS"),
        ("has space", "INVALID_ALIAS"),
        ("dot.ted", "INVALID_ALIAS"),
        ("slash/x", "INVALID_ALIAS"),
        ("plus+", "INVALID_ALIAS"),
        ("ünï", "INVALID_ALIAS"),
        ("login", "RESERVED_ALIAS"),
        ("LOGIN", "RESERVED_ALIAS"),
        ("Admin", "RESERVED_ALIAS"),
        ("healthz", "INVALID_ALIAS"),  # 7 letters: refused by shape before the reserved check
        ("docs", "RESERVED_ALIAS"),
        ("v1", "INVALID_ALIAS"),
        ("search", "RESERVED_ALIAS"),
        (12345, "INVALID_ALIAS"),
        (None, "INVALID_ALIAS"),
    ],
)
def test_bad_aliases(alias: object, code: str) -> None:
    with pytest.raises(AliasRejected) as info:
        validate_alias(alias, ReservedWords())
    assert info.value.code == code


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.text(max_size=80), st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_-]{1,70}", fullmatch=True)
    )
)
def test_accepted_aliases_never_look_generated_and_always_route(alias: str) -> None:
    reserved = ReservedWords()
    try:
        accepted = validate_alias(alias, reserved)
    except AliasRejected as exc:
        assert exc.code in ("INVALID_ALIAS", "RESERVED_ALIAS")
        return
    assert not is_generated_shape(accepted)
    assert KEY_SHAPE.fullmatch(accepted)  # the redirect route will match it
    assert accepted not in reserved


def test_reserved_words_can_grow_and_ignore_case() -> None:
    words = ReservedWords()
    assert "LoGiN" in words and "docs" in words and len(words) == len(RESERVED_WORDS)
    words.add(["Suggest-Me", ""])
    assert "suggest-me" in words
    assert 42 not in words
