"""The traffic simulator against a live server (uvicorn on a loopback port, real HTTP).

Checks the plan (shares, Zipf skew) and that the server's own counters, read back by
the simulator, add up: every lookup is answered by exactly one layer, the negative
cache absorbs the scraper's retries, and analytics saw exactly the planned clicks.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from lookup.kit.admin import load_admin_token_in
from lookup.server import create_app
from lookup.shortener.simulate import (
    SCRAPER_AGENT,
    TrafficPlan,
    plan_visits,
    simulate_traffic,
    zipf_weights,
)
from tests.conftest import loopback_socket, serve_in_thread

TOKEN = "simulator-owner-token-0123456789"


@pytest.fixture
def live_api(tmp_path: Path) -> Iterator[str]:
    sock = loopback_socket()
    app = create_app(
        tmp_path / "data",
        base_url=f"http://127.0.0.1:{sock.getsockname()[1]}",
        subsystems=["lookup.shortener.http:mount"],
    )
    with serve_in_thread(app, sock) as url:
        yield url


@pytest.fixture
def unused_port() -> int:
    from lookup.kit.ports import free_port

    return free_port()


def test_the_plan_has_the_requested_mix_and_skew() -> None:
    plan = TrafficPlan(requests=20_000, links=20, zipf_s=1.2, seed=3)
    keys = [f"key{i:04d}" for i in range(20)]
    regular, burst = plan_visits(plan, keys, "viral01")
    kinds = Counter(v.kind for v in regular + burst)
    assert kinds == {
        "human": 20_000 - 4_000 - 1_600 - 800 - 2_000,
        "viral": 4_000,
        "bot": 1_600,
        "preview": 800,
        "scraper": 2_000,
    }
    assert {v.key for v in burst} == {"viral01"}
    humans = Counter(v.key for v in regular if v.kind == "human")
    weights = zipf_weights(20, 1.2)
    n = sum(humans.values())
    for rank, key in enumerate(keys):  # within 5 binomial standard deviations
        p = weights[rank]
        assert abs(humans[key] - n * p) <= 5 * (n * p * (1 - p)) ** 0.5 + 1
    assert all(v.headers["User-Agent"] == SCRAPER_AGENT for v in regular if v.kind == "scraper")
    assert all("CF-IPCountry" in v.headers for v in regular if v.kind == "human")
    again, _ = plan_visits(plan, keys, "viral01")
    assert again == regular  # deterministic for a seed


def test_impossible_plans_are_refused() -> None:
    for bad in (
        TrafficPlan(requests=0),
        TrafficPlan(viral_share=0.7, scraper_share=0.5),
        TrafficPlan(concurrency=0),
        TrafficPlan(bot_share=-0.1),
    ):
        with pytest.raises(ValueError):
            bad.validate()


def test_simulated_traffic_through_a_live_server(live_api: str, tmp_path: Path) -> None:
    plan = TrafficPlan(requests=1_200, links=15, scraper_keys=40, concurrency=8, seed=11)
    admin = load_admin_token_in(tmp_path / "data" / "shortener")  # the metrics need it
    result = simulate_traffic(live_api, plan, token=TOKEN, admin_token=admin)
    assert result.total == 1_200 and result.errors == 0
    for kind in ("human", "viral", "bot", "preview"):
        assert set(result.statuses[kind]) == {302}, (kind, result.statuses[kind])
    assert set(result.statuses["scraper"]) <= {404, 429}
    layers = result.layers
    # Every redirect lookup was answered by exactly one layer.
    assert layers["lookups"] == 1_200
    answered = (
        layers["l1Hits"]
        + layers["negativeHits"]
        + layers["loads"]
        + layers["collapsed"]
        + layers["rateLimited"]
    )
    assert answered == layers["lookups"]
    assert layers["storeReads"] == layers["loads"]  # no shared tier: every load is a store read
    # A key is read from the store again only after something made the cached answer go
    # away: a TTL expiry, or an invalidation of that very key. (Invalidations of other
    # keys, like the scanner's verdicts arriving mid-run, must cost nothing.)
    # Negative caching: each guessed key reached the store once, plus once per expiry of
    # its negative entry (none unless the run outlasts the negative TTL).
    scraped = result.sent["scraper"]
    assert layers["storeNotFound"] <= plan.scraper_keys + layers["negativeExpirations"]
    assert (
        layers["negativeHits"]
        >= scraped - layers["storeNotFound"] - layers["collapsed"] - layers["rateLimited"]
    )
    # Known keys: creating a link caches it; its one scan verdict (in or before the run)
    # invalidates it once, so each link is read once; the viral key once more after the
    # owner's edit purged it; plus one read per TTL expiry.
    known_reads = layers["storeReads"] - layers["storeNotFound"]
    assert known_reads <= len(result.keys) + 1 + layers["l1Expirations"]
    assert sum(r["lookups"] for r in result.layer_rows()) >= layers["lookups"]
    assert result.analytics == {"accepted": 1_200 - scraped, "dropped": 0}

    # Analytics saw exactly the planned clicks on the viral link: people apart from previews.
    regular, burst = plan_visits(plan, result.keys[:-1], result.viral_key)
    previews = sum(1 for v in regular if v.kind == "preview" and v.key == result.viral_key)
    stats = httpx.get(
        f"{live_api}/v1/links/{result.viral_key}/stats",
        headers={"Authorization": f"Bearer {TOKEN}"},
    ).json()
    assert stats["totals"]["clicks"] == len(burst)
    assert stats["totals"]["previews"] == previews and stats["totals"]["bots"] == 0
    countries = {r["value"] for r in stats["breakdowns"]["countries"]}
    assert countries <= {"US", "IN", "BR", "GB", "DE", "ID", "JP", "FR", "NG", "MX", "CA", "ES"}
    assert 1 <= stats["uniqueVisitors"]["allTime"] <= len(burst)


def test_an_unreachable_api_raises_an_http_error(unused_port: int) -> None:
    with pytest.raises(httpx.HTTPError):
        simulate_traffic(f"http://127.0.0.1:{unused_port}", TrafficPlan(requests=10))
