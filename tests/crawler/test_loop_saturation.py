"""The crawl loop with every task slot busy and another host due: it must wait, not spin.

Found when the sandbox grew past the crawls' concurrency (more hosts needing robots.txt
at once than slots): the loop computed a wait of zero for the due host, never awaited,
and so never let the fetches in flight finish — the crawl sat still until its time
limit. With one slot and two hosts the old loop made one request and stalled.
"""

from __future__ import annotations

from pathlib import Path

from lookup.crawler import CrawlConfig, Sandbox, SandboxConfig, TrapPolicy, crawl


def test_one_slot_and_two_hosts_still_crawl_to_the_page_limit(tmp_path: Path) -> None:
    web = Sandbox(SandboxConfig.small(tls_hosts=())).start()
    try:
        report = crawl(
            CrawlConfig(
                tmp_path / "c", seeds=[web.url("intl", "/"), web.url("press", "/")],
                hosts=web.hosts(), strict_hosts=True, min_delay=0.01, delay_factor=1.0,
                timeout=1.5, connect_timeout=1.0, max_pages=20, max_seconds=60,
                traps=TrapPolicy(host_budget=10, max_depth=2), concurrency=1,
            )
        )  # fmt: skip
    finally:
        web.stop()
    assert report.stop_reason in ("max-pages", "done"), report.stop_reason
    assert report.requests >= 20
