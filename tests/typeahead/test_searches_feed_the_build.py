"""A search submitted over HTTP becomes a suggestion after the next build (issue 11, item 7).

``POST /v1/searches`` appends to ``<data-dir>/typeahead/searches.csv``; ``lookup typeahead
build`` folds that file in after the query log, through the same filters: enough
distinct users (5), bots weighed out (a crawler's user agent), the blocklist. A second
build counts nothing twice. Real HTTP (uvicorn on loopback) and the real command.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import httpx
import pytest

from lookup.cli import main as lookup_main
from lookup.kit.admin import server_admin_token
from lookup.server import create_app
from lookup.typeahead.http import install
from lookup.typeahead.serving import SuggestService
from tests.conftest import serve_in_thread

from .conftest import Built

GOOGLEBOT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
BROWSER = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0"


def _post(http: httpx.Client, q: str, address: str, agent: str = BROWSER) -> None:
    r = http.post(
        "/v1/searches",
        json={"q": q, "market": "en-IN"},
        headers={"X-Forwarded-For": address, "User-Agent": agent},
    )
    assert r.status_code == 202, r.text


def _build(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> dict:  # type: ignore[type-arg]
    capsys.readouterr()
    code = lookup_main(["typeahead", "build", "--data-dir", str(data_dir), "--json", "--quiet"])
    out = capsys.readouterr().out
    assert code == 0, out
    return json.loads(out)  # type: ignore[no-any-return]


def test_a_submitted_search_is_suggested_after_the_next_build(
    built: Built, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir = tmp_path / "data"
    shutil.copytree(built.data_dir, data_dir)
    service = SuggestService.from_data_dir(data_dir)
    app = create_app(data_dir, subsystems=[lambda m: install(m, service, trust_forwarded_for=True)])
    admin = {"Authorization": f"Bearer {server_admin_token(data_dir)}"}
    with serve_in_thread(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        assert "quokka cafe tour" not in http.get("/v1/suggest?q=quokka").json()["suggestions"]
        for person in range(6):  # six people: past the batch's five distinct users
            _post(http, "Quokka Cafe Tour", f"198.51.{person}.7")
        for _ in range(20):  # one person, many times: one distinct user
            _post(http, "quokka lonely tour", "198.51.100.9")
        for person in range(6):  # blocked by the built-in policy list
            _post(http, "how to make a bomb quokka", f"203.0.{person}.7")
        for person in range(6):  # a crawler, however many addresses
            _post(http, "quokka crawler tour", f"192.0.{person}.7", agent=GOOGLEBOT)
        # What arrived in the last second waits for the next build (it may still grow).
        time.sleep(1.1)
        first = _build(data_dir, capsys)
        assert all(m["published"] for m in first["markets"]), first
        folded = [f for f in first["folded"] if f["market"] == "en-IN"]
        assert sum(f["events"] for f in folded) >= 38
        assert http.post("/v1/typeahead/snapshots/reload", headers=admin).status_code == 200
        shown = http.get("/v1/suggest", params={"q": "quokka", "market": "en-IN"}).json()
        assert shown["suggestions"] == ["quokka cafe tour"], shown
        # The next build folds nothing twice: the suggestion keeps its place, no new events.
        second = _build(data_dir, capsys)
        again = [f for f in second["folded"] if f["market"] == "en-IN"]
        assert sum(f["events"] for f in again) == 0
        assert http.post("/v1/typeahead/snapshots/reload", headers=admin).status_code == 200
        shown = http.get("/v1/suggest", params={"q": "quokka", "market": "en-IN"}).json()
        assert shown["suggestions"] == ["quokka cafe tour"], shown
