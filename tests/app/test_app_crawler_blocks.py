"""The Controls & host health tab shows hosts flagged by block detection and sets the
global ceiling (issue 28 item 17), through ``streamlit.testing`` and the real API.

A crawl of a sandbox whose shop starts answering 403, 429 and CAPTCHA pages: the tab
lists the shop as flagged for review with its refused share; ``set-delay *`` issued from
the form reaches the controls log as the global ceiling and shows on every host's row.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import streamlit as st
from dashboard_testing import HOME, RUN_TIMEOUT, ok, page_text
from streamlit.testing.v1 import AppTest

from lookup.crawler import Sandbox, SandboxConfig, crawl
from lookup.crawler.controls import controls_url, open_crawl_controls
from lookup.crawler.session import stop_children
from lookup.crawler.store import crawl_state_url
from tests.crawler.conftest import test_config
from tests.crawler.test_blocking import WALL_AFTER, WALL_HOST, BotWall

PAGE = "views/crawler.py"
CONTROLS_TAB = ":material/tune: Controls & host health"


@pytest.fixture(autouse=True)
def fresh_page_state() -> Iterator[None]:
    st.cache_resource.clear()
    st.cache_data.clear()
    yield
    stop_children()
    st.cache_resource.clear()
    st.cache_data.clear()


@pytest.fixture
def walled() -> Iterator[Sandbox]:
    web = Sandbox(SandboxConfig.small(crawl_delay=0.01)).start()
    address, handler = web.server.vhosts[WALL_HOST]
    web.server.vhosts[WALL_HOST] = (address, BotWall(handler, WALL_AFTER))
    try:
        yield web
    finally:
        web.stop()


def test_flagged_hosts_and_the_global_ceiling_on_the_page(
    walled: Sandbox, threaded_api: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    out = tmp_path / "data" / "crawls" / "c1"
    shop = walled.world.url("shop", "/")
    crawl(test_config(out, walled, seeds=[shop, walled.world.url("docs", "/")], max_seconds=4))
    monkeypatch.setenv("LOOKUP_SANDBOX_URL", walled.control_url)
    monkeypatch.setenv("LOOKUP_API_URL", threaded_api)
    at = AppTest.from_file(HOME, default_timeout=RUN_TIMEOUT).run()
    ok(at.switch_page(PAGE).run())
    at.session_state["crawl-tab"] = CONTROLS_TAB
    at = ok(at.run())
    text = page_text(at)
    assert "1 host(s) flagged for review" in text, text[:2000]
    assert f"**{WALL_HOST}:" in text and "CAPTCHA" in text
    health = next(d.value for d in at.dataframe if "Block check" in d.value.columns)
    shop_row = health[[h.startswith(WALL_HOST) for h in health["Host"]]]
    assert list(shop_row["Block check"])[0].startswith("flagged:")

    at.selectbox(key="control-command").set_value("set-delay")
    at.text_input(key="control-target").input("*")
    at.number_input(key="control-delay").set_value(2.0)
    at.text_input(key="control-note").input("a publisher complained")
    at = ok(next(b for b in at.button if b.label == "Issue").click().run())
    text = page_text(at)
    assert "Control v1 issued: set-delay *" in text
    assert ":blue-badge[every host: 2 s]" in text
    controls = open_crawl_controls(controls_url(crawl_state_url(out)))
    try:
        log = controls.since(0)
    finally:
        controls.close()
    assert [(r.command, r.target, r.value) for r in log] == [("set-delay", "*", 2.0)]
    health = next(d.value for d in at.dataframe if "Block check" in d.value.columns)
    assert all("every host 2 s" in c for c in health["Control"])
