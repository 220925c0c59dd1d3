"""Place reviews in the store (issue 27 item 16): one per user per place, the aggregate in the
review's own transaction, spam-resistant weights — checked against a brute-force model.

The oracle replays every write in plain Python (who reviewed what, when each account wrote
its first review) and computes IMDb's weighted rating from scratch; the store keeps
integer totals updated incrementally. After any sequence of writes and replacements the
two agree, and so does the place row the change stream carries.
"""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.geo import geohash
from lookup.geo.reviews import (
    ReviewError,
    ReviewPolicy,
    Totals,
    check_body,
    clean_text,
    recompute,
)
from lookup.geo.store import PlaceDatabaseWriter, PlaceError, SqlitePlaceStore

POLICY = ReviewPolicy(new_account_s=100.0, new_weight=0.25, prior_votes=5.0, prior=3.5)
DAY = 86_400.0


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def _database(path: Path, base: tuple[int, int] = (0, 0)) -> None:
    with PlaceDatabaseWriter(path) as db:
        db.insert_dicts([{
            "id": f"biz:{i:07d}", "num": i, "name": f"Cafe {i}", "lat": 12.93 + i / 1000,
            "lng": 77.62, "category": "cafe", "kind": "business",
            "geohash": geohash.encode(12.93 + i / 1000, 77.62), "timezone": "Asia/Kolkata",
            "tags": "[]", "review_count": base[0], "review_stars": base[1], "generated": 1,
            "updated_at": 0.0,
        } for i in range(2)])  # fmt: skip
        db.finish({"next_num": "2"})


def _open(tmp: Path, base: tuple[int, int] = (0, 0)) -> tuple[SqlitePlaceStore, Clock]:
    path = tmp / "places.sqlite"
    _database(path, base)
    clock = Clock()
    return SqlitePlaceStore(path, clock=clock), clock


def _all_reviews(store: SqlitePlaceStore, place_id: str, page: int = 3) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    after = None
    while True:
        found = store.review_page(place_id, page, after)
        out.extend(found.reviews)
        if found.next_cursor is None:
            return out
        after = found.next_cursor


def oracle_rating(
    base: tuple[int, int], reviews: dict[str, tuple[int, bool]], policy: ReviewPolicy
) -> float | None:
    """IMDb's WR = (v·R + m·C)/(v + m), written out from the list of current reviews."""
    established = [s for s, new in reviews.values() if not new]
    fresh = [s for s, new in reviews.values() if new]
    n_est = base[0] + len(established)
    s_est = base[1] + sum(established)
    if n_est + len(fresh) == 0:
        return None
    prior = s_est / n_est if n_est else policy.prior
    weighted = s_est + sum(policy.new_weight * s for s in fresh)
    weight = n_est + policy.new_weight * len(fresh)
    return (weighted + policy.prior_votes * prior) / (weight + policy.prior_votes)


