"""The link store: conditional claims under real thread races, tombstones, clicks, idempotency."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from lookup.shortener.model import Link, Status
from lookup.shortener.store import (
    Gone,
    IdempotencyClaim,
    IdempotencyMismatch,
    KeyTaken,
    LinkMissing,
    LinkStore,
    NotOwner,
    SqliteLinkStore,
)

NOW = 1_800_000_000.0


def _link(key: str, url: str = "https://example.com/", **kw: Any) -> Link:
    fields: dict[str, Any] = {
        "key": key,
        "long_url": url,
        "owner": "owner-a",
        "created_at": NOW,
        "updated_at": NOW,
    }
    fields.update(kw)
    return Link(**fields)


def _render(link: Link) -> dict[str, Any]:
    return {"key": link.key, "longUrl": link.long_url}


@pytest.fixture
def store(tmp_path: Path) -> LinkStore:
    s = SqliteLinkStore(tmp_path / "links.sqlite3", clock=lambda: NOW)
    yield s
    s.close()


def test_create_and_read_back_every_field(store: LinkStore) -> None:
    link = _link(
        "abc-def",
        expires_at=NOW + 60,
        max_clicks=3,
        redirect_type=301,
        max_age=600,
        password_hash="scrypt$1$1$1$00$00",
        tags=("a", "b"),
        alias=True,
    )
    result = store.create(link, render=_render)
    assert result.response == {"key": "abc-def", "longUrl": "https://example.com/"}
    assert not result.replayed
    assert store.get("abc-def") == link
    assert store.get("nope") is None


def test_the_store_runs_in_wal_mode(store: LinkStore, tmp_path: Path) -> None:
    store.get("x")
    conn = sqlite3.connect(tmp_path / "links.sqlite3")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def test_alias_race_exactly_one_claim_wins(store: LinkStore) -> None:
    n = 32
    barrier = threading.Barrier(n)
    outcomes: list[str] = []
    lock = threading.Lock()

    def claim(i: int) -> None:
        barrier.wait()
        try:
            store.create(
                _link("ipl-final", f"https://example.com/{i}", owner=f"o{i}"), render=_render
            )
            result = f"won:{i}"
        except KeyTaken:
            result = "taken"
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [o for o in outcomes if o.startswith("won")]
    assert len(winners) == 1 and outcomes.count("taken") == n - 1
    winner = int(winners[0].split(":")[1])
    assert store.get("ipl-final").long_url == f"https://example.com/{winner}"  # never overwritten


def test_tombstones_keep_the_key_forever(store: LinkStore) -> None:
    store.create(_link("gone-soon"), render=_render)
    old, new = store.tombstone("gone-soon", Status.DELETED, actor="owner-a")
    assert old.long_url == "https://example.com/"
    assert new.status is Status.DELETED and new.long_url == "" and new.is_tombstone
    with pytest.raises(KeyTaken):
        store.create(_link("gone-soon", "https://other.example/"), render=_render)
    with pytest.raises(Gone):
        store.update("gone-soon", {"long_url": "https://x.example/"}, actor="owner-a")
    assert store.get("gone-soon").status is Status.DELETED


def test_update_checks_owner_and_audits_retargets(store: LinkStore) -> None:
    store.create(_link("retarget-me"), render=_render, actor="owner-a")
    with pytest.raises(NotOwner):
        store.update(
            "retarget-me",
            {"long_url": "https://x.example/"},
            actor="b",
            expected_owner="owner-b",
            check_owner=True,
        )
    with pytest.raises(LinkMissing):
        store.update("missing", {"tags": ()}, actor="a")
    with pytest.raises(ValueError):
        store.update("retarget-me", {"owner": "me"}, actor="a")
    old, new = store.update(
        "retarget-me",
        {"long_url": "https://new.example/", "tags": ("x",)},
        actor="owner-a",
        action="retarget",
        expected_owner="owner-a",
        check_owner=True,
    )
    assert (old.long_url, new.long_url, new.tags) == (
        "https://example.com/",
        "https://new.example/",
        ("x",),
    )
    history = store.audit("retarget-me")
    assert [h["action"] for h in history] == ["create", "retarget"]
    assert (
        history[1]["oldUrl"] == "https://example.com/"
        and history[1]["newUrl"] == "https://new.example/"
    )
    assert history[1]["actor"] == "owner-a" and history[1]["detail"] == {"tags": '["x"]'}


def test_click_budget_admits_exactly_max_clicks_under_a_race(store: LinkStore) -> None:
    store.create(_link("five-clicks", max_clicks=5), render=_render)
    n = 24
    barrier = threading.Barrier(n)
    admitted: list[int] = []

    def click() -> None:
        barrier.wait()
        link = store.consume_click("five-clicks", NOW)
        if link is not None:
            admitted.append(link.clicks)

    threads = [threading.Thread(target=click) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(admitted) == [1, 2, 3, 4, 5]
    assert store.get("five-clicks").clicks == 5


def test_click_budget_respects_expiry_and_status(store: LinkStore) -> None:
    store.create(_link("dated", max_clicks=5, expires_at=NOW + 10), render=_render)
    assert store.consume_click("dated", NOW + 9.999) is not None
    assert store.consume_click("dated", NOW + 10) is None
    store.create(_link("unlimited"), render=_render)
    assert store.consume_click("unlimited", NOW) is None  # only capped links are counted


def test_idempotency_replays_and_refuses_a_different_body(store: LinkStore) -> None:
    claim = IdempotencyClaim("owner-a", "req-1", "digest-1")
    first = store.create(_link("k-one"), idempotency=claim, render=_render)
    assert not first.replayed
    assert store.find_replay(claim) == first.response
    again = store.create(_link("k-two"), idempotency=claim, render=_render)
    assert again.replayed and again.response == first.response
    assert store.get("k-two") is None  # nothing new was written
    with pytest.raises(IdempotencyMismatch):
        store.create(
            _link("k-three"),
            idempotency=IdempotencyClaim("owner-a", "req-1", "other"),
            render=_render,
        )
    # another owner's key space is separate
    other = store.create(
        _link("k-four"), idempotency=IdempotencyClaim("owner-b", "req-1", "x"), render=_render
    )
    assert not other.replayed


def test_idempotency_records_expire(tmp_path: Path) -> None:
    now = [NOW]
    store = SqliteLinkStore(tmp_path / "l.sqlite3", idempotency_ttl_s=60, clock=lambda: now[0])
    claim = IdempotencyClaim("s", "k", "d")
    store.create(_link("first-one"), idempotency=claim, render=_render)
    now[0] += 61
    assert store.find_replay(claim) is None
    assert store.purge_idempotency(now[0]) == 1
    assert not store.create(_link("second-one"), idempotency=claim, render=_render).replayed
    store.close()


def test_expire_due_tombstones_by_date_and_by_clicks(store: LinkStore) -> None:
    store.create(_link("by-date", expires_at=NOW + 5), render=_render)
    store.create(_link("by-clicks", max_clicks=1), render=_render)
    store.create(_link("evergreen"), render=_render)
    store.consume_click("by-clicks", NOW)
    assert store.expire_due(NOW + 4) == ["by-clicks"]
    assert sorted(store.expire_due(NOW + 5)) == ["by-date"]
    assert store.get("by-date").status is Status.EXPIRED and store.get("by-date").long_url == ""
    assert store.get("evergreen").status is Status.ACTIVE
    assert store.counts() == {"ACTIVE": 1, "DISABLED": 0, "DELETED": 0, "EXPIRED": 2}
    assert store.audit("by-date")[-1]["action"] == "expire"


def test_owner_listing_pages_through_everything_once(store: LinkStore) -> None:
    for i in range(23):
        store.create(
            _link(f"link-{i:02d}", created_at=NOW + i // 3, tags=("even",) if i % 2 == 0 else ()),
            render=_render,
        )
    store.create(_link("someone-else", owner="owner-b"), render=_render)
    seen: list[str] = []
    before = None
    while True:
        page = store.list_owner("owner-a", limit=5, before=before)
        seen += [link.key for link in page]
        if len(page) < 5:
            break
        before = (page[-1].created_at, page[-1].key)
    oracle = sorted(
        (f"link-{i:02d}" for i in range(23)),
        key=lambda k: (NOW + int(k[-2:]) // 3, k),
        reverse=True,
    )
    assert seen == oracle
    evens = store.list_owner("owner-a", limit=100, tag="even")
    assert sorted(link.key for link in evens) == [f"link-{i:02d}" for i in range(0, 23, 2)]
    assert store.list_owner("owner-a", limit=100, status=Status.DELETED) == []


def test_iter_links_walks_in_key_order(store: LinkStore) -> None:
    for key in ("ccc", "aaa", "bbb"):
        store.create(_link(key), render=_render)
    store.tombstone("bbb", Status.DELETED, actor=None)
    page = store.iter_links(after="", limit=10)
    assert [link.key for link in page] == ["aaa", "ccc"]
    assert [link.key for link in store.iter_links(after="aaa", limit=1)] == ["ccc"]


def test_closed_store_reopens_on_next_use(store: LinkStore) -> None:
    store.create(_link("persisted"), render=_render)
    store.close()
    assert store.get("persisted") is not None
