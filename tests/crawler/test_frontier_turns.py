"""Hosts sharing an address take turns: a busy host cannot win every tie for the address.

The sandbox's docs host (http and https) and its www twin share one address, each with
a one-second Crawl-delay. Before this rule, the host that had just been served was put
back in the heap first, won the tie at the address's next free moment every time, and
a crawl met the www twin only after tens of seconds on a loaded machine.
"""

from __future__ import annotations

from lookup.crawler.frontier import Frontier, FrontierEntry, PolitenessPolicy


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def entry(host: str, n: int) -> FrontierEntry:
    return FrontierEntry(f"http://{host}/p{n}", f"{host}-{n}", host)


def run(f: Frontier, clock: FakeClock, leases: int) -> list[str]:
    """Lease, answer at once and wait for the next due moment, ``leases`` times."""
    order = []
    while len(order) < leases:
        lease = f.lease()
        if lease is None:
            due = f.next_ready_at()
            assert due is not None
            clock.now = max(clock.now, due)
            continue
        order.append(lease.host)
        f.complete(lease, 0.0)
    return order


def test_a_host_added_later_gets_the_address_next() -> None:
    clock = FakeClock()
    f = Frontier(PolitenessPolicy(min_delay=1.0, delay_factor=0.0), clock=clock)
    for n in range(50):
        f.add(entry("docs.test", n), "127.0.0.2")
    f.host("docs.test").needs_robots = False
    assert run(f, clock, 3) == ["docs.test"] * 3
    f.add(entry("www.test", 1), "127.0.0.2")  # discovered while docs is busy
    f.add(entry("www.test", 2), "127.0.0.2")
    f.host("www.test").needs_robots = False
    assert run(f, clock, 4) == ["www.test", "docs.test", "www.test", "docs.test"]


def test_three_hosts_on_one_address_share_it_evenly() -> None:
    clock = FakeClock()
    f = Frontier(PolitenessPolicy(min_delay=1.0, delay_factor=0.0), clock=clock)
    hosts = ("a.test", "b.test", "c.test")
    for h in hosts:
        for n in range(20):
            f.add(entry(h, n), "127.0.0.2")
    order = run(f, clock, 30)
    assert order[:3] == list(hosts)  # each one's robots.txt first, in arrival order
    for start in range(0, 30, 3):
        assert sorted(order[start : start + 3]) == list(hosts), order
