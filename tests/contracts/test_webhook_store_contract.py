"""The WebhookStore contract, written once and run against every backend of the seam.

What the webhook sender and the registration API rely on: endpoints kept with their
secret and events; an outbox that takes an event once per endpoint however often it is
offered (the shipper's retries, a replayed notify); a batch turned into a delivery exactly
once among racing senders; a due delivery claimed by exactly one sender, its attempts
counted at the claim (so a sender killed mid-POST still counts the attempt and the
delivery comes due again when the lease runs out); and removal of an endpoint taking its
outbox and log along. Backends come from :data:`lookup.shortener.webhooks.BACKENDS`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lookup.kit.engines.storeurl import sqlite_url
from lookup.shortener.webhooks import (
    BACKENDS,
    Delivery,
    Endpoint,
    OutboxEvent,
    WebhookStore,
    backend,
    open_webhook_store,
)
from tests.contracts.seams import (
    Fresh,
    check_port_imports_no_backend,
    check_registered,
    fresh_url,
)

NOW = 1_800_000_000.0
FRESH: dict[str, Fresh] = {
    "sqlite": lambda tmp: sqlite_url(tmp / "links.sqlite3"),
    "postgresql": "postgres_db",
}


@pytest.fixture(params=list(BACKENDS))
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return fresh_url(request, tmp_path, FRESH)


@pytest.fixture
def open_store(url: str) -> Iterator[Callable[[], WebhookStore]]:
    opened: list[WebhookStore] = []

    def factory() -> WebhookStore:
        store = open_webhook_store(url)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()


@pytest.fixture
def store(open_store: Callable[[], WebhookStore]) -> WebhookStore:
    return open_store()


def _endpoint(ident: str = "wh_1", events: tuple[str, ...] = ("link.created",)) -> Endpoint:
    return Endpoint(
        id=ident,
        url=f"https://hooks.example/{ident}",
        secret="s3cret",
        events=events,
        description="",
        created_at=NOW,
    )


def _event(endpoint: str, ident: str, kind: str = "link.created", at: float = NOW) -> OutboxEvent:
    return OutboxEvent(endpoint, ident, kind, {"id": ident, "n": 1}, at)


def _delivery(ident: str, endpoint: str = "wh_1", kind: str = "link.created") -> Delivery:
    return Delivery.new(ident, endpoint, kind, {"id": ident}, 1, NOW)


def test_every_registered_backend_is_a_webhook_store() -> None:
    check_registered(BACKENDS, backend, WebhookStore)


def test_the_port_imports_no_backend() -> None:
    check_port_imports_no_backend("lookup.shortener.webhooks")


def test_endpoints_are_kept_listed_and_removed(store: WebhookStore) -> None:
    assert store.endpoints() == []
    first, second = _endpoint("wh_a"), _endpoint("wh_b", ("link.clicked", "link.deleted"))
    store.add_endpoint(first)
    store.add_endpoint(second)
    assert store.endpoints() == [first, second]
    assert store.endpoint("wh_b") == second
    assert store.endpoint("nope") is None
    assert store.remove_endpoint("wh_a") is True
    assert store.remove_endpoint("wh_a") is False
    assert store.endpoints() == [second]


def test_an_event_enters_the_outbox_once_per_endpoint(store: WebhookStore) -> None:
    store.add_endpoint(_endpoint("wh_1"))
    events = [_event("wh_1", f"evt_{i}", at=NOW + i) for i in range(5)]
    assert store.enqueue(events) == 5
    assert store.enqueue(events[:3]) == 0  # a retry of the same batch adds nothing
    pending = store.pending_events("wh_1", 100)
    assert [e.event_id for e in pending] == [f"evt_{i}" for i in range(5)]
    assert pending[0].payload == {"id": "evt_0", "n": 1}
    assert store.pending_events("wh_1", 2) == pending[:2]


def test_a_batch_becomes_one_delivery_and_leaves_the_outbox(store: WebhookStore) -> None:
    store.add_endpoint(_endpoint("wh_1"))
    store.enqueue([_event("wh_1", f"c{i}", "link.clicked") for i in range(3)])
    assert store.make_delivery(_delivery("d1", kind="link.clicked"), ["c0", "c1"])
    assert [e.event_id for e in store.pending_events("wh_1", 10)] == ["c2"]
    # a second sender that read the same batch loses, and changes nothing
    assert not store.make_delivery(_delivery("d2", kind="link.clicked"), ["c1", "c2"])
    assert [e.event_id for e in store.pending_events("wh_1", 10)] == ["c2"]
    assert [d.id for d in store.deliveries("wh_1", 10)] == ["d1"]


def test_racing_senders_make_each_delivery_once(open_store: Callable[[], WebhookStore]) -> None:
    stores = [open_store() for _ in range(4)]
    stores[0].add_endpoint(_endpoint("wh_1"))
    stores[0].enqueue([_event("wh_1", f"e{i}") for i in range(20)])
    made: list[str] = []
    lock = threading.Lock()
    barrier = threading.Barrier(len(stores))

    def sender(store: WebhookStore) -> None:
        barrier.wait()
        for i in range(20):
            if store.make_delivery(_delivery(f"e{i}"), [f"e{i}"]):
                with lock:
                    made.append(f"e{i}")

    threads = [threading.Thread(target=sender, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(made) == sorted(f"e{i}" for i in range(20))
    assert stores[0].pending_events("wh_1", 100) == []


def test_a_due_delivery_is_claimed_by_exactly_one_sender(
    open_store: Callable[[], WebhookStore],
) -> None:
    stores = [open_store() for _ in range(4)]
    stores[0].add_endpoint(_endpoint("wh_1"))
    stores[0].enqueue([_event("wh_1", f"e{i}") for i in range(10)])
    for i in range(10):
        assert stores[0].make_delivery(_delivery(f"e{i}"), [f"e{i}"])
    claimed: list[str] = []
    lock = threading.Lock()
    barrier = threading.Barrier(len(stores))

    def sender(store: WebhookStore) -> None:
        barrier.wait()
        got = store.claim_due(NOW, lease_s=30.0, limit=10)
        with lock:
            claimed.extend(d.id for d in got)

    threads = [threading.Thread(target=sender, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(claimed) == sorted(f"e{i}" for i in range(10))
    # leased: not due again until the lease runs out, then due with the attempt counted
    assert stores[0].claim_due(NOW + 29, lease_s=30.0, limit=10) == []
    again = stores[0].claim_due(NOW + 31, lease_s=30.0, limit=10)
    assert len(again) == 10 and {d.attempts for d in again} == {2}


def test_attempts_are_recorded_in_the_log(store: WebhookStore) -> None:
    store.add_endpoint(_endpoint("wh_1"))
    store.enqueue([_event("wh_1", "e1"), _event("wh_1", "e2")])
    assert store.make_delivery(_delivery("e1"), ["e1"])
    assert store.make_delivery(_delivery("e2"), ["e2"])
    (first, second) = sorted(store.claim_due(NOW, lease_s=10, limit=5), key=lambda d: d.id)
    store.record_attempt(
        first.id, now=NOW + 1, state="pending", code=500, error="HTTP 500", next_at=NOW + 5
    )
    store.record_attempt(second.id, now=NOW + 1, state="delivered", code=204, error=None)
    log = {d.id: d for d in store.deliveries("wh_1", 10)}
    assert log["e1"].state == "pending" and log["e1"].response_code == 500
    assert log["e1"].last_error == "HTTP 500" and log["e1"].next_attempt_at == NOW + 5
    assert log["e2"].state == "delivered" and log["e2"].delivered_at == NOW + 1
    assert log["e2"].last_error is None and log["e2"].attempts == 1
    assert [d.id for d in store.deliveries("wh_1", 10, state="delivered")] == ["e2"]
    assert store.claim_due(NOW + 4, lease_s=10, limit=5) == []
    retry = store.claim_due(NOW + 5, lease_s=10, limit=5)
    assert [d.id for d in retry] == ["e1"] and retry[0].attempts == 2
    store.record_attempt("e1", now=NOW + 6, state="failed", code=None, error="timed out")
    assert store.claim_due(NOW + 1e6, lease_s=10, limit=5) == []
    assert store.counts() == {
        "endpoints": 1,
        "outbox": 0,
        "pending": 0,
        "delivered": 1,
        "failed": 1,
    }


def test_removing_an_endpoint_takes_its_outbox_and_log(store: WebhookStore) -> None:
    store.add_endpoint(_endpoint("wh_1"))
    store.add_endpoint(_endpoint("wh_2"))
    store.enqueue([_event("wh_1", "a"), _event("wh_1", "b"), _event("wh_2", "a")])
    assert store.make_delivery(_delivery("a", "wh_1"), ["a"])
    assert store.remove_endpoint("wh_1")
    assert store.pending_events("wh_1", 10) == [] and store.deliveries("wh_1", 10) == []
    assert [e.event_id for e in store.pending_events("wh_2", 10)] == ["a"]
    assert store.claim_due(NOW, lease_s=10, limit=10) == []


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    offers=st.lists(
        st.lists(st.integers(min_value=0, max_value=30), min_size=1, max_size=10), max_size=6
    )
)
def test_the_outbox_is_a_set_of_event_ids(
    open_store: Callable[[], WebhookStore], offers: list[list[int]]
) -> None:
    """Property: whatever order and repetition of offers, the outbox holds each offered id
    once, oldest first — the oracle is a plain ``dict`` of first offers."""
    store = open_store()
    ident = f"wh_{len(store.endpoints())}"
    store.add_endpoint(_endpoint(ident))
    oracle: dict[str, float] = {}
    tick = 0.0
    for offer in offers:
        batch = []
        for n in offer:
            tick += 1
            batch.append(_event(ident, f"e{n}", at=NOW + tick))
        unique = {e.event_id: e for e in reversed(batch)}  # first of a batch wins
        added = store.enqueue(list(unique.values()))
        fresh = [i for i in unique if i not in oracle]
        assert added == len(fresh)
        for e in batch:
            oracle.setdefault(e.event_id, e.created_at)
    got = store.pending_events(ident, 1000)
    expected = sorted(oracle, key=lambda i: oracle[i])
    assert [e.event_id for e in got] == expected
