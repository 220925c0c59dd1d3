"""Drill: a site asks us to stop, "immediately and permanently" (seed 003).

Real processes on loopback: the sandbox web (``lookup sandbox``), a crawl
(``lookup crawl``, started the way the dashboard starts it) and the API
(``lookup serve``). Commands go through the API with the admin token; what happened is
judged from the sandbox's own request log, not from the crawler's account of itself.
"""

from __future__ import annotations

import statistics
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
#: The shop's listing pages (its busiest URLs), blocked by a pattern mid-crawl.
SHOP = "shop.sandbox.test"
PATTERN = f"http://{SHOP}*/products*"
#: The calendar (an endless trap, crawled to the end of the run) is slowed mid-crawl.
SLOWED = "calendar.sandbox.test"
NEW_DELAY = 1.0  # seconds between its requests; the crawl's own floor is 0.3
#: A seed host done early (no back-off, no Crawl-delay): its home page is recrawled.
HUB = "hub.sandbox.test"


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


def _issue(api: str, command: str, target: str = "", value: float | None = None) -> dict[str, Any]:
    r = httpx.post(
        f"{api}/crawler/controls",
        json={"command": command, "target": target, "value": value, "note": "drill"},
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=10,
    )
    assert r.status_code == 200, r.text
    return r.json()["issued"]


def _applied(api: str, version: int) -> float | None:
    acks = httpx.get(f"{api}/crawler/controls", timeout=10).json()["acks"]
    return next((a["at"] for a in acks if a["version"] >= version), None)


def _gaps(entries: list[Any]) -> list[tuple[Any, float]]:
    """Each request after the first, with the idle time since the previous one's answer."""
    entries = sorted(entries, key=lambda e: e.start)
    return [
        (b, b.start - a.end + (0.05 if a.aborted else 0.0))
        for a, b in zip(entries, entries[1:], strict=False)
    ]


def test_a_blocked_host_gets_zero_requests_from_the_next_second_on(
    fleet: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """Mid-crawl, together: block a host, block a URL pattern on another, slow a third."""
    api, web = fleet["api"], fleet["sandbox"]

    def to_target() -> int:
        return sum(1 for e in crawled(web) if e.host == TARGET)

    def listings(log: list[Any]) -> list[Any]:
        return [e for e in log if e.host == SHOP and e.path.startswith("/products")]

    _wait("the crawl to reach the host", lambda: to_target() >= 4, timeout=60)
    _wait("the crawl to reach the listings", lambda: len(listings(crawled(web))) >= 4)
    issued = _issue(api, "block-host", TARGET)
    pattern = _issue(api, "block-pattern", PATTERN)
    slowed = _issue(api, "set-delay", SLOWED, NEW_DELAY)
    blocked_at = issued["at"]
    acked = _wait("the crawler to apply the controls", lambda: _applied(api, slowed["version"]))
    others_before = sum(1 for e in crawled(web) if e.host != TARGET)

    def slowed_after() -> int:
        return sum(1 for e in crawled(web) if e.host == SLOWED and e.wall > slowed["at"] + 1.0)

    # the crawl goes on elsewhere after the controls, the slowed host among it
    _wait(
        "the crawl to go on elsewhere",
        lambda: (
            slowed_after() >= 4
            and sum(1 for e in crawled(web) if e.host != TARGET) >= others_before + 10
        ),
        timeout=60,
    )
    everything = crawled(web)
    log = [e for e in everything if e.host == TARGET]
    # "From the next second on": on a busy machine the crawler may apply the controls
    # later than a second after they were issued (its poll runs late); from then on
    # (plus a request already on its way) nothing may reach them.
    cutoff = max(blocked_at + 1.0, acked + 0.5)
    grace = [e for e in log if blocked_at < e.wall <= cutoff]
    late = [e for e in log if e.wall > cutoff]
    shop = listings(everything)
    shop_before = [e for e in shop if e.wall <= pattern["at"]]
    shop_late = [e for e in shop if e.wall > max(pattern["at"] + 1.0, acked + 0.5)]
    gaps = _gaps([e for e in everything if e.host == SLOWED])
    before = [g for e, g in gaps if e.wall <= slowed["at"]]
    after = [g for e, g in gaps if e.wall > slowed["at"] + 1.0]
    with capsys.disabled():
        print(
            f"\nblock: applied {acked - blocked_at:.3f} s after issue; "
            f"{len(grace)} request(s) to {TARGET} in the next second, {len(late)} after"
            f"\nblock-pattern {PATTERN}: {len(shop_before)} matching requests before, "
            f"{len(shop_late)} from the next second on"
            f"\nset-delay {SLOWED} {NEW_DELAY} s: gaps before min {min(before):.3f} s, "
            f"median {statistics.median(before):.3f} s; after issue+1 s min "
            f"{min(after):.3f} s over {len(after)} gaps"
        )
    assert late == []
    assert acked - blocked_at <= 1.0 + 2.0  # the poll interval is 0.5 s; generous on a busy box
    assert shop_before and shop_late == []
    assert min(before) < NEW_DELAY  # the new delay changed something
    assert len(after) >= 3 and min(after) >= NEW_DELAY - 0.01  # 10 ms of slack
    health = httpx.get(f"{api}/crawler/health", timeout=10).json()
    row = next(h for h in health["hosts"] if h["host"].split(":")[0] == TARGET)
    assert row["blocked"] == TARGET


def test_pause_and_resume_the_whole_crawl_and_recrawl_now(
    fleet: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    api, web = fleet["api"], fleet["sandbox"]
    _wait("the crawl to start", lambda: len(crawled(web)) >= 20, timeout=60)
    # pause one host: nothing to it from the next second on, the others go on; resume it
    _wait("requests to the shop", lambda: sum(e.host == SHOP for e in crawled(web)) >= 4)
    paused = _issue(api, "pause-host", SHOP)
    _wait("the host's pause to be applied", lambda: _applied(api, paused["version"]))
    time.sleep(max(0.0, paused["at"] + 2.5 - time.time()))  # a paused window of 1.5 s
    resumed_host = _issue(api, "resume-host", SHOP)
    back = _wait(
        "requests to the host after its resume",
        lambda: next(
            (e for e in crawled(web) if e.host == SHOP and e.wall > resumed_host["at"]), None
        ),
        timeout=30,
    )
    while_paused = [e for e in crawled(web) if paused["at"] + 1.0 < e.wall <= resumed_host["at"]]
    with capsys.disabled():
        print(
            f"\npause-host {SHOP}: {len(while_paused)} requests to other hosts and "
            f"{sum(e.host == SHOP for e in while_paused)} to it while paused; first request "
            f"{back.wall - resumed_host['at']:.3f} s after resume-host"
        )
    assert [e for e in while_paused if e.host == SHOP] == []
    assert while_paused  # the rest of the crawl went on
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
    done = next(e for e in crawled(web) if e.host == HUB and e.target == "/" and e.status == 200)
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
    took = again.wall - issued["at"]
    with capsys.disabled():
        print(f"\nrecrawl of {url}: fetched {took:.3f} s after the command")
    # within a second it is at the head of its idle host's queue, then the 0.3 s floor
    # at most: 1.3 s, with a generous margin for a loaded machine
    assert took <= 1.3 + 4.0
