"""Defects a Shlink or Dub user meets in the first hour, over a real ``lookup serve``
(issue 27, item 6): unknown query parameters silently ignored, a backslash reaching
``Location``, a ``text/plain`` body read as JSON, and a link the safety scanner disabled
brought back to life by its owner's retarget.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from lookup.kit.admin import load_admin_token_in
from tests.conftest import running_lookup

#: The scanner follows blocklist edits within a second or two; the test waits this long.
SCANNER_WAIT_S = 60.0


class Live:
    """A real server, an owner's token and the admin token."""

    def __init__(self, url: str, data_dir: Path) -> None:
        self.url = url
        self.client = httpx.Client(base_url=url, timeout=30)
        token = self.client.post("/v1/tokens").json()["token"]
        self.owner = {"Authorization": f"Bearer {token}"}
        self.admin = {"Authorization": f"Bearer {load_admin_token_in(data_dir / 'shortener')}"}

    def create(self, long_url: str) -> str:
        r = self.client.post("/v1/links", json={"longUrl": long_url}, headers=self.owner)
        assert r.status_code == 201, r.text
        return str(r.json()["key"])


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    data_dir = tmp_path_factory.mktemp("first-hour") / "data"
    with running_lookup(data_dir, {"LOOKUP_SHORTENER_RATE_OWNER": "100000/1"}) as url:
        server = Live(url, data_dir)
        yield server
        server.client.close()


@pytest.mark.parametrize(
    ("path", "accepted"),
    [
        (
            "/v1/links?limt=5",
            "createdFrom, createdTo, cursor, domain, limit, order, search, sort, status, tag",
        ),
        ("/v1/links/{key}/qr.png?size=4", "domain, scale"),
        ("/v1/links/{key}/qr.svg?scale=4&colour=red", "domain, scale"),
    ],
)
def test_an_unknown_query_parameter_is_refused_naming_the_accepted_ones(
    live: Live, path: str, accepted: str
) -> None:
    key = live.create("https://example.com/qr")
    r = live.client.get(path.format(key=key), headers=live.owner)
    assert r.status_code == 400, r.text
    body = r.json()
    assert body["error"] == "UNKNOWN_PARAMETER"
    assert body["message"].endswith(f"accepts: {accepted}")
    known = path.format(key=key).split("?")[0] + ("?limit=5" if "links?" in path else "?scale=4")
    assert live.client.get(known, headers=live.owner).status_code == 200


@pytest.mark.parametrize(
    ("long_url", "location"),
    [
        # a browser reads "\" in an http(s) path as "/": store what it would visit
        ("https://example.com/a\\b/c", "https://example.com/a/b/c"),
        ("https://example.com/\\\\evil.example/", "https://example.com///evil.example/"),
        # in the query and the fragment it is data: percent-encoded, never raw in a header
        ("https://example.com/p?q=a\\b#x\\y", "https://example.com/p?q=a%5Cb#x%5Cy"),
    ],
)
def test_a_backslash_never_reaches_location(live: Live, long_url: str, location: str) -> None:
    key = live.create(long_url)
    r = live.client.get(f"/{key}", follow_redirects=False)
    assert r.status_code in (301, 302), r.text
    assert r.headers["location"] == location
    assert "\\" not in r.headers["location"]


def test_a_text_plain_body_is_not_read_as_json(live: Live) -> None:
    body = '{"longUrl": "https://example.com/form"}'
    for headers in ({"Content-Type": "text/plain"}, {**live.owner, "Content-Type": "text/plain"}):
        r = live.client.post("/v1/links", content=body, headers=headers)
        assert r.status_code == 415, r.text
        assert r.json()["error"] == "UNSUPPORTED_MEDIA_TYPE"


def _status_of(live: Live, key: str) -> str:
    r = live.client.get(f"/v1/links/{key}", headers=live.owner)
    assert r.status_code == 200, r.text
    return str(r.json()["status"])


def test_a_link_the_scanner_disabled_keeps_its_destination(live: Live) -> None:
    """The rule: the owner cannot retarget a link the scanner disabled (it would come back
    to life once the scanner found the new destination clean, so a bad link could hop to
    a decoy and back); it stays on the warning page until the scanner finds the same
    destination clean again or is deleted. A link the owner disabled may be retargeted."""
    key = live.create("https://soon-bad.example/offer")
    r = live.client.post(
        "/v1/shortener/blocklist", json={"add": ["soon-bad.example"]}, headers=live.admin
    )
    assert r.status_code == 200, r.text
    deadline = time.monotonic() + SCANNER_WAIT_S
    while _status_of(live, key) != "DISABLED" and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _status_of(live, key) == "DISABLED"
    r = live.client.patch(
        f"/v1/links/{key}", json={"longUrl": "https://fine.example/"}, headers=live.owner
    )
    assert r.status_code == 409, r.text
    assert r.json()["error"] == "DISABLED_BY_SCANNER"
    assert live.client.get(f"/{key}", follow_redirects=False).status_code == 403

    mine = live.create("https://example.com/paused")
    patch = {"status": "DISABLED"}
    assert live.client.patch(f"/v1/links/{mine}", json=patch, headers=live.owner).is_success
    retarget = {"longUrl": "https://example.com/moved"}
    r = live.client.patch(f"/v1/links/{mine}", json=retarget, headers=live.owner)
    assert r.status_code == 200, r.text


#: What a browser sends, and what an API client does.
BROWSER = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}
API_CLIENT = {"Accept": "application/json"}


def test_a_browser_gets_a_page_for_a_missing_or_gone_key_and_a_client_json(live: Live) -> None:
    """Issue 27, item 3 (its page half): a person who follows a dead short link reads why;
    an API client keeps the JSON error (and so does ``Accept: */*``)."""
    r = live.client.get("/NoSuchKey", headers=BROWSER)
    assert r.status_code == 404 and r.headers["content-type"].startswith("text/html")
    assert "does not exist" in r.text and "/NoSuchKey" in r.text
    assert r.headers["cache-control"] == "no-store"
    for headers in (API_CLIENT, {"Accept": "*/*"}, {}):
        r = live.client.get("/NoSuchKey", headers=headers)
        assert r.status_code == 404 and r.json()["error"] == "NOT_FOUND"

    used = live.client.post(
        "/v1/links", json={"longUrl": "https://example.com/once", "maxClicks": 1},
        headers=live.owner,
    ).json()["key"]  # fmt: skip
    assert live.client.get(f"/{used}", follow_redirects=False).status_code == 302
    r = live.client.get(f"/{used}", headers=BROWSER)
    assert r.status_code == 410 and "has expired" in r.text
    assert live.client.get(f"/{used}", headers=API_CLIENT).json()["error"] == "LINK_EXPIRED"

    gone = live.create("https://example.com/gone")
    assert live.client.delete(f"/v1/links/{gone}", headers=live.owner).status_code == 200
    r = live.client.get(f"/{gone}", headers=BROWSER)
    assert r.status_code == 410 and "was deleted" in r.text
