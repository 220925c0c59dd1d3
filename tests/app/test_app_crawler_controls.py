"""The crawler page's *Controls & host health* tab, through ``streamlit.testing``.

A finished crawl of the small sandbox under the dashboard's data directory, the real
API in a thread: a command issued from the form reaches the crawl's controls log
through ``POST /crawler/controls`` (admin token), shows as a control in force and in
the host's health row; with the API down the page says so and nothing is issued.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import streamlit as st
from dashboard_testing import HOME, RUN_TIMEOUT, free_port, ok, page_text
from streamlit.testing.v1 import AppTest

from lookup.crawler import Sandbox, SandboxConfig, crawl
from lookup.crawler.controls import controls_url, open_crawl_controls
from lookup.crawler.session import stop_children
from lookup.crawler.store import crawl_state_url
from tests.crawler.conftest import test_config

PAGE = "views/crawler.py"


@pytest.fixture(autouse=True)
def fresh_page_state() -> Iterator[None]:
    st.cache_resource.clear()
    st.cache_data.clear()
    yield
    stop_children()
    st.cache_resource.clear()
    st.cache_data.clear()


@pytest.fixture(scope="module")
def web() -> Iterator[Sandbox]:
    sandbox = Sandbox(SandboxConfig.small(crawl_delay=0.01)).start()
    try:
        yield sandbox
    finally:
        sandbox.stop()


CONTROLS_TAB = ":material/tune: Controls & host health"


def _open(monkeypatch: pytest.MonkeyPatch, web: Sandbox, api: str) -> AppTest:
    monkeypatch.setenv("LOOKUP_SANDBOX_URL", web.control_url)
    monkeypatch.setenv("LOOKUP_API_URL", api)
    at = AppTest.from_file(HOME, default_timeout=RUN_TIMEOUT).run()
    ok(at.switch_page(PAGE).run())
    at.session_state["crawl-tab"] = CONTROLS_TAB  # only the open tab is drawn
    return ok(at.run())


def _issue(at: AppTest, command: str, target: str) -> AppTest:
    at.selectbox(key="control-command").set_value(command)
    at.text_input(key="control-target").input(target)
    at.text_input(key="control-note").input("the site asked us to stop")
    submit = next(b for b in at.button if b.label == "Issue")
    return ok(submit.click().run())


def _health(at: AppTest):  # type: ignore[no-untyped-def]
    return next(d.value for d in at.dataframe if "Robots refused" in d.value.columns)


def test_block_a_host_from_the_page(
    web: Sandbox, threaded_api: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    out = tmp_path / "data" / "crawls" / "c1"
    crawl(test_config(out, web, max_pages=60))
    at = _open(monkeypatch, web, threaded_api)
    text = page_text(at)
    assert "Controls in force** (version 0): none" in text
    health = _health(at)
    assert "docs.sandbox.test" in {h.split(":")[0] for h in health["Host"]}
    assert health["Requests"].sum() > 0

    at = _issue(at, "block-host", "news.sandbox.test")
    text = page_text(at)
    assert "Control v1 issued: block-host news.sandbox.test" in text
    assert ":material/block: news.sandbox.test" in text
    controls = open_crawl_controls(controls_url(crawl_state_url(out)))
    try:
        log = controls.since(0)
    finally:
        controls.close()
    assert [(r.command, r.target, r.note) for r in log] == [
        ("block-host", "news.sandbox.test", "the site asked us to stop")
    ]
    health = _health(at)
    news = health[[h.startswith("news.sandbox.test") for h in health["Host"]]]
    assert list(news["Control"]) == ["blocked (news.sandbox.test)"]

    at = _issue(at, "block-host", "not a host!")
    assert "Not issued:" in page_text(at) and "BAD_HOST" in page_text(at)


def test_with_the_api_down_nothing_is_issued(
    web: Sandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("LOOKUP_DATA_DIR", str(tmp_path / "data"))
    out = tmp_path / "data" / "crawls" / "c1"
    crawl(test_config(out, web, max_pages=20))
    at = _open(monkeypatch, web, f"http://127.0.0.1:{free_port()}")
    at = _issue(at, "pause-crawl", "")
    assert "Not issued:" in page_text(at) and "cannot be reached" in page_text(at)
    controls = open_crawl_controls(controls_url(crawl_state_url(out)))
    try:
        assert controls.since(0) == []
    finally:
        controls.close()
