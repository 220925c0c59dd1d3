"""The frontier: biased selection that never starves, and politeness no caller can break."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.crawler.frontier import (
    Frontier,
    FrontierEntry,
    PolitenessPolicy,
    WeightedSelector,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def entry(host: str, n: int, level: int = 1) -> FrontierEntry:
    return FrontierEntry(f"http://{host}/p{n}", f"{host}-{n}", host, level=level)


def test_selector_reads_levels_in_proportion_to_their_weights() -> None:
    sel = WeightedSelector((8, 3, 1))
    picks = Counter(sel.pick([True, True, True]) for _ in range(12 * 50))
    assert picks == {0: 400, 1: 150, 2: 50}


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=300),
    st.sampled_from([(8, 3, 1), (5, 1, 1), (1, 1, 1), (20, 4, 1)]),
)
def test_a_non_empty_low_level_is_never_starved(
    masks: list[tuple[bool, bool]], weights: tuple[int, int, int]
) -> None:
    """Whatever the other levels do, level 2 (always non-empty) is read regularly."""
    sel = WeightedSelector(weights)
    since = 0
    for high, mid in masks:
        level = sel.pick([high, mid, True])
        since = 0 if level == 2 else since + 1
        assert since < 2 * sum(weights)


def test_selector_rejects_bad_weights_and_empty_levels() -> None:
    with pytest.raises(ValueError):
        WeightedSelector((3, 0))
    with pytest.raises(IndexError):
        WeightedSelector((1, 1)).pick([False, False])


@pytest.mark.parametrize(
    "kw,expected",
    [
        (dict(took=0.2), 2.0),  # 10 × fetch time
        (dict(took=0.01), 1.0),  # the minimum
        (dict(took=0.01, crawl_delay=5.0), 5.0),  # robots Crawl-delay
        (dict(took=0.01, status=429, retry_after=30.0), 30.0),  # Retry-After honoured
        (dict(took=0.01, status=503, previous=4.0), 8.0),  # doubling
        (dict(took=0.01, status=429, retry_after=1e9), 3600.0),  # capped
        (dict(took=0.01, status=503, retry_after=1e9, crawl_delay=7200.0), 7200.0),
    ],
)
def test_delay_after_a_fetch(kw: dict, expected: float) -> None:
    policy = PolitenessPolicy(min_delay=1.0, delay_factor=10.0, max_backoff=3600.0)
    assert policy.delay(**kw) == pytest.approx(expected)


def test_robots_txt_is_leased_before_any_page_of_a_new_host() -> None:
    clock = FakeClock()
    f = Frontier(PolitenessPolicy(1.0, 10.0), clock=clock)
    f.add(entry("a.test", 1), "127.0.0.2")
    lease = f.lease()
    assert lease is not None and lease.kind == "robots" and lease.entry is None
    assert f.lease() is None  # one request at a time
    f.robots_known("a.test", crawl_delay=2.5)
    f.complete(lease, 0.01)
    assert f.lease() is None  # not before the delay
    clock.now += 2.49
    assert f.lease() is None
    clock.now += 0.02
    page = f.lease()
    assert page is not None and page.kind == "page" and page.entry.url == "http://a.test/p1"


def test_a_host_whose_robots_txt_fails_is_parked_not_dropped() -> None:
    clock = FakeClock()
    f = Frontier(PolitenessPolicy(0.1, 1.0), clock=clock)
    f.add(entry("down.test", 1), "127.0.0.9")
    lease = f.lease()
    assert lease.kind == "robots"
    f.robots_known("down.test", crawl_delay=None)
    hq = f.host("down.test")
    hq.needs_robots = hq.waiting_robots = True
    f.complete(lease, 0.05, extra_wait=600.0)
    assert len(f) == 1 and not f.has_due_work()
    clock.now += 599
    assert f.lease() is None
    clock.now += 2
    again = f.lease()
    assert again is not None and again.kind == "robots"  # retried, then still fail-closed


def test_hosts_sharing_an_address_never_overlap() -> None:
    clock = FakeClock()
    f = Frontier(PolitenessPolicy(0.5, 10.0), clock=clock)
    for h in ("a.test", "b.test"):
        f.add(entry(h, 1), "127.0.0.7")
        f.host(h).needs_robots = False
    first = f.lease()
    assert first is not None
    assert f.lease() is None  # b.test is due, but its address is busy
    f.complete(first, 0.01)
    assert f.lease() is None  # and then resting
    clock.now += 0.5
    second = f.lease()
    assert second is not None and second.host != first.host


def test_retry_goes_back_to_the_head_of_its_host_queue() -> None:
    clock = FakeClock()
    f = Frontier(PolitenessPolicy(0.0, 0.0), clock=clock)
    for n in (1, 2, 3):
        f.add(entry("a.test", n), "127.0.0.2")
    f.host("a.test").needs_robots = False
    lease = f.lease()
    assert lease.entry.url.endswith("/p1")
    f.complete(lease, 0.0, status=429, retry_after=5.0)
    f.requeue(lease.entry, lease.address)
    clock.now += 5.0
    assert f.lease().entry.url.endswith("/p1")


def test_priority_orders_urls_within_a_host() -> None:
    clock = FakeClock()
    f = Frontier(PolitenessPolicy(0.0, 0.0), weights=(8, 3, 1), clock=clock)
    for n in range(20):
        f.add(entry("a.test", n, level=2), "127.0.0.2")
    for n in range(100, 130):
        f.add(entry("a.test", n, level=0), "127.0.0.2")
    f.host("a.test").needs_robots = False
    order = []
    for _ in range(27):
        lease = f.lease()
        order.append(lease.entry.level)
        f.complete(lease, 0.0)
    assert order.count(0) == 24 and order.count(2) == 3  # 8 : 1 while both are waiting


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000))
def test_politeness_holds_for_any_schedule(seed: int) -> None:
    """Random hosts, addresses, fetch times and refusals: every lease respects every rule."""
    rng = random.Random(seed)
    clock = FakeClock()
    f = Frontier(PolitenessPolicy(0.05, 3.0, 60.0), clock=clock)
    hosts = [f"h{i}.test" for i in range(6)]
    address = {h: f"127.0.0.{2 + i % 4}" for i, h in enumerate(hosts)}  # some share
    n = 0
    for _ in range(40):
        h = rng.choice(hosts)
        f.add(entry(h, n), address[h])
        n += 1
    in_flight: dict[str, tuple[float, object]] = {}  # host -> (finish time, lease)
    busy_ip: set[str] = set()
    ready: dict[str, float] = {}
    ip_ready: dict[str, float] = {}
    completed = 0
    for _ in range(2000):
        lease = f.lease()
        if lease is not None:
            assert lease.host not in in_flight
            assert lease.address not in busy_ip
            assert clock.now >= ready.get(lease.host, 0.0) - 1e-9
            assert clock.now >= ip_ready.get(lease.address, 0.0) - 1e-9
            if lease.kind == "robots":
                f.robots_known(lease.host, crawl_delay=rng.choice([None, 0.2]))
            took = rng.uniform(0.001, 0.3)
            in_flight[lease.host] = (clock.now + took, lease)
            busy_ip.add(lease.address)
            continue
        if not in_flight and f.next_ready_at() is None:
            break
        # advance to the next event: a fetch finishing or a host becoming due
        finish = min((t for t, _ in in_flight.values()), default=float("inf"))
        due = f.next_ready_at() or float("inf")
        clock.now = max(clock.now, min(finish, due))
        for host, (t, lz) in list(in_flight.items()):
            if t <= clock.now:
                status = rng.choice([200, 200, 200, 429, 503])
                delay = f.complete(lz, took := rng.uniform(0.001, 0.3), status=status,
                                   retry_after=rng.choice([None, 0.5]))  # fmt: skip
                assert delay >= max(0.05, 3.0 * took) - 1e-9
                del in_flight[host]
                busy_ip.discard(lz.address)
                ready[host] = clock.now + delay
                ip_ready[lz.address] = max(ip_ready.get(lz.address, 0.0), clock.now + delay)
                completed += 1
    assert completed >= 40  # every URL (plus each host's robots.txt) was served
    assert len(f) == 0


def test_the_probe_comes_after_robots_txt_and_before_any_page_politely() -> None:
    clock = FakeClock()
    f = Frontier(PolitenessPolicy(min_delay=1.0, delay_factor=0.0), clock=clock)
    for n in range(2):
        f.add(entry("a.test", n), "127.0.0.2")
    robots = f.lease()
    assert robots is not None and robots.kind == "robots"
    f.robots_known("a.test", crawl_delay=None)
    f.probe_needed("a.test", True)
    f.complete(robots, 0.0)
    assert f.lease() is None  # the probe waits its turn like any request
    assert f.snapshot()[0]["needs_probe"] and f.snapshot()[0]["ready_in"] == 1.0
    clock.now += 1.0
    probe = f.lease()
    assert probe is not None and probe.kind == "probe" and probe.entry is None
    assert len(f) == 2  # no page was taken for it
    f.probe_needed("a.test", False)
    f.complete(probe, 0.0)
    clock.now += 1.0
    page = f.lease()
    assert page is not None and page.kind == "page"
    assert f.snapshot()[0]["ready_at"] == clock.now  # leased now; ready time unchanged
