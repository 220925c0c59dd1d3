"""The Web crawler page, through ``streamlit.testing``, against a real sandbox web.

With no sandbox: a clear message and the offer to start one (which starts a real
``lookup sandbox`` child process). With one: start a crawl, watch it to the end,
then read its politeness check, duplicates, robots decisions and traps, and build
the search index from it. A damaged crawl file gives a message, never an exception.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import streamlit as st
from dashboard_testing import HOME, RUN_TIMEOUT, free_port
from streamlit.testing.v1 import AppTest

from lookup import settings
from lookup.crawler import Sandbox, SandboxConfig
from lookup.crawler.inspector import fetched_pages
from lookup.crawler.sandbox.sites import World
from lookup.crawler.session import list_crawls, read_snapshot, stop_children
from lookup.search.cached import CachedPages

PAGE = "views/crawler.py"


def _text(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption]
    parts += [t.value for t in at.title]
    for kind in ("error", "warning", "info", "success"):
        parts += [e.value for e in getattr(at, kind)]
    return "\n".join(parts)


def _ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def _metric(at: AppTest, label: str) -> str:
    found = [m.value for m in at.metric if m.label == label]
    assert len(found) == 1, (label, [m.label for m in at.metric])
    return found[0]


def _table(at: AppTest, *columns: str):  # type: ignore[no-untyped-def]
    """The one table on the page that has all of ``columns`` (tables carry no key here)."""
    found = [d.value for d in at.dataframe if set(columns) <= set(d.value.columns)]
    assert len(found) == 1, (columns, [list(d.value.columns) for d in at.dataframe])
    return found[0]


def _tab(at: AppTest, label: str) -> AppTest:
    """``at`` with the crawl's tab whose label ends with ``label`` open (only it is drawn)."""
    (full,) = [t.label for t in at.tabs if t.label.endswith(label)]
    at.session_state["crawl-tab"] = full
    return _ok(at.run())


def _open(monkeypatch: pytest.MonkeyPatch, sandbox_url: str, data: Path) -> AppTest:
    monkeypatch.setenv("LOOKUP_SANDBOX_URL", sandbox_url)
    monkeypatch.setenv("LOOKUP_DATA_DIR", str(data))
    monkeypatch.setenv("LOOKUP_API_URL", f"http://127.0.0.1:{free_port()}")  # no API
    at = AppTest.from_file(HOME, default_timeout=RUN_TIMEOUT).run()
    return _ok(at.switch_page(PAGE).run())


@pytest.fixture(autouse=True)
def fresh_page_state() -> Iterator[None]:
    """The page keeps its child processes in a resource cache: start and end clean."""
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


def test_without_a_sandbox_the_page_offers_to_start_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    at = _open(monkeypatch, dead, tmp_path / "data")
    text = _text(at)
    assert "Web crawler" in text and "No sandbox web" in text and dead in text
    assert "nothing is listening there" in text and "make run" in text
    assert "No crawl yet" in text
    assert at.button(key="crawl-start").disabled

    _ok(at.button(key="start-sandbox").click().run())
    text = _text(at)
    assert "Sandbox web up" in text and "started by this page" in text
    assert not at.button(key="crawl-start").disabled
    hosts = _table(at, "Role")
    assert "docs.sandbox.test" in set(hosts["Host"]) and "hub.sandbox.test" in set(hosts["Host"])
    assert len(hosts) == len(World.HOSTS)  # every host of the sandbox web

    _ok(at.button(key="stop-sandbox").click().run())
    assert "No sandbox web" in _text(at)


