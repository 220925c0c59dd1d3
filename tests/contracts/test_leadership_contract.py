"""The Leadership contract: at most one leader per name, and a successor when it goes.

The backends come from the seam's registry (:data:`lookup.kit.leadership.BACKENDS`): a new
backend registers its scheme there and says below how to reach a fresh one (``FRESH``).
Every backend passes the lone-candidate half; the election half — several candidates, one
leader, a successor — runs against every backend that elects among processes, and the
embedded ``solo:`` (one process over its data directory, always the leader) is named in
``SOLE`` instead.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from lookup.kit.leadership import BACKENDS, Leadership, backend, open_leadership
from lookup.kit.leadership.solo import SoloLeadership
from tests.contracts.seams import (
    Fresh,
    check_port_imports_no_backend,
    check_registered,
    fresh_url,
)

#: scheme -> how to get the URL of a fresh election: a function of a temp dir, or the name
#: of the fixture that gives a new database on a real server.
FRESH: dict[str, Fresh] = {
    "solo": lambda _tmp: "solo:",
    "postgresql": "postgres_db",
}
#: Backends with one candidate by design: each always leads, so there is no election.
SOLE = {"solo"}


@pytest.fixture(params=list(BACKENDS))
def any_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Every registered backend."""
    return fresh_url(request, tmp_path, FRESH)


@pytest.fixture(params=[scheme for scheme in BACKENDS if scheme not in SOLE])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Every registered backend that elects one leader among several candidates."""
    return fresh_url(request, tmp_path, FRESH)


def test_every_registered_backend_opens_from_a_url() -> None:
    check_registered(BACKENDS, backend)


def test_the_port_imports_no_backend() -> None:
    """``lookup.kit.leadership`` names its backends; it imports one only when a URL asks."""
    check_port_imports_no_backend("lookup.kit.leadership")


def test_solo_always_leads() -> None:
    solo = open_leadership("solo:", "job")
    assert isinstance(solo, SoloLeadership) and isinstance(solo, Leadership)
    assert solo.hold() and solo.hold()


def test_unknown_schemes_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="postgresql"):
        open_leadership("etcd://127.0.0.1:2379", "job")


def test_a_lone_candidate_leads_and_leads_again_after_release(any_url: str) -> None:
    lone = open_leadership(any_url, "lone")
    assert isinstance(lone, Leadership) and lone.name == "lone"
    assert "@" not in lone.describe()  # never the user or a password
    assert lone.hold() and lone.hold()
    lone.release()
    assert lone.hold()
    lone.release()


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
