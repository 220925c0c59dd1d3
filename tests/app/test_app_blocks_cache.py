"""Building blocks → Distributed cache, through ``streamlit.testing``: replay a trace through
every eviction policy; start a throw-away redis-server and run the stampede and the cold
restart on it; start a throw-away Redis Cluster, kill -9 a master from the page, read the
failover figures, and stop everything the tab started."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from dashboard_testing import HOME, RUN_TIMEOUT, lab
from streamlit.testing.v1 import AppTest

from lookup import settings
from lookup.labs import available

PAGE = "views/blocks.py"


def _ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def _frame(at: AppTest, column: str):  # type: ignore[no-untyped-def]
    found = [d.value for d in at.dataframe if column in d.value.columns]
    assert found, (column, [list(d.value.columns) for d in at.dataframe])
    return found[0]


@pytest.fixture
def page(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[AppTest]:
    monkeypatch.setenv("LOOKUP_API_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("LOOKUP_DATA_DIR", str(tmp_path / "data"))  # its labs' state file
    at = AppTest.from_file(HOME, default_timeout=RUN_TIMEOUT * 2).run()
    _ok(at.switch_page(PAGE).run())
    at.session_state["blocks-tab"] = "Distributed cache"  # the page renders the open tab only
    _ok(at.run())
    yield at  # the servers it started are stopped by tests/app/conftest.py


def test_eviction_explorer_replays_a_trace(page: AppTest) -> None:
    page.select_slider(key="cache-length").set_value(10_000)
    _ok(page.button(key="cache-replay").click().run())
    table = _frame(page, "Belady (optimal)")
    assert list(table["cache size"]) == [25, 50, 100, 200, 400, 800]
    for policy in ("LRU", "LFU", "FIFO", "sampled LRU", "W-TinyLFU"):
        assert (table[policy] <= table["Belady (optimal)"] + 1e-9).all()
        assert table[policy].is_monotonic_increasing or policy == "FIFO"
    assert any(c.proto.spec for c in page.get("plotly_chart"))


def _need_servers() -> None:
    if available("redis-cluster"):
        return
    if settings.get("require_servers"):
        pytest.fail("redis-server/redis-cli missing and LOOKUP_REQUIRE_SERVERS is set")
    pytest.skip("redis-server/redis-cli missing")


def test_stampede_and_cold_restart_on_a_redis_the_tab_started(page: AppTest) -> None:
    _need_servers()
    _ok(page.button(key="cache-redis-start").click().run())
    assert lab("redis", "cache") is not None
    page.select_slider(key="cache-callers").set_value(100)
    _ok(page.button(key="cache-stampede").click().run())
    rows = {r["protection"]: r for r in _frame(page, "protection").to_dict("records")}
    assert rows["single-flight"]["store loads"] == 1 and rows["lease"]["store loads"] == 1
    assert rows["unprotected"]["store loads"] > 1
    _ok(page.button(key="cache-restart").click().run())
    restart = {r["restart"]: r for r in _frame(page, "restart").to_dict("records")}
    assert restart["warmed"]["first-second loads"] < restart["cold"]["first-second loads"]
    server = lab("redis", "cache").server
    _ok(page.button(key="cache-redis-stop").click().run())
    assert lab("redis", "cache") is None and server.proc is None


def test_cluster_failover_drill_from_the_page(page: AppTest) -> None:
    _need_servers()
    _ok(page.button(key="cache-cluster-start").click().run())
    cluster = lab("redis-cluster").cluster
    assert len(cluster.masters()) == 3
    _ok(page.button(key="cache-cluster-kill").click().run())
    labels = {m.label: m.value for m in page.metric}
    assert labels["Errors reaching the caller"] == "0"
    assert labels["Failover"].endswith(" s") and labels["Failover"] != "None s"
    assert int(labels["Reads answered as misses"].replace(",", "")) > 0
    assert len(cluster.masters()) == 3 and all(n.alive() for n in cluster.nodes)
    page.checkbox(key="cache-cluster-lag").check()
    _ok(page.button(key="cache-cluster-kill").click().run())
    report = page.session_state["cache-cluster-report"]
    assert report["replica lag (s)"] == 0.8 and report["errors reaching the caller"] == 0
    assert report["lost on the victim"] == report["acknowledged writes lost"]
    assert len(cluster.masters()) == 3 and all(n.alive() for n in cluster.nodes)
    _ok(page.button(key="cache-cluster-stop").click().run())
    assert lab("redis-cluster") is None
    assert not any(n.alive() for n in cluster.nodes)