def test_crawl_watch_inspect_and_index(
    web: Sandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    at = _open(monkeypatch, web.control_url, data)
    assert "Sandbox web up" in _text(at) and web.control_url in _text(at)
    # Bounded by pages, not seconds: how far a crawl gets in ten seconds depends on how
    # busy the machine is, while its first 400 pages of the small sandbox reach every
    # host, its traps, soft 404s and near-duplicates on any machine. The time bound is
    # the form's largest, a backstop that a working crawl never reaches.
    at.slider(key="crawl-seconds").set_value(120)
    at.number_input(key="crawl-pages").set_value(400)
    at.select_slider(key="crawl-min-delay").set_value(0.0)
    at.select_slider(key="crawl-factor").set_value(0.0)
    _ok(at.button(key="crawl-start").click().run())
    assert at.button(key="crawl-start").disabled  # one crawl at a time
    deadline = time.monotonic() + 300  # the crawl stops itself; this only catches a hang
    seen_running = False
    next_requests: set[str] = set()
    while "Finished" not in _text(at):
        assert time.monotonic() < deadline, _text(at)
        seen_running |= "Crawling" in _text(at) or "starting" in _text(at)
        live = [d.value for d in at.dataframe if "Next request" in d.value.columns]
        if live:  # the frontier's own ready times, while the crawl runs
            next_requests |= set(live[0]["Next request"])
        time.sleep(1.0)
        _ok(at.run())
    assert seen_running
    if next_requests:
        assert {"now", "robots.txt first", "nothing queued"} | {
            v for v in next_requests if v.startswith("in ") or v.startswith("parked")
        } >= next_requests
    (crawl_dir,) = list_crawls(data / "crawls")
    snap = read_snapshot(crawl_dir)
    assert _metric(at, "Pages fetched") == f"{snap.pages:,}" and snap.pages > 50
    assert _metric(at, "Duplicates") == f"{snap.duplicates_total:,}"
    assert _metric(at, "Blocked by robots") == f"{snap.blocked:,}"
    hosts = _table(at, "Last pause (s)")
    assert len(hosts) == len(snap.hosts) >= 14  # 14 names, docs over http and https
    assert "docs.sandbox.test (https)" in set(hosts["Host"])
    assert set(hosts["Budget used"]) <= {f"{h.budget_used} of 200" for h in snap.hosts}
    assert "crawl cycle 1" in _text(at)

    # Politeness, judged from the sandbox's log.
    assert "Politeness checked from the server's side" in _text(at)
    gaps = _table(at, "Too close")
    assert gaps["Too close"].sum() == 0 and gaps["Requests"].sum() == snap.requests

    # The dedup inspector: a near-duplicate pair, side by side.
    _tab(at, "Duplicates")
    assert _metric(at, "Exact duplicates") == f"{snap.duplicates.get('exact', 0):,}"
    assert at.segmented_control(key="dedup-mode").value == "near-duplicates"
    distance = _metric(at, "SimHash distance")
    assert distance.endswith("of 64 bits")
    assert "The crawler's verdict" in _text(at)
    left = at.selectbox(key="pair-left").value
    assert "news.sandbox.test" in left and "/story/" in left  # the original
    assert at.selectbox(key="pair-right").value != left
    # Another cluster: the pair follows it.
    picker = at.selectbox(key="cluster-near")
    assert len(picker.options) >= 2
    other = next(i for i in range(len(picker.options)) if i != picker.index)
    _ok(picker.select_index(other).run())
    assert at.selectbox(key="pair-left").value != left
    _metric(at, "Shingle Jaccard")
    _ok(at.segmented_control(key="dedup-mode").set_value("exact duplicates").run())
    assert _metric(at, "Same text (SHA-256)") == "yes"
    assert _metric(at, "SimHash distance") == "0 of 64 bits"
    _ok(at.segmented_control(key="dedup-mode").set_value("any two pages").run())
    assert at.selectbox(key="any-left").value != at.selectbox(key="any-right").value

    # Soft 404s: every one the page lists was a planted soft 404, by the sandbox's log.
    assert _metric(at, "Soft 404s") == f"{snap.soft_404s:,}" and snap.soft_404s > 0
    _tab(at, "Soft 404s")
    soft = _table(at, "How it was caught")
    planted = {f"http://{e.host}:{e.port}{e.target}" for e in web.log.entries() if e.soft_404}
    assert len(soft) == snap.soft_404s and set(soft["URL"]) <= planted
    probes = _table(at, "Probe", "Answer")
    answers = dict(zip(probes["Host"], probes["Answer"], strict=True))
    assert answers.get("shop.sandbox.test") == answers.get("calendar.sandbox.test") == "HTTP 200"
    assert answers.get("docs.sandbox.test") == "HTTP 404"
    assert at.selectbox(key="soft404-page").value in set(soft["URL"])
    assert "The crawler's verdict" in _text(at)

    # robots.txt decisions and traps.
    _tab(at, "robots.txt")
    blocked = _table(at, "URL", "Decision")
    disallowed = set(web.manifest()["robots"]["disallowed"])
    assert set(blocked["URL"]) & disallowed
    assert any("fail closed" in d or "unreadable" in d for d in blocked["Decision"])
    maps = _table(at, "Sitemap or feed", "Result")  # issue 28: sitemap problems shown
    assert "read" in set(maps["Result"]) and len(maps) == len(set(maps["Sitemap or feed"]))
    _tab(at, "Traps")
    cuts = _table(at, "Why")
    assert len(cuts) == snap.traps_total and set(cuts["Rule"]) == set(snap.traps)

    # Every stored page, linked to its stored copy on the API (named by this crawl's directory).
    _tab(at, "Stored pages")
    pages = _table(at, "Page", "Stored copy")
    assert len(pages) == len(fetched_pages(crawl_dir)) > 50
    api = settings.get("api_url").rstrip("/")
    prefix = f"{api}/search/cached?url="
    assert all(
        u.startswith(prefix) and u.endswith(f"&crawl={crawl_dir.name}")
        for u in pages["Stored copy"]
    )
    stored = CachedPages(data / "crawls", lambda: crawl_dir)
    first = parse_qs(urlsplit(pages["Stored copy"].iloc[0]).query)
    assert 'id="fetched-at"' in stored.page(first["url"][0], first["crawl"][0])
    assert "exist only inside the sandbox web" in _text(at)

    # The search index, built from this crawl into the data directory, with its progress.
    _tab(at, "Search index")
    _ok(at.button(key="build-index").click().run())
    assert "Search index built" in _text(at)
    assert [s.label for s in at.status] == ["Indexing finished"]
    assert (data / "search" / "CURRENT").is_file()
    assert "is not running" in _text(at)  # no API in this test: it says so


def test_a_damaged_crawl_gives_a_message(
    web: Sandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    broken = data / "crawls" / "crawl-broken"
    broken.mkdir(parents=True)
    (broken / "crawl.sqlite").write_bytes(b"not a database at all " * 200)
    with pytest.raises(sqlite3.DatabaseError):
        read_snapshot(broken)
    at = _open(monkeypatch, web.control_url, data)
    assert "cannot be read" in _text(at)
