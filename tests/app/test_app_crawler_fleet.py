"""The crawler page's *Crawler fleet* panel, through ``streamlit.testing``, on real servers.

The panel starts its own PostgreSQL, etcd and three ``lookup crawl-worker`` processes over
a small sandbox web; the test waits for every partition to be held, kills a worker from
the page, waits for its partitions to be held by the others, reads the politeness line
(from the sandbox's own log) and stops the fleet from the page.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import streamlit as st
from dashboard_testing import HOME, RUN_TIMEOUT, free_port, ok, page_text
from streamlit.testing.v1 import AppTest

from lookup.crawler import Sandbox, SandboxConfig
from lookup.crawler.session import stop_children
from lookup.kit.etcd import etcd_available
from lookup.kit.pgserver import postgres_available

PAGE = "views/crawler.py"


@pytest.fixture(autouse=True)
def fresh_page_state() -> Iterator[None]:
    st.cache_resource.clear()
    st.cache_data.clear()
    yield
    from crawlfleet import fleet_runtime

    run = fleet_runtime().run
    if run is not None:
        run.stop()
    stop_children()
    st.cache_resource.clear()
    st.cache_data.clear()


@pytest.fixture(scope="module")
def web() -> Iterator[Sandbox]:
    sandbox = Sandbox(SandboxConfig.small(crawl_delay=0.3)).start()
    try:
        yield sandbox
    finally:
        sandbox.stop()


def _until(at: AppTest, what: str, check: Callable[[AppTest], Any], timeout: float = 90) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ok(at.run())
        got = check(at)
        if got:
            return got
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}: {page_text(at)[-800:]}")


def _workers(at: AppTest):  # type: ignore[no-untyped-def]
    found = [d.value for d in at.dataframe if "Partitions held" in d.value.columns]
    return found[0] if found else None


def test_start_a_fleet_kill_a_worker_and_watch_its_partitions_move(
    web: Sandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    if not (etcd_available() and postgres_available()):
        pytest.skip("needs etcd and PostgreSQL")
    monkeypatch.setenv("LOOKUP_SANDBOX_URL", web.control_url)
    monkeypatch.setenv("LOOKUP_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("LOOKUP_API_URL", f"http://127.0.0.1:{free_port()}")
    at = AppTest.from_file(HOME, default_timeout=RUN_TIMEOUT).run()
    at = ok(at.switch_page(PAGE).run())
    assert "Crawler fleet" in page_text(at) or at.button(key="fleet-start")
    ok(at.button(key="fleet-start").click().run())

    def all_held(at: AppTest) -> bool:
        table = _workers(at)
        return (
            table is not None
            and list(table["Process"]) == ["running"] * 3
            and int(table["Partitions held"].sum()) == 64
            and all(table["Partitions held"] > 0)
        )

    _until(at, "three workers holding all 64 partitions", all_held)
    table = _workers(at)
    held_by_w1 = int(table.loc[table["Worker"] == "w1", "Partitions held"].iloc[0])
    ok(at.button(key="fleet-kill-w1").click().run())

    def moved(at: AppTest) -> bool:
        table = _workers(at)
        if table is None:
            return False
        w1 = table.loc[table["Worker"] == "w1"].iloc[0]
        return (
            w1["Process"] == "killed (SIGKILL)"
            and int(table["Partitions held"].sum()) == 64
            and int(w1["Partitions held"]) == 0
        )

    _until(at, "w1's partitions held by the others", moved, timeout=60)
    text = page_text(at)
    assert "w1 killed" in text and "all held again" in text
    assert held_by_w1 > 0
    assert "0 too close to the one before on the same host" in text
    assert at.button(key="fleet-kill-w1").disabled
    ok(at.button(key="fleet-stop").click().run())
    assert at.button(key="fleet-stop").disabled
