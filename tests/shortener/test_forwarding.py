"""Query-string and extra-path forwarding (issue 27, item 1), over a real ``lookup serve``.

As Shlink does by default, ``GET /{key}?utm_source=x`` keeps the visitor's query on the
destination, merged with the destination's own (the visitor's value wins a conflict);
``forwardQuery: false`` turns it off for one link. Extra-path forwarding
(``/{key}/more/path`` → destination path + ``/more/path``) is an opt-in per link
(``forwardPath: true``, Shlink's ``REDIRECT_APPEND_EXTRA_PATH`` per link); without it such
a path is a 404.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.shortener.urls import forward_onto
from tests.conftest import running_lookup


class Live:
    def __init__(self, url: str) -> None:
        self.client = httpx.Client(base_url=url, timeout=30)
        token = self.client.post("/v1/tokens").json()["token"]
        self.owner = {"Authorization": f"Bearer {token}"}

    def create(self, long_url: str, **fields: Any) -> str:
        body = {"longUrl": long_url, **fields}
        r = self.client.post("/v1/links", json=body, headers=self.owner)
        assert r.status_code == 201, r.text
        return str(r.json()["key"])

    def location(self, target: str) -> str:
        r = self.client.get(target, follow_redirects=False)
        assert r.status_code in (301, 302), (target, r.status_code, r.text)
        return r.headers["location"]


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    data_dir = tmp_path_factory.mktemp("forwarding") / "data"
    with running_lookup(data_dir, {"LOOKUP_SHORTENER_RATE_OWNER": "100000/1"}) as url:
        yield Live(url)


def test_the_visitors_query_is_merged_into_the_destinations(live: Live) -> None:
    key = live.create("https://example.com/landing?ref=site&x=1#top")
    assert live.location(f"/{key}") == "https://example.com/landing?ref=site&x=1#top"
    assert (
        live.location(f"/{key}?utm_source=mail&ref=short")
        == "https://example.com/landing?x=1&utm_source=mail&ref=short#top"
    )
    plain = live.create("https://example.com/")
    assert live.location(f"/{plain}?a=1&a=2&b=") == "https://example.com/?a=1&a=2&b="


def test_a_hostile_query_is_encoded_never_raw(live: Live) -> None:
    key = live.create("https://example.com/p")
    got = live.location(f"/{key}?q=%0D%0ASet-Cookie:x&u=%E2%9C%93&b=a%5Cb&s=%20x")
    assert got == "https://example.com/p?q=%0D%0ASet-Cookie%3Ax&u=%E2%9C%93&b=a%5Cb&s=+x"
    r = live.client.get(f"/{key}?x=%ff", follow_redirects=False)
    assert r.status_code == 302 and r.headers["location"].isascii()


def test_forward_query_is_a_per_link_choice(live: Live) -> None:
    key = live.create("https://example.com/fixed?only=this", forwardQuery=False)
    assert live.location(f"/{key}?utm_source=x") == "https://example.com/fixed?only=this"
    info = live.client.get(f"/v1/links/{key}", headers=live.owner).json()
    assert info["forwardQuery"] is False and info["forwardPath"] is False
    patch = {"forwardQuery": True}
    r = live.client.patch(f"/v1/links/{key}", json=patch, headers=live.owner)
    assert r.status_code == 200 and r.json()["forwardQuery"] is True
    assert live.location(f"/{key}?utm_source=x") == (
        "https://example.com/fixed?only=this&utm_source=x"
    )
    bad = live.client.post(
        "/v1/links", json={"longUrl": "https://example.com/", "forwardQuery": "yes"},
        headers=live.owner,
    )  # fmt: skip
    assert bad.status_code == 400 and bad.json()["error"] == "INVALID_FORWARD"


def test_an_extra_path_is_forwarded_only_when_the_link_asks(live: Live) -> None:
    on = live.create("https://example.com/docs/", forwardPath=True)
    assert live.location(f"/{on}/guide/intro?x=1") == "https://example.com/docs/guide/intro?x=1"
    assert live.location(f"/{on}") == "https://example.com/docs/"
    root = live.create("https://example.com", forwardPath=True)
    assert live.location(f"/{root}/a%20b/c") == "https://example.com/a%20b/c"
    off = live.create("https://example.com/docs/")
    r = live.client.get(f"/{off}/guide/intro", follow_redirects=False)
    assert r.status_code == 404 and r.json()["error"] == "NOT_FOUND"
    missing = live.client.get("/NoSuchKey12/guide", follow_redirects=False)
    assert missing.status_code == 404
    # the management API's own paths are never read as a key with an extra path
    assert live.client.get("/v1/links", headers=live.owner).status_code == 200


_TEXT = st.text(st.characters(codec="utf-8"), max_size=12)


@settings(max_examples=300, deadline=None)
@given(
    dest=st.lists(st.tuples(_TEXT, _TEXT), max_size=4),
    visitor=st.lists(st.tuples(_TEXT, _TEXT), max_size=4),
    extra=st.none() | st.text(st.characters(codec="utf-8"), max_size=16),
)
def test_forward_onto_against_a_dict_merge(
    dest: list[tuple[str, str]], visitor: list[tuple[str, str]], extra: str | None
) -> None:
    """Whatever the visitor sends: the host stays, the header is printable ASCII, and the
    parameters are a plain merge (the visitor's values for the names it sent)."""
    long_url = "https://example.com/base?" + urlencode(dest)
    query = urlencode(visitor).encode()
    got = forward_onto(long_url, query, quote(extra) if extra else extra)
    assert urlsplit(got).netloc == "example.com"
    assert all(0x21 <= ord(c) < 0x7F for c in got), got
    pairs = parse_qsl(urlsplit(got).query, keep_blank_values=True)
    sent = {n for n, _ in visitor}
    expected = [(n, v) for n, v in dest if n not in sent] + list(visitor)
    assert pairs == expected
    if extra:
        assert unquote(urlsplit(got).path) == "/base/" + extra
