"""The typeahead canary over real HTTP (issue 11 item 8): validate → canary → promote.

A stored snapshot is started as a canary through the admin endpoint; live traffic from
many clients (each its own ``X-Client-Id``) goes to a real server on loopback; a share
of the clients — always the same ones — is answered by the candidate, compared in the
shadow with the current snapshot; the server's poller promotes a good candidate and
rolls a deliberately bad one back, by itself.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from lookup.kit.admin import server_admin_token
from lookup.server import create_app
from lookup.typeahead.http import install
from lookup.typeahead.serving import SuggestService
from tests.conftest import serve_in_thread

from .test_serving import publish_variant

SHARE = 0.25
CLIENTS = 400


@pytest.fixture
def live(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, SuggestService]]:
    monkeypatch.delenv("LOOKUP_ADMIN_TOKEN", raising=False)
    service = SuggestService.from_data_dir(data_dir)
    app = create_app(data_dir, subsystems=[lambda m: install(m, service)])
    with serve_in_thread(app) as url:
        yield url, service


def admin(data_dir: Path) -> dict[str, str]:
    return {"Authorization": f"Bearer {server_admin_token(data_dir)}"}


def prefixes(strings: list[str]) -> list[str]:
    """What people type: the 1-3 character prefixes of the popular suggestions."""
    out: list[str] = []
    for s in strings[:150]:
        out += [s[:n] for n in (1, 2, 3) if len(s) >= n]
    return out


def traffic(url: str, typed: list[str], rounds: int = 3) -> dict[str, set[str]]:
    """Each client types a few prefixes per round; the versions each client saw."""
    seen: dict[str, set[str]] = {}
    with httpx.Client(base_url=url, timeout=30) as client:
        for r in range(rounds):
            for c in range(CLIENTS):
                q = typed[(c * 7 + r * 13) % len(typed)]
                resp = client.get("/v1/suggest", params={"q": q}, headers={"X-Client-Id": f"c{c}"})
                assert resp.status_code == 200, resp.text
                seen.setdefault(f"c{c}", set()).add(resp.json()["version"])
    return seen


def wait_decided(url: str, timeout_s: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        canary = httpx.get(f"{url}/v1/typeahead/snapshots/en-IN/canary", timeout=10).json()
        if canary["canary"]["state"] != "RUNNING":
            return dict(canary["canary"])
        time.sleep(0.1)
    raise AssertionError("the canary was not decided in time")


def start(url: str, data_dir: Path, version: str) -> httpx.Response:
    return httpx.post(
        f"{url}/v1/typeahead/snapshots/en-IN/canary",
        json={"version": version, "share": SHARE, "minRequests": 200},
        headers=admin(data_dir),
        timeout=30,
    )


def test_a_good_snapshot_is_promoted_after_its_canary(
    live: tuple[str, SuggestService], data_dir: Path
) -> None:
    url, service = live
    old = service.snapshot("en-IN")
    strings = old.strings()
    good = "20991231T000000Z-c0ffee"
    publish_variant(data_dir, "en-IN", ["zebra crossing", *strings], good)
    started = start(url, data_dir, good)
    assert started.status_code == 200, started.text
    assert started.json()["canary"]["state"] == "RUNNING"
    again = start(url, data_dir, good)
    assert again.status_code == 409 and again.json()["error"] == "CANARY_RUNNING"
    probe = httpx.get(f"{url}/v1/suggest", params={"q": "a"}, timeout=10)
    assert probe.headers["cache-control"].startswith("private")  # no CDN mixing the arms

    seen = traffic(url, prefixes(strings), rounds=1)
    assert all(len(v) == 1 for v in seen.values())  # a client sticks to one arm
    share = sum(good in v for v in seen.values()) / CLIENTS
    assert 0.15 < share < 0.35, share  # the requested 25 %, by hash of the client id
    traffic(url, prefixes(strings), rounds=2)  # enough canary requests to decide

    canary = wait_decided(url)
    assert canary["state"] == "PROMOTED", canary
    assert canary["overlap"] > 0.9 and canary["errorRate"] == 0.0
    print(f"\ngood canary: {canary['requests']} canary requests, overlap {canary['overlap']:.2f}, "
          f"empty {canary['emptyRate']:.3f} vs {canary['baselineEmptyRate']:.3f}, "
          f"p95 {canary['p95Ms']:.3f} vs {canary['baselineP95Ms']:.3f} ms")  # fmt: skip
    after = httpx.get(f"{url}/v1/suggest", params={"q": "zeb"}, timeout=10)
    assert after.json()["version"] == good and after.json()["suggestions"][0] == "zebra crossing"
    assert after.headers["cache-control"].startswith("public")
    assert service.store.current("en-IN") == good
    markets = httpx.get(f"{url}/v1/typeahead/snapshots", timeout=10).json()["markets"]
    assert markets["en-IN"]["current"]["version"] == good
    assert markets["en-IN"]["canary"]["state"] == "PROMOTED"


def test_a_bad_snapshot_is_rolled_back_by_its_canary(
    live: tuple[str, SuggestService], data_dir: Path
) -> None:
    url, service = live
    old = service.snapshot("en-IN")
    strings = old.strings()
    # Deliberately bad, yet structurally valid: the popular head is gone.
    bad = "20991231T000000Z-badbad"
    publish_variant(data_dir, "en-IN", strings[len(strings) // 2 :], bad)
    assert start(url, data_dir, bad).status_code == 200
    traffic(url, prefixes(strings), rounds=3)
    canary = wait_decided(url)
    assert canary["state"] == "ROLLED_BACK", canary
    assert "overlap" in canary["reason"]
    print(f"\nbad canary: {canary['requests']} canary requests, overlap {canary['overlap']:.2f}, "
          f"empty {canary['emptyRate']:.3f} vs {canary['baselineEmptyRate']:.3f}: "
          f"{canary['reason']}")  # fmt: skip
    for c in range(20):  # everyone is back on the current snapshot
        resp = httpx.get(
            f"{url}/v1/suggest", params={"q": "a"}, headers={"X-Client-Id": f"c{c}"}, timeout=10
        )
        assert resp.json()["version"] == old.version
    assert service.store.current("en-IN") == old.version


def test_canary_requests_are_checked(live: tuple[str, SuggestService], data_dir: Path) -> None:
    url, service = live
    base = f"{url}/v1/typeahead/snapshots/en-IN/canary"
    assert httpx.get(base, timeout=10).json()["error"] == "NO_CANARY"
    cases = [
        ({"version": 5}, 400, "INVALID_REQUEST"),
        ({"version": "20991231T000000Z-000000"}, 404, "NOT_FOUND"),
        ({"version": service.snapshot("en-IN").version}, 409, "ALREADY_SERVING"),
        ({"version": "x", "share": 2}, 400, "INVALID_REQUEST"),
        ({"version": "x", "bogus": 1}, 400, "INVALID_REQUEST"),
    ]
    stored = publish_variant(data_dir, "en-IN", ["one thing"], "20991231T000000Z-aaaaaa")
    cases.append(({"version": stored, "share": 1.5}, 400, "INVALID_REQUEST"))
    for body, status, code in cases:
        resp = httpx.post(base, json=body, headers=admin(data_dir), timeout=10)
        assert (resp.status_code, resp.json()["error"]) == (status, code), (body, resp.text)
    unknown = httpx.post(
        f"{url}/v1/typeahead/snapshots/xx-YY/canary", json={"version": stored},
        headers=admin(data_dir), timeout=10,
    )  # fmt: skip
    assert unknown.status_code == 404
    assert httpx.delete(base, headers=admin(data_dir), timeout=10).json()["error"] == "NO_CANARY"
    assert start(url, data_dir, stored).status_code == 200
    aborted = httpx.delete(base, headers=admin(data_dir), timeout=10)
    assert aborted.status_code == 200 and aborted.json()["canary"]["state"] == "ABORTED"
