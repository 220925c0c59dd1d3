"""The LinkStore contract, written once and run against every implementation.

What the shortener's service, resolver and scanner rely on: exactly one winner among
concurrent claims of a key, idempotent creates (replay of the same body, refusal of
another), tombstones that keep a key forever, an exact click budget under a race, an
audit trail of every change, and the reads (owner listing, key-order sweep, counts).
The backends come from the seam's registry (:data:`lookup.shortener.links.BACKENDS`):
a new backend registers its scheme there, says below how to get a fresh, empty store of
it (``FRESH``), and must pass unchanged.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lookup.kit.cache import InvalidationOutbox
from lookup.kit.storeurl import sqlite_url
from lookup.shortener.links import (
    BACKENDS,
    Gone,
    IdempotencyClaim,
    IdempotencyMismatch,
    KeyTaken,
    LinkMissing,
    LinkStore,
    NotOwner,
    backend,
    open_link_store,
)
from lookup.shortener.model import Link, Status
from tests.contracts.seams import (
    Fresh,
    check_port_imports_no_backend,
    check_registered,
    fresh_url,
)

NOW = 1_800_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


def _sqlite(tmp_path: Path) -> str:
    return sqlite_url(tmp_path / "links.sqlite3")


#: scheme -> how to get the URL of a fresh, empty store: a function of a temp dir, or the
#: name of the fixture that gives a new database on a real server.
FRESH: dict[str, Fresh] = {"sqlite": _sqlite, "postgresql": "postgres_db"}


@pytest.fixture(params=list(BACKENDS))
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return fresh_url(request, tmp_path, FRESH)


def test_every_registered_backend_is_a_link_store() -> None:
    check_registered(BACKENDS, backend, LinkStore)


def test_the_port_imports_no_backend() -> None:
    """``lookup.shortener.links`` names its backends; it imports one only when a URL asks."""
    check_port_imports_no_backend("lookup.shortener.links")


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def open_store(url: str, clock: Clock) -> Iterator[Callable[..., LinkStore]]:
    """Open a store on the same backend as often as a test needs (like several processes)."""
    opened: list[LinkStore] = []

    def factory(**options: Any) -> LinkStore:
        options.setdefault("clock", clock)
        store = open_link_store(url, **options)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()


@pytest.fixture
def store(open_store: Callable[..., LinkStore]) -> LinkStore:
    return open_store()


def _link(key: str, *, owner: str | None = "alice", **fields: Any) -> Link:
    fields.setdefault("long_url", f"https://example.com/{key}")
    return Link(key=key, owner=owner, created_at=NOW, updated_at=NOW, **fields)


def _render(link: Link) -> dict[str, Any]:
    return {"key": link.key, "longUrl": link.long_url}


def test_the_factory_gives_a_link_store(store: LinkStore) -> None:
    assert isinstance(store, LinkStore)
    store.ping()


def test_unknown_schemes_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="sqlite"):
        open_link_store("mongodb://somewhere/links")


def test_a_created_link_reads_back_with_every_field(store: LinkStore) -> None:
    link = _link(
        "every-field", expires_at=NOW + 60, max_clicks=3, redirect_type=301, max_age=120,
        password_hash="scrypt$x", tags=("a", "b"), id=42, alias=True,
    )  # fmt: skip
    result = store.create(link, render=_render, actor="alice")
    assert not result.replayed and result.response == _render(link) and result.link == link
    assert store.get("every-field") == link
    assert store.get("never-made") is None


def test_exactly_one_of_many_concurrent_claims_of_a_key_wins(
    open_store: Callable[..., LinkStore],
) -> None:
    stores = [open_store() for _ in range(2)]
    wins: list[str] = []
    losses: list[str] = []
    start = threading.Barrier(16)

    def claim(i: int) -> None:
        start.wait()
        try:
            stores[i % 2].create(_link("contested", owner=f"o{i}"), render=_render)
            wins.append(f"o{i}")
        except KeyTaken:
            losses.append(f"o{i}")

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(wins) == 1 and len(losses) == 15
    assert stores[0].get("contested").owner == wins[0]  # type: ignore[union-attr]


def test_idempotency_replays_the_same_body_and_refuses_another(
    store: LinkStore, clock: Clock
) -> None:
    claim = IdempotencyClaim("alice", "retry-1", "digest-a")
    first = store.create(_link("idem-1"), idempotency=claim, render=_render)
    assert store.find_replay(claim) == first.response
    again = store.create(_link("idem-2"), idempotency=claim, render=_render)
    assert again.replayed and again.response == first.response and again.link is None
    assert store.get("idem-2") is None  # a replay creates nothing
    other = IdempotencyClaim("alice", "retry-1", "digest-b")
    with pytest.raises(IdempotencyMismatch):
        store.find_replay(other)
    with pytest.raises(IdempotencyMismatch):
        store.create(_link("idem-3"), idempotency=other, render=_render)
    bob = IdempotencyClaim("bob", "retry-1", "digest-b")  # scoped per owner
    assert store.find_replay(bob) is None
    assert not store.create(_link("idem-4", owner="bob"), idempotency=bob, render=_render).replayed


def test_idempotency_records_expire_and_are_purged(open_store: Callable[..., LinkStore]) -> None:
    clock = Clock()
    store = open_store(clock=clock, idempotency_ttl_s=60)
    claim = IdempotencyClaim("alice", "k", "d")
    store.create(_link("ttl-1"), idempotency=claim, render=_render)
    clock.now += 61
    assert store.find_replay(claim) is None
    assert store.purge_idempotency(clock.now) == 1
    assert not store.create(_link("ttl-2"), idempotency=claim, render=_render).replayed


def test_a_tombstone_keeps_its_key_forever(store: LinkStore) -> None:
    store.create(_link("gone-soon"), render=_render)
    old, new = store.tombstone("gone-soon", Status.DELETED, actor="alice", reason="owner")
    assert old.long_url and new.status is Status.DELETED and new.long_url == ""
    assert new.is_tombstone and new.password_hash is None
    with pytest.raises(KeyTaken):
        store.create(_link("gone-soon", owner="mallory"), render=_render)
    with pytest.raises(Gone):
        store.update("gone-soon", {"long_url": "https://evil.example/"}, actor="alice")
    with pytest.raises(Gone):
        store.tombstone("gone-soon", Status.DELETED, actor="alice")
    assert store.get("gone-soon").status is Status.DELETED  # type: ignore[union-attr]


def test_updates_check_the_owner_and_name_missing_links(store: LinkStore) -> None:
    store.create(_link("owned"), render=_render)
    with pytest.raises(NotOwner):
        store.update("owned", {"tags": ("x",)}, actor="bob", expected_owner="bob", check_owner=True)
    with pytest.raises(LinkMissing):
        store.update("nobody", {"tags": ("x",)}, actor="alice")
    old, new = store.update(
        "owned", {"tags": ("x",)}, actor="alice", expected_owner="alice", check_owner=True
    )
    assert old.tags == () and new.tags == ("x",)
    with pytest.raises(ValueError):
        store.update("owned", {"owner": "bob"}, actor="alice")  # not an updatable column


def test_every_change_is_in_the_audit_trail(store: LinkStore, clock: Clock) -> None:
    store.create(_link("audited", long_url="https://old.example/"), render=_render, actor="alice")
    clock.now += 5
    store.update("audited", {"long_url": "https://new.example/"}, actor="alice", action="retarget")
    store.update("audited", {"password_hash": "scrypt$y"}, actor="alice")
    store.tombstone("audited", Status.DELETED, actor="alice")
    trail = store.audit("audited")
    assert [e["action"] for e in trail] == ["create", "retarget", "update", "delete"]
    assert all(e["actor"] == "alice" for e in trail)
    assert (trail[1]["oldUrl"], trail[1]["newUrl"], trail[1]["at"]) == (
        "https://old.example/",
        "https://new.example/",
        NOW + 5,
    )
    assert trail[2]["detail"] == {"password": "set"}  # the hash itself is never in the trail
    assert store.audit("never-made") == []


def test_the_click_budget_admits_exactly_max_clicks_under_a_race(
    open_store: Callable[..., LinkStore],
) -> None:
    stores = [open_store() for _ in range(2)]
    stores[0].create(_link("budget", max_clicks=7), render=_render)
    admitted: list[int] = []
    start = threading.Barrier(24)

    def click(i: int) -> None:
        start.wait()
        if stores[i % 2].consume_click("budget", NOW) is not None:
            admitted.append(i)

    threads = [threading.Thread(target=click, args=(i,)) for i in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(admitted) == 7
    link = stores[1].get("budget")
    assert link is not None and link.clicks == 7 and link.clicks_remaining == 0


def test_the_click_budget_refuses_expired_disabled_and_unbudgeted_links(
    store: LinkStore,
) -> None:
    store.create(_link("dated", max_clicks=5, expires_at=NOW + 10), render=_render)
    assert store.consume_click("dated", NOW + 5) is not None
    assert store.consume_click("dated", NOW + 10) is None
    store.create(_link("off", max_clicks=5), render=_render)
    store.update("off", {"status": Status.DISABLED}, actor="scanner")
    assert store.consume_click("off", NOW) is None
    store.create(_link("free"), render=_render)
    assert store.consume_click("free", NOW) is None  # no budget: nothing to consume
    assert store.consume_click("missing", NOW) is None


def test_expire_due_tombstones_by_date_and_by_clicks(store: LinkStore) -> None:
    store.create(_link("by-date", expires_at=NOW + 10), render=_render)
    store.create(_link("by-clicks", max_clicks=1), render=_render)
    store.create(_link("evergreen"), render=_render)
    store.consume_click("by-clicks", NOW)
    assert sorted(store.expire_due(NOW + 11)) == ["by-clicks", "by-date"]
    for key in ("by-date", "by-clicks"):
        link = store.get(key)
        assert link is not None and link.status is Status.EXPIRED and link.long_url == ""
    assert store.get("evergreen").status is Status.ACTIVE  # type: ignore[union-attr]
    assert store.expire_due(NOW + 11) == []
    assert store.audit("by-date")[-1]["action"] == "expire"


def test_owner_listing_pages_newest_first_with_filters(store: LinkStore) -> None:
    for i in range(7):
        link = _link(f"own-{i}", tags=("odd",) if i % 2 else ())
        store.create(dataclasses.replace(link, created_at=NOW + i), render=_render)
    store.create(_link("not-mine", owner="bob"), render=_render)
    seen: list[str] = []
    before = None
    while True:
        page = store.list_owner("alice", limit=3, before=before)
        seen += [link.key for link in page]
        if len(page) < 3:
            break
        before = (page[-1].created_at, page[-1].key)
    assert seen == [f"own-{i}" for i in reversed(range(7))]
    assert {link.key for link in store.list_owner("alice", tag="odd")} == {
        "own-1",
        "own-3",
        "own-5",
    }
    store.tombstone("own-0", Status.DELETED, actor="alice")
    assert [link.key for link in store.list_owner("alice", status=Status.DELETED)] == ["own-0"]


def test_iter_links_walks_key_order_by_status(store: LinkStore) -> None:
    for key in ("k-c", "k-a", "k-b", "k-d"):
        store.create(_link(key), render=_render)
    store.update("k-d", {"status": Status.DISABLED}, actor="scanner")
    assert [link.key for link in store.iter_links(limit=2)] == ["k-a", "k-b"]
    assert [link.key for link in store.iter_links(after="k-b")] == ["k-c"]
    both = store.iter_links(statuses=(Status.ACTIVE, Status.DISABLED))
    assert [link.key for link in both] == ["k-a", "k-b", "k-c", "k-d"]


def test_counts_by_status_and_a_closed_store_reopens(store: LinkStore) -> None:
    store.create(_link("c-1"), render=_render)
    store.create(_link("c-2"), render=_render)
    store.tombstone("c-2", Status.DELETED, actor="alice")
    assert store.counts() == {"ACTIVE": 1, "DISABLED": 0, "DELETED": 1, "EXPIRED": 0}
    store.close()
    assert store.get("c-1") is not None  # the next call reopens
    store.ping()


def test_owner_tokens_revoke_once_and_rotate_once_under_a_race(store: LinkStore) -> None:
    assert store.token_owner("t1") is None  # never recorded: its own owner
    assert store.revoke_token("t1", "t1", NOW) is True
    assert store.token_owner("t1") == ("t1", True)
    assert store.revoke_token("t1", "t1", NOW + 1) is False
    assert store.rotate_token("t1", "t2", "t1", NOW) is False  # a revoked token cannot rotate
    assert store.token_owner("t2") is None
    # Eight threads rotate one token at once: exactly one successor is recorded.
    wins: list[str] = []
    barrier = threading.Barrier(8)

    def rotate(i: int) -> None:
        barrier.wait()
        if store.rotate_token("a0", f"a0-next-{i}", "owner-a", NOW):
            wins.append(f"a0-next-{i}")

    threads = [threading.Thread(target=rotate, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(wins) == 1
    assert store.token_owner("a0") == ("owner-a", True)
    assert store.token_owner(wins[0]) == ("owner-a", False)
    assert store.rotate_token(wins[0], "a0-next-next", "owner-a", NOW) is True
    assert store.token_owner(wins[0]) == ("owner-a", True)
    assert store.token_owner("a0-next-next") == ("owner-a", False)


def test_the_cache_outbox_keeps_deferred_invalidations_across_a_reopen(
    open_store: Callable[..., LinkStore],
) -> None:
    writer = open_store()
    writer.defer_invalidations(["k1", "k2"])
    writer.defer_invalidations(["k1"])  # deferred again: kept twice, sent twice, harmless
    writer.close()  # the process that deferred them is gone
    other = open_store()  # another process, on the same store
    assert isinstance(other, InvalidationOutbox)  # what the Redis cache tier looks for
    kept = other.deferred_invalidations(10)
    assert [key for _id, key in kept] == ["k1", "k2", "k1"]  # oldest first
    assert len({i for i, _key in kept}) == 3
    assert other.deferred_invalidations(2) == kept[:2]
    other.forget_invalidations([kept[0][0], kept[2][0]])
    other.forget_invalidations([])
    assert other.deferred_invalidations(10) == [kept[1]]
    other.forget_invalidations([kept[1][0]])
    assert other.deferred_invalidations(10) == []
