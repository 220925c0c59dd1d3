"""Webhooks' parts on their own: signing, back-off, the address guard, click batching.

Signatures against :mod:`hmac` computed here (the oracle), back-off against its formula,
batching against a brute-force chunking of the same clicks — each as hypothesis
properties — and the guard refusing every non-public address unless the tests' allowance
names it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lookup.kit.engines.storeurl import sqlite_url
from lookup.shortener.urls import AddressPolicy, UrlPolicy, UrlRejected
from lookup.shortener.webhooks import CLICKED, Endpoint, OutboxEvent, open_webhook_store
from lookup.shortener.webhooks.options import SenderOptions
from lookup.shortener.webhooks.sender import AddressGuard, WebhookSender, backoff_s
from lookup.shortener.webhooks.signing import (
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    body_of,
    new_secret,
    signature,
    verify,
)

NOW = 1_800_000_000


@given(
    secret=st.text(min_size=1, max_size=64),
    envelope=st.dictionaries(st.text(max_size=8), st.integers() | st.text(max_size=20), max_size=5),
    stamp=st.integers(min_value=0, max_value=2**40),
)
def test_the_signature_is_hmac_sha256_of_the_raw_body(
    secret: str, envelope: dict[str, object], stamp: int
) -> None:
    body = body_of(envelope, stamp)
    oracle = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    assert signature(secret, body) == "sha256=" + oracle
    assert json.loads(body)["timestamp"] == stamp


@given(
    envelope=st.dictionaries(st.text(max_size=8), st.integers(), max_size=5),
    flip=st.integers(min_value=0),
    age=st.integers(min_value=-1000, max_value=1000),
)
def test_a_receiver_accepts_exactly_the_untouched_recent_body(
    envelope: dict[str, object], flip: int, age: int
) -> None:
    secret = new_secret()
    body = body_of(envelope, NOW)
    headers = {SIGNATURE_HEADER: signature(secret, body), TIMESTAMP_HEADER: str(NOW)}
    assert verify(secret, body, headers, now=NOW + age) == (abs(age) <= 300)
    tampered = bytearray(body)
    tampered[flip % len(body)] ^= 1
    assert not verify(secret, bytes(tampered), headers, now=NOW)
    assert not verify(secret + "x", body, headers, now=NOW)
    replayed = {**headers, TIMESTAMP_HEADER: str(NOW + 600)}  # a new stamp, the old body
    assert not verify(secret, body, replayed, now=NOW + 600)


@given(
    attempt=st.integers(min_value=1, max_value=80),
    base=st.floats(min_value=0.01, max_value=100),
    cap=st.floats(min_value=0.01, max_value=10_000),
    r=st.floats(min_value=0, max_value=1),
)
def test_backoff_doubles_to_the_cap_with_half_of_it_jitter(
    attempt: int, base: float, cap: float, r: float
) -> None:
    nominal = min(cap, base * 2 ** (attempt - 1))
    wait = backoff_s(attempt, base, cap, lambda: r)
    assert nominal / 2 - 1e-9 <= wait <= nominal + 1e-9
    assert math.isclose(wait, nominal / 2 * (1 + r), rel_tol=1e-9)
    if attempt > 1:  # never shorter than the previous attempt's shortest
        assert backoff_s(attempt, base, cap, lambda: 0) >= backoff_s(
            attempt - 1, base, cap, lambda: 0
        )


def _guard(allowed: tuple[str, ...] = (), answers: list[str] | None = None) -> AddressGuard:
    urls = UrlPolicy(["http://127.0.0.1:8000"], addresses=AddressPolicy(allowed))
    return AddressGuard(urls, resolve=lambda host: list(answers or []))


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9000/hook",
        "http://localhost:9000/hook",
        "http://[::1]:9000/",
        "http://2130706433/",
        "http://10.0.0.7/",
        "http://169.254.169.254/latest",
        "http://[fd00::1]/",
        "http://100.64.0.1/",
    ],
)
def test_the_guard_refuses_what_destinations_may_not_be(url: str) -> None:
    with pytest.raises(UrlRejected) as refused:
        _guard().check(url)
    assert refused.value.code == "PRIVATE_ADDRESS"


def test_loopback_only_through_the_tests_allowance_and_names_checked_when_sending() -> None:
    allowed = _guard(("127.0.0.0/8",))
    assert allowed.check("http://127.0.0.1:9000/hook") == "http://127.0.0.1:9000/hook"
    with pytest.raises(UrlRejected):
        allowed.check("http://10.0.0.7/")
    # a public-looking name that resolves inside is refused at send time
    rebinding = _guard(answers=["10.0.0.7"])
    assert rebinding.check("https://hooks.example/x") == "https://hooks.example/x"
    with pytest.raises(UrlRejected) as refused:
        rebinding.pinned("https://hooks.example/x")
    assert "private" in refused.value.message
    # a public answer: the connection goes to that address, Host and TLS name kept
    url, headers, extensions = _guard(answers=["93.184.216.34"]).pinned(
        "https://hooks.example:8443/x?y=1"
    )
    assert str(url) == "https://93.184.216.34:8443/x?y=1"
    assert headers == {"Host": "hooks.example:8443"}
    assert extensions == {"sni_hostname": "hooks.example"}


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    n=st.integers(min_value=0, max_value=40),
    size=st.integers(min_value=1, max_value=9),
    old=st.booleans(),
)
def test_clicks_are_batched_by_size_or_age(tmp_path: Path, n: int, size: int, old: bool) -> None:
    """Each click lands in exactly one delivery of at most ``size``; a partial batch waits
    until its oldest click is ``batch_interval_s`` old — brute force: chunks of ``size``."""
    store = open_webhook_store(sqlite_url(tmp_path / f"b{n}-{size}-{old}.sqlite3"))
    try:
        hook = Endpoint("wh_1", "https://hooks.example/", "s" * 16, (CLICKED,), "", NOW)
        store.add_endpoint(hook)
        store.enqueue(
            [
                OutboxEvent("wh_1", f"c{i:03}", CLICKED, {"id": f"c{i:03}"}, NOW + i * 0.001)
                for i in range(n)
            ]
        )
        options = SenderOptions(batch_size=size, batch_interval_s=5.0)
        sender = WebhookSender(store, _guard(), lambda: [hook], options=options)
        now = NOW + (10 if old else 1)
        sender.batch(hook, now)
        sent = sorted(
            store.deliveries("wh_1", 1000), key=lambda d: d.payload["data"]["clicks"][0]["id"]
        )
        chunks = [list(range(n))[i : i + size] for i in range(0, n, size)]
        expected = chunks if old else [c for c in chunks if len(c) == size]
        assert [[c["id"] for c in d.payload["data"]["clicks"]] for d in sent] == [
            [f"c{i:03}" for i in chunk] for chunk in expected
        ]
        assert [d.events for d in sent] == [len(c) for c in expected]
        left = len(store.pending_events("wh_1", 1000))
        assert left == n - sum(len(c) for c in expected)
    finally:
        store.close()


def test_a_name_is_sent_to_its_checked_address_with_its_host(tmp_path: Path) -> None:
    """Over real HTTP: ``hooks.test`` resolves (here) to loopback, which the allowance lets
    in; the POST goes to that address and says ``Host: hooks.test:<port>``."""
    from tests.shortener.webhook_receiver import signed_correctly, webhook_receiver

    store = open_webhook_store(sqlite_url(tmp_path / "hooks.sqlite3"))
    with webhook_receiver() as receiver:
        port = receiver.url.rsplit(":", 1)[1]
        hook = Endpoint(
            "wh_1", f"http://hooks.test:{port}/ok", new_secret(), ("link.created",), "", NOW
        )
        store.add_endpoint(hook)
        store.enqueue([OutboxEvent("wh_1", "evt_1", "link.created", {"id": "evt_1"}, NOW)])
        guard = _guard(("127.0.0.0/8",), answers=["127.0.0.1"])
        sender = WebhookSender(store, guard, lambda: [hook])
        sender.round()
        (got,) = receiver.on("/ok")
        assert got.headers["host"] == f"hooks.test:{port}"
        assert signed_correctly(hook.secret, got)
        assert [d.state for d in store.deliveries("wh_1", 5)] == ["delivered"]
        sender.close()
    store.close()


def test_a_read_that_overlaps_a_registration_is_not_cached(tmp_path: Path) -> None:
    """The shipper's thread reads the endpoints while an endpoint is being registered: its
    old list must not be cached, or this process's next event (a link created right after
    the registration) finds no endpoint for up to a second and is never delivered (CI:
    ``test_link_events_and_batched_clicks_arrive_signed[postgresql]``, no link.created)."""
    import threading

    from lookup.shortener.webhooks.hub import Webhooks

    store = open_webhook_store(sqlite_url(tmp_path / "links.sqlite3"))
    reading, release = threading.Event(), threading.Event()
    plain = store.endpoints

    def slow_endpoints() -> list[Endpoint]:
        found = plain()  # the list before the registration
        if threading.current_thread().name == "shipper":
            reading.set()
            release.wait(10)
        return found

    store.endpoints = slow_endpoints  # type: ignore[method-assign]
    hub = Webhooks(
        store, _guard(("127.0.0.0/8",)), render=lambda link: {}, short_url=lambda k: k,
        refresh_s=3600.0,
    )  # fmt: skip
    shipper = threading.Thread(target=hub.endpoints, name="shipper")
    shipper.start()
    assert reading.wait(10)
    made = hub.register({"url": "http://127.0.0.1:9/hook"})
    release.set()
    shipper.join(10)
    assert [e.id for e in hub.endpoints()] == [made.id]
