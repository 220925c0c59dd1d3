"""Drill: block a host while three fleet workers crawl — through the API, judged by the sandbox.

Three ``lookup crawl-worker`` processes over one throw-away PostgreSQL store and one
throw-away etcd; the API (``lookup serve``) acts on that store (``LOOKUP_CRAWL_STORE``).
A ``block-host`` issued through ``POST /crawler/controls`` is applied by every worker
(each acknowledges the version, within a few of its 0.5 s polls) and the host gets zero
requests once every worker has applied it (plus a little slack for a request already
permitted), whichever worker owns its partition; the health view names the owner and its
epoch.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from lookup import settings
from lookup.crawler import Sandbox
from lookup.crawler.fleet import worker_name
from lookup.kit.etcd import EtcdServer
from tests.conftest import free_port, lookup_serve, wait_http
from tests.crawler.fleet_support import etcd_server, fleet_sandbox, start_fleet, wait_for

TOKEN = "fleet-drill-token"
TARGET = "shop.sandbox.test"
#: How often each worker polls the controls (``Steering.interval``).
POLL = 0.5
#: After the last worker applied the block, a request it had already permitted may still
#: reach the site: 4 polls of slack (a loaded machine is slow between lease and send).
GRACE = 4 * POLL


@pytest.fixture(scope="module")
def web() -> Iterator[Sandbox]:
    sandbox = Sandbox(fleet_sandbox()).start()
    try:
        yield sandbox
    finally:
        sandbox.stop()


@pytest.fixture
def etcd() -> Iterator[EtcdServer]:
    yield from etcd_server()


@pytest.fixture
def api(postgres_db: str, tmp_path: Path) -> Iterator[str]:
    port = free_port()
    env = settings.child_environ(LOOKUP_ADMIN_TOKEN=TOKEN, LOOKUP_CRAWL_STORE=postgres_db)
    proc = lookup_serve(tmp_path / "data", port, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{url}/healthz", proc)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_block_holds_across_the_fleet(
    web: Sandbox,
    postgres_db: str,
    etcd: EtcdServer,
    api: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    web.log.clear()
    started = time.monotonic()
    run = start_fleet(web, postgres_db, etcd.url, tmp_path / "fleet", 3, min_delay="0.2")
    names = [worker_name(i) for i in (1, 2, 3)]
    try:
        run.wait_joined(names)
        joined = time.monotonic() - started
        wait_for("requests to the host",
                 lambda: sum(e.host == TARGET for e in run.log()) >= 3, 90)  # fmt: skip
        reached = time.monotonic() - started
        r = httpx.post(
            f"{api}/crawler/controls",
            json={"command": "block-host", "target": TARGET, "note": "fleet drill"},
            headers={"Authorization": f"Bearer {TOKEN}"},
            timeout=10,
        )
        assert r.status_code == 200, r.text
        issued = r.json()["issued"]

        def acked() -> dict[str, float] | None:
            acks = httpx.get(f"{api}/crawler/controls", timeout=10).json()["acks"]
            got = {a["worker"]: a["at"] for a in acks if a["version"] >= issued["version"]}
            return got if len(got) == 3 else None

        acks: dict[str, Any] = wait_for("every worker to apply the block", acked, timeout=60)
        others = sum(e.host != TARGET for e in run.log())
        wait_for(
            "the fleet to go on elsewhere (or finish)",
            lambda: (
                sum(e.host != TARGET for e in run.log()) >= others + 30 or not run.fleet.running()
            ),
            90,
        )
        health = httpx.get(f"{api}/crawler/health", timeout=30).json()
    finally:
        run.fleet.stop()
    held_from = max(acks.values()) + GRACE  # every worker applied it, plus the slack
    with run.reader() as rd:
        cut = rd._rows(
            "SELECT COUNT(*) AS n FROM crawl_urls WHERE host LIKE %s AND outcome = %s",
            (f"{TARGET}%", "trap:operator-block"),
        )[0]["n"]
    late = [e for e in run.log() if e.host == TARGET and e.wall > held_from]
    grace = [e for e in run.log() if e.host == TARGET and issued["at"] < e.wall <= held_from]
    row = next(h for h in health["hosts"] if h["host"].split(":")[0] == TARGET)
    applied = ", ".join(f"{w} {at - issued['at']:.3f} s" for w, at in sorted(acks.items()))
    with capsys.disabled():
        print(
            f"\nfleet block: applied by {applied} (owner of {TARGET}: {row['worker']}, "
            f"epoch {row['epoch']}); {len(grace)} request(s) to it until {GRACE:.1f} s after "
            f"the last, {len(late)} after (workers joined {joined:.1f} s, {TARGET} reached "
            f"{reached:.1f} s after the start); {cut} of its URLs cut by the block"
        )
    assert late == []
    assert row["blocked"] == TARGET
    assert health["controls"]["blockedHosts"] == [TARGET]
    assert any(h["worker"] for h in health["hosts"]), "the health view names owners"
    assert all(h["worker"] for h in health["hosts"] if h["address"]), "every host's owner"
