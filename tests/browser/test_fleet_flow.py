"""A person watches the cache tier of a real fleet fail and come back, in Chromium.

``lookup up --backend postgres,redis --workers 2`` with its dashboard (PostgreSQL,
redis-server, two API processes, the aggregators); on the URL-shortener page: the
backends in use, then "Stop the cache tier", "Start the cache tier" and the outage drill.
"""

from __future__ import annotations

import pytest

from tests.conftest import _need_postgres, _need_redis
from tests.test_fleet import reachable_dir, running_fleet

pytestmark = pytest.mark.browser


def test_stop_and_start_the_cache_tier_of_a_fleet(page) -> None:  # type: ignore[no-untyped-def]
    from playwright.sync_api import expect

    _need_postgres()
    _need_redis()
    with (
        reachable_dir() as data_dir,
        running_fleet(
            data_dir, "--backend", "postgres,redis", "--workers", "2", dashboard=True
        ) as fleet,
    ):
        page.goto(f"{fleet['dashboard']}/shortener")
        expect(page.get_by_role("heading", name="Backends")).to_be_visible(timeout=60_000)
        expect(page.get_by_text("2 API processes")).to_be_visible()
        redis_at = fleet["servers"]["redis"]["url"].split("://", 1)[1]
        expect(page.get_by_text(f"{redis_at} is")).to_be_visible()

        page.get_by_role("button", name="Stop the cache tier").click()
        expect(page.get_by_text("The cache tier is stopped.")).to_be_visible(timeout=60_000)
        page.get_by_role("button", name="Start the cache tier").click()
        expect(page.get_by_text("The cache tier is running again.")).to_be_visible(timeout=60_000)

        page.get_by_role("button", name="Run the outage drill").click()
        card = page.locator('[data-testid="stMetric"]').filter(has_text="5xx or no answer")
        expect(card.locator('[data-testid="stMetricValue"]')).to_have_text("0", timeout=120_000)
        expect(page.locator(".st-key-chart-drill-latency")).to_be_visible()
        assert not page.locator('[data-testid="stException"]').count()
