"""The case rule in the link store (issue 27 item 6), on SQLite and PostgreSQL.

* claims: checked against a brute-force oracle (a set of folded keys) with hypothesis —
  a claim succeeds exactly when no key claimed before folds alike, and every spelling of
  a claimed key finds it;
* the migration of a database from before the rule: rows without a fold get one; of keys
  that fold alike, the oldest answers to every spelling and the younger ones to their
  exact spelling only (reported, never renamed); after it, no case variant can be claimed;
* generated keys are lower case, so the minter never collides with itself under folding.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lookup.kit.ids import FeistelPermutation, SqliteIdAllocator
from lookup.shortener.keys import KEY_ALPHABET, KEY_SPACE, KeyMinter, ReservedWords, fold
from lookup.shortener.links import KeyTaken, LinkStore
from lookup.shortener.links.sqlite import SqliteLinkStore
from lookup.shortener.model import Link
from lookup.shortener.resolver import Resolver

NOW = 1_800_000_000.0


def _link(key: str, at: float = NOW, url: str = "https://example.com/") -> Link:
    return Link(key=key, long_url=url, owner="o", created_at=at, updated_at=at, alias=True)


def _claim(store: LinkStore, link: Link) -> bool:
    try:
        store.create(link, render=lambda _link: {})
    except KeyTaken:
        return False
    return True


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'links.sqlite3'}"
        return
    yield request.getfixturevalue("postgres_db")


def _open(url: str) -> Any:
    from lookup.shortener.links import open_link_store

    return open_link_store(url)


# -- claims against a brute-force oracle -----------------------------------------------------

_SPELLING = st.text(alphabet="aAbBcC-", min_size=3, max_size=5).filter(lambda s: s[0] != "-")


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(keys=st.lists(_SPELLING, min_size=1, max_size=12), probe=_SPELLING)
def test_claims_and_lookups_match_a_brute_force_oracle(
    tmp_path_factory: pytest.TempPathFactory, keys: list[str], probe: str
) -> None:
    store = SqliteLinkStore(tmp_path_factory.mktemp("oracle") / "links.sqlite3")
    claimed: dict[str, str] = {}  # fold → the spelling that won
    try:
        for i, key in enumerate(keys):
            won = _claim(store, _link(key, NOW + i))
            assert won == (fold(key) not in claimed), key
            if won:
                claimed[fold(key)] = key
        for spelling in [*keys, probe, probe.swapcase()]:
            found = store.get(spelling)
            expected = claimed.get(fold(spelling))
            assert (None if found is None else found.key) == expected
            folded = store.get_folded(fold(spelling))
            assert (None if folded is None else folded.key) == expected
    finally:
        store.close()


def test_claims_fold_case_on_every_backend(store_url: str) -> None:
    store = _open(store_url)
    try:
        assert _claim(store, _link("IPL-Final"))
        assert not _claim(store, _link("ipl-final"))
        assert not _claim(store, _link("IPL-FINAL"))
        assert store.get("ipl-FINAL").key == "IPL-Final"  # the owner's spelling kept
        # the same alias on another domain is another link; its case variants are not
        assert _claim(store, _link("ipl-final@go.example"))
        assert not _claim(store, _link("IPL-FINAL@go.example"))
        assert store.get("Ipl-Final@go.example").key == "ipl-final@go.example"
        assert store.get("ipl-final@go.example").domain == "go.example"
        assert store.exact_only_keys() == []
    finally:
        store.close()


# -- the migration of rows from before the rule ----------------------------------------------


def _make_legacy(store_url: str, rows: list[tuple[str, float]]) -> None:
    """A database as the release before the rule left it: no ``fold``/``domain`` columns,
    keys that differ only by case."""
    store = _open(store_url)
    store.close()
    drop = [
        "DROP INDEX IF EXISTS links_by_fold",
        "ALTER TABLE links DROP COLUMN fold",
        "ALTER TABLE links DROP COLUMN domain",
    ]
    insert = "INSERT INTO links (key, long_url, owner, created_at, updated_at) VALUES "
    if store_url.startswith("sqlite"):
        with sqlite3.connect(store_url.removeprefix("sqlite:///")) as conn:
            for statement in drop:
                conn.execute(statement)
            for key, at in rows:
                conn.execute(
                    insert + "(?, ?, 'o', ?, ?)", (key, f"https://example.com/{key}", at, at)
                )
        return
    import psycopg

    with psycopg.connect(store_url, autocommit=True) as conn:
        for statement in drop:
            conn.execute(statement)
        for key, at in rows:
            conn.execute(
                insert + "(%s, %s, 'o', %s, %s)", (key, f"https://example.com/{key}", at, at)
            )


def test_old_rows_that_collide_after_folding_stay_reachable(store_url: str) -> None:
    _make_legacy(
        store_url,
        [("abc", NOW + 5), ("AbC", NOW), ("ABC", NOW + 9), ("Solo-Key", NOW), ("q1W2e3R", NOW)],
    )
    store = _open(store_url)  # the migration runs on open
    try:
        # the oldest of the group answers to every spelling; the others to their own only
        assert store.case_collisions == ["ABC", "abc"] == store.exact_only_keys()
        assert store.get("AbC").long_url.endswith("/AbC")
        assert store.get("abc").long_url.endswith("/abc")
        assert store.get("ABC").long_url.endswith("/ABC")
        assert store.get("aBc").long_url.endswith("/AbC")  # no exact row: the group's fold
        assert store.get("solo-key").key == "Solo-Key"
        assert store.get("Q1w2E3r").key == "q1W2e3R"  # an old mixed-case generated key
        # no new case variant of any old key can be claimed
        assert not _claim(store, _link("aBC"))
        assert not _claim(store, _link("SOLO-KEY"))
        # the resolver caches them apart: each exact spelling under its own entry
        resolver = Resolver(store)
        assert resolver.exact_only == {"ABC", "abc"}
        for spelling, owner in [("abc", "abc"), ("ABC", "ABC"), ("AbC", "AbC"), ("abC", "AbC")]:
            assert resolver.resolve(spelling).key == owner  # type: ignore[union-attr]
            assert resolver.resolve(spelling).key == owner  # type: ignore[union-attr]  # cached
        assert resolver.lookup_key("abc") == "!abc" and resolver.lookup_key("aBC") == "abc"
    finally:
        store.close()
    reopened = _open(store_url)  # a second open folds nothing again and reports the same
    try:
        assert reopened.exact_only_keys() == ["ABC", "abc"]
    finally:
        reopened.close()


# -- generated keys -------------------------------------------------------------------------


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(start=st.integers(0, KEY_SPACE - 600))
def test_minted_keys_are_lower_case_so_distinct_ids_stay_distinct_after_folding(
    tmp_path_factory: pytest.TempPathFactory, start: int
) -> None:
    alloc = SqliteIdAllocator(
        tmp_path_factory.mktemp("mint") / "ids.sqlite3", "links", block_size=50
    )
    minter = KeyMinter(
        alloc, FeistelPermutation(KEY_SPACE, uuid.uuid4().bytes * 2), ReservedWords()
    )
    keys = [minter.key_for(i) for i in range(start, start + 500)]
    assert all(len(k) == 7 and set(k) <= set(KEY_ALPHABET) for k in keys)
    assert len({fold(k) for k in keys}) == 500
    assert [minter.id_for(k) for k in keys] == list(range(start, start + 500))
