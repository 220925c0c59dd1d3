"""A person opens Building blocks → Hash ring & quorum, adds a ring node and reads how many
keys moved, starts the page's storage nodes, kills one, runs a workload at R=W=2 and reads
the checker's verdict, then stops the nodes. Real API, dashboard and Chromium."""

from __future__ import annotations

from pathlib import Path

import pytest
from browser_harness import Service

pytestmark = pytest.mark.browser

EXCEPTION = '[data-testid="stException"]'


def test_ring_moves_then_kill_a_node_and_run_a_checked_workload(
    page,
    dashboard: Service,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    from playwright.sync_api import expect

    page.goto(f"{dashboard.url}/blocks")
    page.get_by_role("tab", name="Hash ring & quorum").click()
    page.get_by_role("button", name="Add a node").click()
    expect(page.get_by_text("hash mod N would move")).to_be_visible(timeout=30_000)
    page.get_by_role("button", name="Start 4 nodes").click()
    kill = page.get_by_role("button", name="Kill -9")
    expect(kill).to_be_visible(timeout=60_000)
    kill.click()
    expect(page.get_by_role("button", name="Restart")).to_be_enabled(timeout=30_000)
    page.get_by_role("button", name="Run workload").click()
    expect(page.get_by_text("Last workload, as the history checker judged it")).to_be_visible(
        timeout=120_000
    )
    expect(page.locator('[data-testid="stDataFrame"]').last).to_contain_text("killed")
    expect(page.locator(EXCEPTION)).to_have_count(0)
    page.screenshot(path=str(tmp_path / "blocks_kv.png"), full_page=True)  # to look at
    page.get_by_role("button", name="Stop the nodes").click()
    expect(page.get_by_role("button", name="Start 4 nodes")).to_be_visible(timeout=30_000)
