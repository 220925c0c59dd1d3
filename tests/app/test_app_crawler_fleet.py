"""The crawler page's *Crawler fleet* panel, through ``streamlit.testing``, on real servers.

The panel starts its own PostgreSQL, etcd and three ``lookup crawl-worker`` processes over
a small sandbox web; the test waits for every partition to be held, kills a worker from
the page, waits for its partitions to be held by the others, reads the politeness
timeline and its count (from the sandbox's own log) and stops the fleet from the page.
A page reloaded while it runs (a new session) finds the fleet again. On the way it
pauses and resumes a host through the panel's control form and reads both commands back
from the fleet's store, each acknowledged by every worker.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import streamlit as st
from dashboard_testing import HOME, RUN_TIMEOUT, free_port, lab, ok, page_text
from streamlit.testing.v1 import AppTest

from lookup.crawler import Sandbox, SandboxConfig
from lookup.crawler.controls import open_crawl_controls
from lookup.crawler.session import stop_children
from lookup.labs import available

PAGE = "views/crawler.py"
#: The Controls tab's health columns, the owning worker and its lease's epoch first.
HEALTH_COLUMNS = [
    "Host", "Worker", "Epoch", "Control", "Block check", "Requests", "Pages", "Errors", "429/503",
    "Back-off (s)", "robots.txt", "Robots refused", "Trap cuts", "Budget used", "Queued",
    "Next allowed in (s)",
]  # fmt: skip


@pytest.fixture(autouse=True)
def fresh_page_state() -> Iterator[None]:
    st.cache_resource.clear()
    st.cache_data.clear()
    yield  # the fleet a test started is stopped by tests/app/conftest.py
    stop_children()
    st.cache_resource.clear()
    st.cache_data.clear()


@pytest.fixture(scope="module")
def web() -> Iterator[Sandbox]:
    # The hung host and the stall page wait well past the panel's 2 s fetch timeout:
    # with a tie (small()'s 2 s) the sandbox sometimes finished the answer just as
    # the worker gave up on it, logged it as answered, and judged the worker's next
    # request by a pause counted from a moment the worker never saw (CI: 1 in 369).
    sandbox = Sandbox(SandboxConfig.small(crawl_delay=0.3, hang_seconds=8.0)).start()
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


def _health(at: AppTest):  # type: ignore[no-untyped-def]
    found = [d.value for d in at.dataframe if "Robots refused" in d.value.columns]
    return found[0] if found else None


def _timeline(at: AppTest) -> str:
    specs = [c.proto.spec for c in at.get("plotly_chart")]
    return next((s for s in specs if "seconds since the fleet started" in s), "")


def _issue(at: AppTest, command: str, target: str) -> AppTest:
    at.selectbox(key="fleet-control-command").set_value(command)
    at.text_input(key="fleet-control-target").input(target)
    submit = next(b for b in at.button if b.label == "Issue")
    return ok(submit.click().run())


def _store_log(at: AppTest) -> list[tuple[str, str]]:
    run = lab("crawl-fleet")
    assert run is not None
    controls = open_crawl_controls(run.store_url)
    try:
        return [(r.command, r.target) for r in controls.since(0)]
    finally:
        controls.close()


def _applied_by_all(version: int) -> Callable[[AppTest], bool]:
    def check(at: AppTest) -> bool:
        text = page_text(at)
        return all(f"{w} up to v{version} " in text for w in ("w1", "w2", "w3"))

    return check


def test_start_a_fleet_kill_a_worker_and_watch_its_partitions_move(
    web: Sandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    if not available("crawl-fleet"):
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

    # One run: its health table names owners from the same coordinator read as its worker
    # table (in a later run a partition may be between owners while the fleet rebalances).
    _until(at, "three workers holding all 64 partitions, and the per-host health table",
           lambda at: all_held(at) and _health(at) is not None)  # fmt: skip
    # a reload mid-drill: a new session of the dashboard finds the fleet running
    again = ok(
        ok(AppTest.from_file(HOME, default_timeout=RUN_TIMEOUT).run()).switch_page(PAGE).run()
    )
    reloaded = _workers(again)
    assert reloaded is not None and list(reloaded["Worker"]) == ["w1", "w2", "w3"]
    assert not again.button(key="fleet-stop").disabled
    health = _health(at)
    assert list(health.columns) == HEALTH_COLUMNS
    assert set(health["Worker"]) <= {"w1", "w2", "w3"} and health["Epoch"].min() > 0
    assert "docs.sandbox.test" in {h.split(":")[0] for h in health["Host"]}

    at = _issue(at, "pause-host", "docs.sandbox.test")
    assert "Control v1 issued to the fleet: pause-host docs.sandbox.test" in page_text(at)
    assert _store_log(at) == [("pause-host", "docs.sandbox.test")]
    _until(at, "every worker applying the pause", _applied_by_all(1), timeout=30)
    paused = _health(at)
    docs = paused[paused["Host"].str.startswith("docs.sandbox.test")]
    assert set(docs["Control"]) == {"paused"}
    at = _issue(at, "resume-host", "docs.sandbox.test")
    assert _store_log(at)[-1] == ("resume-host", "docs.sandbox.test")
    _until(at, "every worker applying the resume", _applied_by_all(2), timeout=30)
    assert "Controls in force** (version 2): none" in page_text(at)
    at = _issue(at, "block-host", "no host")
    assert "Not issued: " in page_text(at) and len(_store_log(at)) == 2

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
    timeline = _timeline(at)
    assert "docs.sandbox.test" in timeline and "w1 killed" in timeline
    assert at.button(key="fleet-kill-w1").disabled
    ok(at.button(key="fleet-stop").click().run())
    assert at.button(key="fleet-stop").disabled


_EXIT_WITH_A_FLEET = """
import json, sys, time
from streamlit.testing.v1 import AppTest
sys.path.insert(0, sys.argv[2])
at = AppTest.from_file(sys.argv[1], default_timeout=120).run()
at = at.switch_page("views/crawler.py").run()
at.button(key="fleet-start").click().run()
from common import labs
pids = labs().get("crawl-fleet").pids()  # PostgreSQL, etcd, the workers
print(json.dumps(pids), flush=True)
"""  # then the interpreter exits with the fleet running


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has exited


def test_a_dashboard_that_exits_with_a_fleet_running_leaves_no_process_behind(
    web: Sandbox, tmp_path: Path
) -> None:
    """PostgreSQL daemonises under ``pg_ctl``: unless the page stops its fleet at exit, a
    dashboard that exits (Ctrl-C on ``make run``) leaves PostgreSQL and etcd running."""
    if not available("crawl-fleet"):
        pytest.skip("needs etcd and PostgreSQL")
    import json
    import subprocess
    import sys

    from lookup import settings

    env = settings.child_environ(LOOKUP_SANDBOX_URL=web.control_url,
                                 LOOKUP_DATA_DIR=str(tmp_path / "data"),
                                 LOOKUP_API_URL=f"http://127.0.0.1:{free_port()}")  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-c", _EXIT_WITH_A_FLEET, str(HOME), str(HOME.parent)],
        env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    pids = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(pids) == 5  # PostgreSQL, etcd, three workers
    left = [p for p in pids if _alive(p)]
    for pid in left:  # so a failure here leaks nothing either
        os.kill(pid, signal.SIGKILL)
    assert left == []
