"""The shortener page's domain picker (issue 27 item 3), through ``streamlit.testing``
against the real API with two short domains: the same alias made on two domains, its
short URL on the chosen domain, and a case variant on the same domain refused."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest
from dashboard_testing import ok, page_text
from streamlit.testing.v1 import AppTest

PAGE = "views/shortener.py"


@pytest.fixture
def two_domains(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOKUP_SHORTENER_DOMAINS", "go.example")
    monkeypatch.setenv("LOOKUP_ALLOWED_HOSTS", "127.0.0.1,go.example")


def _shorten(at: AppTest, url: str, alias: str, domain: str) -> AppTest:
    at.text_input(key="create-url").input(url)
    at.text_input(key="create-alias").input(alias)
    at.selectbox(key="create-domain").select(domain)
    return at.button(key="create-submit").click().run()


def test_pick_a_domain_for_a_new_link(
    two_domains: None, threaded_api: str, visit: Callable[[str, str], AppTest]
) -> None:
    at = visit(PAGE, threaded_api)
    picker = at.selectbox(key="create-domain")
    default = picker.options[0]  # the public base URL's host
    assert picker.options == [default, "go.example"] and picker.value == default

    ok(_shorten(at, "https://example.com/go-side", "launch-day", "go.example"))
    assert "http://go.example/launch-day" in page_text(at)
    ok(_shorten(at, "https://example.com/home-side", "launch-day", default))
    assert f"http://{default}/launch-day" in page_text(at)
    ok(_shorten(at, "https://example.com/again", "LAUNCH-DAY", "go.example"))
    assert "Not shortened" in page_text(at) and "already taken" in page_text(at)

    with httpx.Client(base_url=threaded_api) as client:  # each short URL on its own domain
        on_go = client.get("/Launch-Day", headers={"Host": "go.example"}, follow_redirects=False)
        home = client.get("/Launch-Day", follow_redirects=False)
    assert on_go.headers["location"] == "https://example.com/go-side"
    assert home.headers["location"] == "https://example.com/home-side"
