"""Trending cannot be brigaded from one client (issue 11, item 6).

The server decides who searched: the owner token when one is sent, else a hash of the
client's address, with its network (/24 for IPv4, /48 for IPv6) beside it; a ``userId``
in the body is ignored. ``POST /v1/searches`` is rate-limited per client with the
standard ``RateLimit-*`` and ``Retry-After`` headers, and a term trends only when its
searches come from many distinct networks. The exact brigade of the issue — 520 posts
from one client naming 20 made-up users — must not trend; a genuine spike from many
clients (distinct addresses through a trusted ``X-Forwarded-For``) still does.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from lookup import settings
from lookup.kit.ratelimit import RatePolicy
from lookup.server import create_app
from lookup.typeahead.http import install
from lookup.typeahead.serving import SuggestService
from lookup.typeahead.trending import TrendingPolicy

from .conftest import Clock

BRIGADE = "zz fake brigade promo"


@pytest.fixture
def clock() -> Clock:
    return Clock()


def _client(data_dir: Path, clock: Clock, *, trust: bool) -> TestClient:
    # The default trending policy and search rate limit: what `lookup serve` runs. The
    # limiter's buckets refill on the test's clock too, so the number admitted is exact
    # (on the wall clock they refilled 0.5 token/s while the posts ran: 30 + a few).
    service = SuggestService.from_data_dir(data_dir, clock=clock, trending=TrendingPolicy())
    app = create_app(
        data_dir,
        subsystems=[lambda m: install(m, service, trust_forwarded_for=trust, search_clock=clock)],
    )
    return TestClient(app)


@pytest.fixture
def plain(data_dir: Path, clock: Clock) -> Iterator[TestClient]:
    with _client(data_dir, clock, trust=False) as c:
        yield c


@pytest.fixture
def behind_proxy(data_dir: Path, clock: Clock) -> Iterator[TestClient]:
    with _client(data_dir, clock, trust=True) as c:
        yield c


def _trending(client: TestClient) -> list[str]:
    terms = client.get("/v1/typeahead/trending", params={"market": "en-IN"}).json()["terms"]
    return [t["q"] for t in terms]


def _suggested(client: TestClient, prefix: str) -> list[str]:
    return client.get("/v1/suggest", params={"q": prefix, "market": "en-IN"}).json()["suggestions"]


def test_the_issue_brigade_does_not_trend(plain: TestClient, clock: Clock) -> None:
    statuses = []
    limited = None
    for i in range(520):  # 0.7 s on the live server: no time passes here at all
        r = plain.post(
            "/v1/searches", json={"q": BRIGADE, "market": "en-IN", "userId": f"fake{i % 20}"}
        )
        statuses.append(r.status_code)
        if r.status_code == 429 and limited is None:
            limited = r
    # one client (one address: the userIds are ignored), 30 per 60 s with a burst of 30,
    # and no time passes: exactly the burst is admitted
    burst = int(RatePolicy.parse(settings.get("typeahead_rate_searches")).capacity)
    assert burst == 30
    assert statuses.count(202) == burst and statuses.count(429) == 520 - burst
    assert statuses[:burst] == [202] * burst  # the first 30, then every one refused
    assert limited is not None and limited.json()["error"] == "RATE_LIMITED"
    for header in ("RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "Retry-After"):
        assert header.lower() in {k.lower() for k in limited.headers}, header
    clock.advance(1)
    assert BRIGADE not in _trending(plain)
    assert BRIGADE not in _suggested(plain, "") and BRIGADE not in _suggested(plain, "z")


def test_a_genuine_spike_from_many_clients_trends(behind_proxy: TestClient, clock: Clock) -> None:
    sent = 0
    for round_ in range(10):
        for client in range(60):  # 60 people in 60 networks, 10 searches each
            address = f"198.51.{client}.{10 + round_ % 3}"
            r = behind_proxy.post(
                "/v1/searches",
                json={"q": "ind vs aus final", "market": "en-IN"},
                headers={"X-Forwarded-For": address},
            )
            assert r.status_code == 202, r.text
            assert "ratelimit-remaining" in {k.lower() for k in r.headers}
            sent += 1
        clock.advance(20)
    terms = behind_proxy.get("/v1/typeahead/trending", params={"market": "en-IN"}).json()["terms"]
    top = {t["q"]: t for t in terms}["ind vs aus final"]
    assert top["count"] == sent == 600 and top["users"] >= 20 and top["networks"] >= 20
    assert _suggested(behind_proxy, "ind vs a")[0] == "ind vs aus final"


def test_many_addresses_of_one_network_do_not_trend(behind_proxy: TestClient, clock: Clock) -> None:
    for _ in range(10):
        for host in range(60):  # 60 addresses, all in 203.0.113.0/24
            r = behind_proxy.post(
                "/v1/searches",
                json={"q": "one network promo", "market": "en-IN"},
                headers={"X-Forwarded-For": f"203.0.113.{host + 1}"},
            )
            assert r.status_code == 202
        clock.advance(20)
    assert "one network promo" not in _trending(behind_proxy)


def test_one_signed_in_user_is_one_user_from_anywhere(
    behind_proxy: TestClient, clock: Clock
) -> None:
    token = {"Authorization": "Bearer owner-token-of-one-person-0123456789"}
    for _ in range(10):
        for net in range(60):
            r = behind_proxy.post(
                "/v1/searches",
                json={"q": "one person promo", "market": "en-IN"},
                headers={**token, "X-Forwarded-For": f"192.0.{net}.9"},
            )
            assert r.status_code == 202
        clock.advance(20)
    assert "one person promo" not in _trending(behind_proxy)


def test_without_a_trusted_proxy_forwarded_for_is_ignored(plain: TestClient) -> None:
    answers = [
        plain.post(
            "/v1/searches",
            json={"q": "spoofed", "market": "en-IN"},
            headers={"X-Forwarded-For": f"198.51.100.{i}"},
        ).status_code
        for i in range(100)
    ]
    assert answers.count(202) == 30 and answers.count(429) == 70  # one client, one bucket