WRITES = st.lists(
    st.tuples(
        st.integers(0, 5),  # user
        st.integers(1, 5),  # stars
        st.sampled_from([0.0, 1.0, 30.0, 200.0]),  # seconds before this write
        st.integers(0, 1),  # which place
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=40, deadline=None)
@given(
    writes=WRITES,
    base=st.one_of(
        st.just((0, 0)),
        st.integers(1, 50).flatmap(lambda n: st.tuples(st.just(n), st.integers(n, 5 * n))),
    ),
)
def test_any_writes_leave_the_aggregate_equal_to_a_recomputation(
    writes: list[tuple[int, int, float, int]], base: tuple[int, int]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store, clock = _open(Path(tmp), base)
        try:
            first_at: dict[str, float] = {}
            current: dict[str, dict[str, tuple[int, bool]]] = {"biz:0000000": {}, "biz:0000001": {}}
            for user_n, stars, wait, place_n in writes:
                clock.now += wait
                user, pid = f"user-{user_n}", f"biz:{place_n:07d}"
                first_at.setdefault(user, clock.now)
                new = clock.now - first_at[user] < POLICY.new_account_s
                replaced_before = user in current[pid]
                current[pid][user] = (stars, new)
                review, replaced, row = store.put_review(pid, user, stars, "", POLICY)
                assert replaced == replaced_before
                assert review["newAccount"] == new
                want = oracle_rating(base, current[pid], POLICY)
                totals = store.review_totals(pid)
                assert totals is not None
                got = totals.rating(POLICY)
                assert got is not None and want is not None
                assert got == pytest.approx(want, abs=1e-12)
                # the place row the change stream carried: the count, and the stars it stands for
                n = base[0] + len(current[pid])
                assert row["review_count"] == n
                assert row["review_stars"] == min(5 * n, max(n, round(want * n)))
                assert store.get(pid) == row
            for pid, reviews in current.items():
                listed = _all_reviews(store, pid)
                assert sorted(r["userId"] for r in listed) == sorted(reviews)  # one per user
                stamps = [(r["updatedAt"], r["userId"]) for r in listed]
                assert stamps == sorted(stamps, reverse=True)  # newest first
                if reviews:
                    assert recompute(base, listed) == store.review_totals(pid)
        finally:
            store.close()


def test_each_review_is_one_change_carrying_the_new_totals(tmp_path: Path) -> None:
    store, clock = _open(tmp_path, (10, 40))
    try:
        seq = store.last_seq()
        store.put_review("biz:0000000", "asha", 5, "Lovely filter coffee", POLICY)
        clock.now += 1000
        _, replaced, row = store.put_review("biz:0000000", "asha", 1, "Went downhill", POLICY)
        assert replaced
        changes = store.changes_since(seq)
        assert [c.op for c in changes] == ["upsert", "upsert"]
        assert changes[-1].after == row
        assert changes[0].after is not None and changes[0].after["review_count"] == 11
        assert row["review_count"] == 11  # replaced, not added
        listed = _all_reviews(store, "biz:0000000")
        assert [(r["userId"], r["rating"], r["text"]) for r in listed] == [
            ("asha", 1, "Went downhill")
        ]
        assert listed[0]["createdAt"] < listed[0]["updatedAt"]
    finally:
        store.close()


def test_a_missing_place_writes_nothing(tmp_path: Path) -> None:
    store, _ = _open(tmp_path)
    try:
        seq = store.last_seq()
        with pytest.raises(PlaceError) as caught:
            store.put_review("biz:nope", "asha", 4, "", POLICY)
        assert caught.value.code == "NOT_FOUND"
        assert store.last_seq() == seq
        assert store.review_page("biz:nope", 10).reviews == []
    finally:
        store.close()


def test_a_brigade_of_new_accounts_is_damped(tmp_path: Path) -> None:
    store, clock = _open(tmp_path, (100, 450))  # 100 imported reviews at 4.5
    try:
        for i in range(200):
            _, _, row = store.put_review("biz:0000000", f"sock-{i}", 1, "awful", POLICY)
        plain_mean = (450 + 200) / 300
        shown = row["review_stars"] / row["review_count"]
        assert row["review_count"] == 300  # every review is counted and listed
        assert shown > plain_mean + 1.0  # but a fresh account weighs a quarter of a vote
        # the same accounts once established count in full
        clock.now += POLICY.new_account_s + 1
        for i in range(200):
            _, _, row = store.put_review("biz:0000000", f"sock-{i}", 1, "still awful", POLICY)
        assert row["review_stars"] / row["review_count"] == pytest.approx(plain_mean, abs=0.01)
    finally:
        store.close()


def test_established_reviews_alone_show_their_plain_mean() -> None:
    totals = Totals(base_count=3, base_stars=12).add(5, False).add(2, False)
    assert totals.rating(POLICY) == pytest.approx((12 + 5 + 2) / 5)
    only_new = Totals().add(5, True)  # a fresh place, one fresh account: pulled to the prior
    assert only_new.rating(POLICY) == pytest.approx((0.25 * 5 + 5 * 3.5) / (0.25 + 5))
    assert Totals().rating(POLICY) is None


def test_deleting_a_place_drops_its_reviews(tmp_path: Path) -> None:
    store, _ = _open(tmp_path)
    try:
        store.put_review("biz:0000001", "asha", 4, "", POLICY)
        store.delete("biz:0000001")
        assert store.review_page("biz:0000001", 10).reviews == []
        assert store.review_totals("biz:0000001") is None
    finally:
        store.close()


def test_an_older_database_gets_the_reviews_tables_on_open(tmp_path: Path) -> None:
    path = tmp_path / "places.sqlite"
    _database(path, (4, 18))
    conn = sqlite3.connect(path)  # as a database built before reviews existed
    for table in ("reviews", "review_users", "review_totals"):
        conn.execute(f"DROP TABLE {table}")
    conn.commit()
    conn.close()
    store = SqlitePlaceStore(path)
    try:
        _, _, row = store.put_review("biz:0000000", "asha", 5, "", POLICY)
        assert row["review_count"] == 5
    finally:
        store.close()


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("\ud800 broken", "INVALID_TEXT"),  # a lone surrogate: not UTF-8 at all
        ("nice\u202eecin", "INVALID_TEXT"),  # a right-to-left override
        ("bell\x07", "INVALID_TEXT"),
        ("x" * 4001, "TEXT_TOO_LONG"),
        (12, "INVALID_TEXT"),
    ],
)
def test_odd_text_is_refused(text: Any, code: str) -> None:
    with pytest.raises(ReviewError) as caught:
        clean_text(text, 4000)
    assert caught.value.code == code


