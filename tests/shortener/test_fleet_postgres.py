"""Two real ``lookup serve`` processes, different data directories, one PostgreSQL.

What must hold across processes when the store is shared: exactly one winner among
concurrent claims of an alias, an exact click budget, disjoint keys from the shared id
blocks, and every link readable through every process.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import psycopg
import pytest

from tests.shortener.fleet import ApiProcess, api_fleet, fresh_database


@pytest.fixture(scope="module")
def fleet_db(postgres_server: Any) -> Iterator[str]:
    with fresh_database(postgres_server) as url:
        yield url


@pytest.fixture(scope="module")
def fleet(fleet_db: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[ApiProcess]]:
    env = {"LOOKUP_SHORTENER_STORE": fleet_db, "LOOKUP_ADMIN_TOKEN": ""}
    with api_fleet(tmp_path_factory.mktemp("fleet"), 2, env) as procs:
        yield procs


def _in_parallel(n: int, fn: Callable[[httpx.Client, int], Any]) -> list[Any]:
    barrier = threading.Barrier(n)
    results: list[Any] = [None] * n

    def run(i: int) -> None:
        with httpx.Client(timeout=30) as client:
            barrier.wait()
            results[i] = fn(client, i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_the_processes_report_the_shared_store(fleet: list[ApiProcess]) -> None:
    for proc in fleet:
        health = httpx.get(f"{proc.url}/healthz", timeout=10).json()
        text = repr(health)
        assert "postgresql://127.0.0.1:" in text and "postgres@" not in text


def test_sixteen_claims_of_one_alias_through_two_processes_have_one_winner(
    fleet: list[ApiProcess],
) -> None:
    def claim(client: httpx.Client, i: int) -> tuple[int, dict[str, Any]]:
        resp = client.post(
            f"{fleet[i % 2].url}/v1/links",
            json={"longUrl": f"https://example.com/claimant/{i}", "customAlias": "fleet-race"},
            headers={"Authorization": f"Bearer racer-token-{i:04d}-abcdefghij"},
        )
        return resp.status_code, resp.json()

    results = _in_parallel(16, claim)
    assert sorted(status for status, _ in results) == [201] + [409] * 15
    assert all(body["error"] == "ALIAS_TAKEN" for status, body in results if status == 409)
    (winner,) = [body for status, body in results if status == 201]
    for proc in fleet:  # both processes redirect to the one winner
        hop = httpx.get(f"{proc.url}/fleet-race", follow_redirects=False, timeout=10)
        assert hop.status_code == 302 and hop.headers["location"] == winner["longUrl"]


def test_a_budget_of_five_admits_exactly_five_of_48_clicks_through_two_processes(
    fleet: list[ApiProcess],
) -> None:
    created = httpx.post(
        f"{fleet[0].url}/v1/links",
        json={"longUrl": "https://example.com/limited", "maxClicks": 5},
        timeout=10,
    )
    assert created.status_code == 201
    key = created.json()["key"]

    def click(client: httpx.Client, i: int) -> int:
        return client.get(f"{fleet[i % 2].url}/{key}", follow_redirects=False).status_code

    statuses = _in_parallel(48, click)
    assert statuses.count(302) == 5 and statuses.count(410) == 43, sorted(statuses)


def test_keys_from_both_processes_are_distinct_and_resolve_everywhere(
    fleet: list[ApiProcess],
) -> None:
    made: dict[str, str] = {}
    with httpx.Client(timeout=10) as client:
        for i in range(40):
            long_url = f"https://example.com/both/{i}"
            resp = client.post(f"{fleet[i % 2].url}/v1/links", json={"longUrl": long_url})
            assert resp.status_code == 201
            made[resp.json()["key"]] = long_url
        assert len(made) == 40  # no key minted twice, whichever process minted it
        for i, (key, long_url) in enumerate(made.items()):
            hop = client.get(f"{fleet[(i + 1) % 2].url}/{key}", follow_redirects=False)
            assert hop.status_code == 302 and hop.headers["location"] == long_url


def test_one_admin_token_from_the_shared_store_opens_both_processes(
    fleet: list[ApiProcess], fleet_db: str
) -> None:
    with psycopg.connect(fleet_db) as conn:
        row = conn.execute("SELECT value FROM fleet_secrets WHERE name = 'admin.token'").fetchone()
    assert row is not None
    token = bytes(row[0]).decode("ascii").strip()
    for proc in fleet:
        assert not (proc.data_dir / "shortener" / "admin.token").exists()
        url = f"{proc.url}/v1/shortener/blocklist"
        wrong = httpx.get(url, headers={"Authorization": "Bearer wrong"}, timeout=10)
        right = httpx.get(url, headers={"Authorization": f"Bearer {token}"}, timeout=10)
        assert (wrong.status_code, right.status_code) == (403, 200)


def test_clicks_through_both_processes_add_up_in_the_shared_counts(
    fleet: list[ApiProcess],
) -> None:
    created = httpx.post(
        f"{fleet[0].url}/v1/links", json={"longUrl": "https://example.com/counted"}, timeout=10
    )
    key = created.json()["key"]
    browser = {"User-Agent": "Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101 Firefox/128.0"}
    with httpx.Client(timeout=10, headers=browser) as client:
        for i in range(17):  # 10 through the first process, 7 through the second
            hop = client.get(f"{fleet[0 if i < 10 else 1].url}/{key}", follow_redirects=False)
            assert hop.status_code == 302
        deadline = time.monotonic() + 60
        totals: list[int] = []
        while time.monotonic() < deadline:  # each process folds its own log every second
            totals = [
                client.get(f"{proc.url}/v1/links/{key}/stats").json()["totals"]["total"]
                for proc in fleet
            ]
            if totals == [17, 17]:
                break
            time.sleep(0.2)
    assert totals == [17, 17]  # both processes read the fleet's counts, none counted twice
