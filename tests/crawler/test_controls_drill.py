"""Drill: a site asks us to stop, "immediately and permanently" (seed 003).

Real processes on loopback: the sandbox web (``lookup sandbox``), a crawl
(``lookup crawl``, started the way the dashboard starts it) and the API
(``lookup serve``). Commands go through the API with the admin token; what happened is
judged from the sandbox's own request log, not from the crawler's account of itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from lookup import settings
from lookup.crawler.session import (
    CrawlSession,
    CrawlSettings,
    SandboxProcess,
    probe_sandbox,
    read_request_log,
)
from tests.conftest import free_port, lookup_serve, wait_http

TOKEN = "drill-admin-token"
TARGET = "docs.sandbox.test"


def _wait(what: str, check: Callable[[], Any], timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[dict[str, Any]]:
    sandbox = SandboxProcess(tmp_path / "sandbox.log", size="small", crawl_delay=None).start()
    port = free_port()
    env = settings.child_environ(LOOKUP_ADMIN_TOKEN=TOKEN, LOOKUP_CRAWL_STORE="")
    api = lookup_serve(tmp_path / "data", port, env=env)
    session = None
    try:
        url = f"http://127.0.0.1:{port}"
        wait_http(f"{url}/healthz", api)
        probe = probe_sandbox(sandbox.url)
        limits = CrawlSettings(
            max_seconds=60, max_pages=5000, min_delay=0.3, delay_factor=1.0, host_budget=500
        )
        session = CrawlSession.start(tmp_path / "data" / "crawls" / "c1", probe, limits)
        yield {"api": url, "sandbox": sandbox.url, "session": session}
    finally:
        if session is not None:
            session.kill()
        api.terminate()
        api.wait(10)
        sandbox.stop()


def crawled(web: str) -> list[Any]:
    """The crawler's requests in the sandbox's log (not the log's own readers)."""
    return [e for e in read_request_log(web) if e.host.endswith(".sandbox.test")]


def _issue(api: str, command: str, target: str = "") -> dict[str, Any]:
    r = httpx.post(
        f"{api}/crawler/controls",
        json={"command": command, "target": target, "note": "drill"},
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=10,
    )
    assert r.status_code == 200, r.text
    return r.json()["issued"]


def _applied(api: str, version: int) -> float | None:
    acks = httpx.get(f"{api}/crawler/controls", timeout=10).json()["acks"]
    return next((a["at"] for a in acks if a["version"] >= version), None)


def test_a_blocked_host_gets_zero_requests_from_the_next_second_on(
    fleet: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    api, web = fleet["api"], fleet["sandbox"]

    def to_target() -> int:
        return sum(1 for e in crawled(web) if e.host == TARGET)

    _wait("the crawl to reach the host", lambda: to_target() >= 4, timeout=60)
    issued = _issue(api, "block-host", TARGET)
    blocked_at = issued["at"]
    acked = _wait("the crawler to apply the block", lambda: _applied(api, issued["version"]))
    others_before = sum(1 for e in crawled(web) if e.host != TARGET)
    # the crawl goes on elsewhere: 30 more requests to other hosts after the block
    _wait(
        "the crawl to go on elsewhere",
        lambda: sum(1 for e in crawled(web) if e.host != TARGET) >= others_before + 30,
        timeout=60,
    )
    log = [e for e in crawled(web) if e.host == TARGET]
    grace = [e for e in log if blocked_at < e.wall <= blocked_at + 1.0]
    late = [e for e in log if e.wall > blocked_at + 1.0]
    with capsys.disabled():
        print(
            f"\nblock: applied {acked - blocked_at:.3f} s after issue; "
            f"{len(grace)} request(s) to {TARGET} in the next second, {len(late)} after"
        )
    assert late == []
    assert acked - blocked_at <= 1.0 + 2.0  # the poll interval is 0.5 s; generous on a busy box
    health = httpx.get(f"{api}/crawler/health", timeout=10).json()
    row = next(h for h in health["hosts"] if h["host"].split(":")[0] == TARGET)
    assert row["blocked"] == TARGET


def test_pause_and_resume_the_whole_crawl_and_recrawl_now(
    fleet: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    api, web = fleet["api"], fleet["sandbox"]
    _wait("the crawl to start", lambda: len(crawled(web)) >= 20, timeout=60)
    issued = _issue(api, "pause-crawl")
    _wait("the pause to be applied", lambda: _applied(api, issued["version"]))
    window_start = issued["at"] + 1.0
    # watch a quiet window of 1.5 s (observation, not synchronisation)
    time.sleep(max(0.0, window_start + 1.5 - time.time()))
    quiet = [e for e in crawled(web) if e.wall > window_start]
    resumed = _issue(api, "resume-crawl")
    assert quiet == []
    _wait(
        "requests after the resume",
        lambda: any(e.wall > resumed["at"] for e in crawled(web)),
        timeout=30,
    )
    # recrawl a page already fetched: it is asked for again soon after
    done = next(e for e in crawled(web) if e.target == "/" and e.status == 200)
    url = f"{done.scheme}://{done.host}:{done.port}/"
    issued = _issue(api, "recrawl", url)
    again = _wait(
        "the recrawl",
        lambda: next(
            (
                e
                for e in crawled(web)
                if e.host == done.host and e.target == "/" and e.wall > issued["at"]
            ),
            None,
        ),
        timeout=30,
    )
    with capsys.disabled():
        print(f"\nrecrawl of {url}: fetched {again.wall - issued['at']:.3f} s after the command")
