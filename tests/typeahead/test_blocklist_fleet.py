"""Two real ``lookup serve`` processes editing the typeahead hot blocklist at once.

Each process used to rewrite ``blocklist.txt`` from its own memory through one shared
temporary name: terms another process had acknowledged were lost (41 % in a 2-worker
fleet), removed terms came back, and a rename that lost the race answered 500. What must
hold, embedded (one data directory, the file behind a lock) and on PostgreSQL (each
process with its own data directory, as on its own machine): every edit is answered 200,
every acknowledged term is on the list every process serves, every acknowledged removal
stays removed.

One embedded data directory serves several processes only in a fleet whose links are
shared otherwise (``lookup up --backend redis``; ``kit/serverlock.py`` refuses a second
plain ``lookup serve``), so the embedded case runs the processes with a Redis cache tier.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.shortener.fleet import ApiProcess

TOKEN = "blocklist-fleet-test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
CLIENTS_PER_PROCESS = 3
TERMS_PER_CLIENT = 12
#: Generous: each process polls the shared list every second.
CONVERGE_S = 30.0


@pytest.fixture(params=["embedded", "postgresql"])
def two_processes(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[list[ApiProcess]]:
    env = {"LOOKUP_ADMIN_TOKEN": TOKEN}
    if request.param == "embedded":
        # `lookup up --backend redis`: the workers share one data directory (allowed once
        # a Redis cache tier tells every process of link changes) and so the list's file
        dirs = [tmp_path / "data", tmp_path / "data"]
        env["LOOKUP_CACHE_URL"] = request.getfixturevalue("redis_server").url
    else:  # a fleet: the list in PostgreSQL, each process with its own data directory
        env["LOOKUP_TYPEAHEAD_BLOCKLIST"] = str(request.getfixturevalue("postgres_db"))
        dirs = [tmp_path / "api-0", tmp_path / "api-1"]
    procs: list[ApiProcess] = []
    try:
        for d in dirs:
            procs.append(ApiProcess(d, env))
        for p in procs:
            p.wait_ready()
        yield procs
    finally:
        for p in procs:
            p.stop()


def _listed(proc: ApiProcess) -> set[str]:
    r = httpx.get(f"{proc.url}/v1/typeahead/blocklist", timeout=30)
    assert r.status_code == 200, r.text
    return set(r.json()["terms"])


def test_concurrent_edits_through_two_processes_lose_nothing(
    two_processes: list[ApiProcess],
) -> None:
    one, two = two_processes
    doomed = [f"doomed phrase {i}" for i in range(CLIENTS_PER_PROCESS * TERMS_PER_CLIENT)]
    r = httpx.post(f"{one.url}/v1/typeahead/blocklist", json={"terms": doomed}, headers=AUTH,
                   timeout=30)  # fmt: skip
    assert r.status_code == 200, r.text
    deadline = time.monotonic() + CONVERGE_S
    while not set(doomed) <= _listed(two):  # the second process has seen them
        assert time.monotonic() < deadline, "the second process never saw the first's edit"
        time.sleep(0.25)

    failures: list[str] = []
    added: list[str] = []
    removed: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(2 * CLIENTS_PER_PROCESS)

    def client(proc: ApiProcess, c: int) -> None:
        with httpx.Client(base_url=proc.url, headers=AUTH, timeout=60) as http:
            start.wait()
            for j in range(TERMS_PER_CLIENT):
                term = f"process {proc.port} client {c} term {j}"
                r = http.post("/v1/typeahead/blocklist", json={"terms": [term]})
                with lock:
                    (added.append(term) if r.status_code == 200 else failures.append(
                        f"add {term!r}: {r.status_code} {r.text[:200]}"))  # fmt: skip
                if proc is two:  # the second process also removes what the first added
                    gone = doomed[c * TERMS_PER_CLIENT + j]
                    r = http.delete("/v1/typeahead/blocklist", params={"term": gone})
                    with lock:
                        (removed.append(gone) if r.status_code == 200 else failures.append(
                            f"remove {gone!r}: {r.status_code} {r.text[:200]}"))  # fmt: skip

    threads = [
        threading.Thread(target=client, args=(proc, c))
        for proc in (one, two)
        for c in range(CLIENTS_PER_PROCESS)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, "\n".join(failures[:10]) + f"\n({len(failures)} edits failed)"
    assert len(added) == 2 * CLIENTS_PER_PROCESS * TERMS_PER_CLIENT
    assert sorted(removed) == sorted(doomed)

    seen: dict[int, Any] = {}
    deadline = time.monotonic() + CONVERGE_S
    while True:  # each process re-reads the shared list within its poll interval
        seen = {p.port: _listed(p) for p in two_processes}
        if all(s == set(added) for s in seen.values()) or time.monotonic() > deadline:
            break
        time.sleep(0.25)
    for port, terms in seen.items():
        lost = set(added) - terms
        back = set(removed) & terms
        assert not lost, f"process {port} lost {len(lost)} of {len(added)} acknowledged terms"
        assert not back, f"process {port} lists {len(back)} removed terms again"
