"""The crawler page's *Rendering* tab and the crawl form's render budget (``streamlit.testing``).

A crawl of the sandbox's app host (a single-page app) under the dashboard's data
directory: with Chromium, the tab shows the share rendered, each rendered page and the
renders' own requests; with no browser, it says rendering was unavailable. The form's
render budget reaches the crawl it starts.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import streamlit as st
from dashboard_testing import HOME, RUN_TIMEOUT, free_port, metric_value, ok, page_text
from streamlit.testing.v1 import AppTest

from lookup.crawler import CrawlConfig, Sandbox, SandboxConfig, TrapPolicy, crawl
from lookup.crawler.session import stop_children

PAGE = "views/crawler.py"
RENDER_TAB = ":material/web: Rendering"
CHROMIUM = Path("/usr/bin/chromium")


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
    sandbox = Sandbox(SandboxConfig.small()).start()
    try:
        yield sandbox
    finally:
        sandbox.stop()


def _crawl(web: Sandbox, out: Path, browser: Path) -> None:
    crawl(
        CrawlConfig(
            out, seeds=[web.url("app", "/")], hosts=web.hosts(), strict_hosts=True,
            min_delay=0.02, delay_factor=1.0, timeout=3.0, connect_timeout=1.0,
            max_seconds=120, concurrency=4, traps=TrapPolicy(host_budget=30, max_depth=4),
            render_budget=20, render_browser=browser,
        )
    )  # fmt: skip


def _open(monkeypatch: pytest.MonkeyPatch, web: Sandbox, data: Path, tab: bool = True) -> AppTest:
    monkeypatch.setenv("LOOKUP_SANDBOX_URL", web.control_url)
    monkeypatch.setenv("LOOKUP_DATA_DIR", str(data))
    monkeypatch.setenv("LOOKUP_API_URL", f"http://127.0.0.1:{free_port()}")  # no API
    at = AppTest.from_file(HOME, default_timeout=RUN_TIMEOUT).run()
    ok(at.switch_page(PAGE).run())
    if tab:
        at.session_state["crawl-tab"] = RENDER_TAB  # only the open tab is drawn
    return ok(at.run())


def _table(at: AppTest, *columns: str) -> Any:
    found = [d.value for d in at.dataframe if set(columns) <= set(d.value.columns)]
    assert len(found) == 1, (columns, [list(d.value.columns) for d in at.dataframe])
    return found[0]


def test_the_tab_shows_what_was_rendered(
    web: Sandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    if not CHROMIUM.exists():
        if os.environ.get("LOOKUP_REQUIRE_BROWSER"):
            pytest.fail(f"{CHROMIUM} is missing and LOOKUP_REQUIRE_BROWSER is set")
        pytest.skip(f"{CHROMIUM} is missing")
    _crawl(web, tmp_path / "data" / "crawls" / "r1", CHROMIUM)
    at = _open(monkeypatch, web, tmp_path / "data")
    truth = web.manifest()["rendering"]
    assert metric_value(at, "Pages rendered") == str(len(truth["script_built"]))
    assert metric_value(at, "Share rendered").endswith("%")
    pages = _table(at, "URL", "Title", "Links found")
    assert set(pages["URL"]) == set(truth["script_built"])
    requests = _table(at, "URL", "Status", "Pause after (s)")
    assert web.url("app", "/static/app.js") in set(requests["URL"])
    assert all(requests["Pause after (s)"] >= 0.02)
    counts = _table(at, "What", "Pages")
    refused = dict(zip(counts["What"], counts["Pages"], strict=True))
    assert refused["requests refused: robots.txt"] >= 1
    assert refused["requests refused: another host"] >= 1


def test_without_a_browser_the_tab_says_so(
    web: Sandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _crawl(web, tmp_path / "data" / "crawls" / "r1", tmp_path / "no-chromium")
    at = _open(monkeypatch, web, tmp_path / "data")
    text = page_text(at)
    assert "Rendering was unavailable (no browser at" in text
    assert metric_value(at, "Pages rendered") == "0"
    assert "No page rendered in this crawl." in text


def test_the_form_sends_the_render_budget(
    web: Sandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    at = _open(monkeypatch, web, tmp_path / "data", tab=False)
    started: list[Any] = []
    crawlruns = sys.modules["crawlruns"]
    monkeypatch.setattr(crawlruns, "start_crawl", lambda probe, s: started.append(s))
    at.number_input(key="crawl-render-budget").set_value(15)
    submit = next(b for b in at.button if b.label == "Start crawl")
    ok(submit.click().run())
    assert len(started) == 1 and started[0].render_budget == 15
    assert "--render-budget" in started[0].argv()
