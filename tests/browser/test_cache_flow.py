"""A person opens Building blocks → Distributed cache, replays the shortener's clicks through
every eviction policy and reads the curves; with redis-server installed, starts a
throw-away one from the page, runs the stampede, and stops it.

Runs the real API and dashboard (see ``conftest.py``) in Debian's Chromium.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from browser_harness import Service

from lookup import settings
from lookup.kit.redisserver import redis_available

pytestmark = pytest.mark.browser

EXCEPTION = '[data-testid="stException"]'


def test_replay_a_trace_then_run_the_stampede(
    page,
    dashboard: Service,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    from playwright.sync_api import expect

    page.goto(f"{dashboard.url}/blocks")
    page.get_by_role("tab", name="Distributed cache").click()
    page.get_by_role("button", name="Replay the trace").click()
    expect(page.get_by_text("Hit ratio vs cache size · shortener clicks (Zipf)")).to_be_visible(
        timeout=60_000
    )
    expect(page.locator(EXCEPTION)).to_have_count(0)
    page.screenshot(path=str(tmp_path / "cache-eviction.png"), full_page=True)
    page.get_by_role("tab", name="Stampede & cold restart").click()
    if not redis_available():
        if settings.get("require_servers"):
            pytest.fail("redis-server is missing and LOOKUP_REQUIRE_SERVERS is set (.ci/run)")
        expect(page.get_by_text("redis-server is not installed")).to_be_visible()
        return
    page.get_by_role("button", name="Start a throw-away redis-server").click()
    page.get_by_role("button", name="Run the stampede").click()
    table = page.locator('[data-testid="stDataFrame"]').filter(has_text="single-flight")
    expect(table).to_be_visible(timeout=60_000)
    expect(page.locator(EXCEPTION)).to_have_count(0)
    page.get_by_role("button", name="Stop the redis-server").click()
    expect(page.get_by_role("button", name="Start a throw-away redis-server")).to_be_visible()