def test_text_is_normalised_and_keeps_every_script() -> None:
    assert clean_text("  Cafe\u0301 ok\r\nsecond line  ", 100) == "Café ok\nsecond line"
    kept = "मसाला डोसा 👩\u200d🍳 مطعم 東京"  # Devanagari, an emoji ZWJ sequence, RTL, CJK
    assert clean_text(kept, 100) == kept
    assert clean_text(None, 10) == ""
    assert len(clean_text("é" * 10, 10)) == 10  # counted after NFC (e + accent is one)


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"userId": "a", "rating": 0}, "INVALID_RATING"),
        ({"userId": "a", "rating": 6}, "INVALID_RATING"),
        ({"userId": "a", "rating": 4.0}, "INVALID_RATING"),
        ({"userId": "a", "rating": True}, "INVALID_RATING"),
        ({"userId": "", "rating": 3}, "INVALID_USER"),
        ({"userId": "two words", "rating": 3}, "INVALID_USER"),
        ({"userId": "a" * 65, "rating": 3}, "INVALID_USER"),
        ({"rating": 3}, "INVALID_REQUEST"),
        ({"userId": "a", "rating": 3, "stars": 3}, "INVALID_REQUEST"),
        ([], "INVALID_REQUEST"),
    ],
)
def test_bad_bodies_are_refused(body: Any, code: str) -> None:
    with pytest.raises(ReviewError) as caught:
        check_body(body, POLICY)
    assert caught.value.code == code


def test_the_index_rating_a_minimum_rating_filter_reads_follows_the_reviews(
    tmp_path: Path,
) -> None:
    """The index's ``rating`` column (what ``minRating`` compares, ×5) is rebuilt from the
    place row each change carries: after the reviews it is the updated rating."""
    from lookup.geo.index import GeohashIndex
    from lookup.geo.ranking import bayesian_rating

    store, clock = _open(tmp_path, (20, 90))  # 4.5 from imported reviews
    try:
        seq, rows = store.snapshot()
        index = GeohashIndex.from_rows(rows, seq=seq)
        clock.now += 1
        for i in range(30):
            _, _, row = store.put_review("biz:0000000", f"critic-{i}", 1, "", POLICY)
        for change in store.changes_since(index.seq):
            index.apply(change)
        delta = index.delta
        rating = float(delta.rating[delta.num == 0][0]) * 5
        want = bayesian_rating(row["review_stars"], row["review_count"], index.prior_mean) * 5
        assert rating == pytest.approx(want)
        old = bayesian_rating(90, 20, index.prior_mean) * 5
        assert rating < old - 0.2  # lower than before: a minRating between them now drops it
    finally:
        store.close()
