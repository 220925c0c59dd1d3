"""The Leadership contract: at most one leader per name, and a successor when it goes.

Run against every implementation that can have more than one candidate (PostgreSQL's
advisory lock); the embedded solo leadership always leads (checked on its own).
"""

from __future__ import annotations

import threading

import pytest

from lookup.kit.leader import Leadership, SoloLeadership, open_leadership

SERVERS: dict[str, str] = {"postgresql": "postgres_db"}


@pytest.fixture(params=sorted(SERVERS))
def url(request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue(SERVERS[request.param]))


def test_solo_always_leads() -> None:
    solo = open_leadership("solo:", "job")
    assert isinstance(solo, SoloLeadership) and isinstance(solo, Leadership)
    assert solo.hold() and solo.hold()


def test_unknown_schemes_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="postgresql"):
        open_leadership("etcd://127.0.0.1:2379", "job")


def test_exactly_one_of_many_candidates_leads(url: str) -> None:
    candidates = [open_leadership(url, "job") for _ in range(6)]
    start = threading.Barrier(6)
    results: list[bool] = [False] * 6

    def run(i: int) -> None:
        start.wait()
        results[i] = candidates[i].hold()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(results) == 1
    leader = results.index(True)
    assert candidates[leader].hold()  # keeps it
    assert not any(c.hold() for i, c in enumerate(candidates) if i != leader)
    for c in candidates:
        c.release()


def test_names_are_independent(url: str) -> None:
    a, b = open_leadership(url, "one"), open_leadership(url, "two")
    assert a.hold() and b.hold()
    a.release()
    b.release()


def test_a_successor_takes_over_when_the_leader_goes(url: str) -> None:
    first, second = open_leadership(url, "job"), open_leadership(url, "job")
    assert first.hold() and not second.hold()
    first.release()
    assert second.hold()
    assert not first.hold()  # the old leader comes back as a follower
    second.release()
    first.release()
