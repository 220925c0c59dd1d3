"""Index validation and rollback against a real ``lookup serve`` (issue 28 item 11).

One server over a data directory, while the real ``lookup index`` command publishes and
rolls back under it: rollback with no previous version is a 409 (and a CLI error); a new
version is served once published; the admin endpoint needs the token, swaps back at once
(the next query already answers from the previous version) and the CLI rollback reaches
the server within its reload poll; a rejected version never answers a query.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ROOT, free_port, lookup_serve, wait_http
from tests.search.corpus import CrawlWriter, Page, stdlib_pages

#: It starts a real server and runs the real command several times: out of the inner loop.
pytestmark = pytest.mark.slow

ADMIN = "rollback-admin-token"
ROLLBACK = "/search/versions/rollback"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOKUP_")}
    env["LOOKUP_ADMIN_TOKEN"] = ADMIN
    env["LOOKUP_SEARCH_DEADLINE_MS"] = "5000"
    return env


def _index(*args: str) -> subprocess.CompletedProcess[str]:
    """The real ``lookup index`` command."""
    return subprocess.run(
        [sys.executable, "-m", "lookup.cli", "index", *args],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def _wait_for(what: str, check: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"not within {timeout} s: {what}")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """``lookup serve`` over a data directory holding one index version (30 pages)."""
    data = tmp_path / "data"
    crawl = CrawlWriter(tmp_path / "a")
    crawl.fetch(stdlib_pages(30))
    done = _index(str(crawl.root), "--shards", "1", "--data-dir", str(data))
    assert done.returncode == 0, done.stderr
    port = free_port()
    log = (tmp_path / "serve.log").open("wb")
    proc = lookup_serve(data, port, env=_env(), stderr=log)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{url}/healthz", proc)
        yield url, data
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _get(url: str, path: str, **params: Any) -> Any:
    r = httpx.get(f"{url}{path}", params=params, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def _served(url: str) -> int:
    return int(_get(url, "/search/status")["version"])


def _found(url: str, query: str) -> list[str]:
    return [r["url"] for r in _get(url, "/search", q=query)["results"]]


def _rollback(url: str, token: str | None = ADMIN) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.post(f"{url}{ROLLBACK}", headers=headers, timeout=30)


def test_validation_and_rollback_under_a_running_server(
    server: tuple[str, Path], tmp_path: Path
) -> None:
    url, data = server
    assert _served(url) == 1

    # nothing to go back to: a clear 409 from the API and an error from the command
    r = _rollback(url)
    assert r.status_code == 409 and r.json()["error"] == "NO_PREVIOUS", r.text
    cli = _index("rollback", "--data-dir", str(data))
    assert cli.returncode == 1 and "no previous version" in cli.stderr

    # version 2: the same pages and 15 more, one of them the only "quokkaword" page
    b = CrawlWriter(tmp_path / "b")
    extra = [Page("http://new.test/quokka.html", "quokkaword page", "quokkaword lives here")]
    b.fetch(stdlib_pages(44) + extra)
    done = _index(str(b.root), "--data-dir", str(data))
    assert done.returncode == 0, done.stderr
    _wait_for("version 2 served", lambda: _served(url) == 2)
    assert _found(url, "quokkaword") == ["http://new.test/quokka.html"]

    # the endpoint needs the admin token
    assert _rollback(url, token=None).status_code == 401
    assert _rollback(url, token="wrong").status_code == 403
    assert _served(url) == 2

    # with it, version 1 answers the very next query
    r = _rollback(url)
    assert r.status_code == 200, r.text
    assert r.json() == {"version": 1, "previous": 2, "served": 1}
    assert _found(url, "quokkaword") == []
    assert _served(url) == 1

    # the command rolls back too (to 2, the version rolled away from); the server's
    # reload poll picks it up
    cli = _index("rollback", "--data-dir", str(data))
    assert cli.returncode == 0 and "index version 2 is live again" in cli.stdout
    _wait_for("version 2 served again", lambda: _served(url) == 2)
    assert _found(url, "quokkaword") == ["http://new.test/quokka.html"]

    # a version that lost most pages is rejected; it never answers a query
    c = CrawlWriter(tmp_path / "c")
    c.fetch([Page("http://w.test/1", "wombatword", "wombatword only here"), *stdlib_pages(4)])
    rejected = _index(str(c.root), "--data-dir", str(data))
    assert rejected.returncode == 1 and "rejected" in rejected.stderr, rejected.stderr
    runs = _get(url, "/search/status")["reloader"]["runs"]
    checked = lambda: _get(url, "/search/status")["reloader"]["runs"] >= runs + 2  # noqa: E731
    _wait_for("two reload checks after the rejection", checked)
    assert _served(url) == 2
    assert _found(url, "wombatword") == []
    versions = _get(url, "/search/versions")
    assert versions["live"] == 2 and versions["served"] == 2 and versions["previous"] == 1
    assert versions["rejected"][0]["version"] == 3
    assert "docs:" in versions["rejected"][0]["reason"]
    live = next(v for v in versions["versions"] if v["version"] == 2)
    assert live["state"] == "live" and live["canaries"]
