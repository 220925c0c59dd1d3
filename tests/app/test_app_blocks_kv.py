"""Building blocks → Hash ring & quorum, through ``streamlit.testing``.

Add and remove ring nodes and read how many keys moved; start the page's own node
processes, kill one, run a workload at R=W=2 and read the checker's verdict (no stale
reads), restart it, partition two nodes, then stop everything the page started.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from dashboard_testing import RUN_TIMEOUT, lab
from streamlit.testing.v1 import AppTest


def _script() -> None:
    from ringquorum import render

    render()


def _ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def _button(at: AppTest, key: str):  # type: ignore[no-untyped-def]
    return at.button(key=key)


@pytest.fixture
def page(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[AppTest]:
    monkeypatch.setenv("LOOKUP_DATA_DIR", str(tmp_path / "data"))  # its labs' state file
    at = _ok(AppTest.from_function(_script, default_timeout=RUN_TIMEOUT).run())
    yield at  # the nodes it started are stopped by tests/app/conftest.py


def _metric(at: AppTest, prefix: str) -> str:
    found = [m.value for m in at.metric if m.label.startswith(prefix)]
    assert found, [m.label for m in at.metric]
    return found[0]


def test_the_ring_moves_about_one_in_n_keys(page: AppTest) -> None:
    assert _metric(page, "Nodes") == "10"
    _ok(_button(page, "kv-ring-add").click().run())
    assert _metric(page, "Nodes") == "11"
    moved = float(_metric(page, "Keys moved").rstrip("%")) / 100
    assert 0.05 < moved < 0.14  # ~1/11; hash mod N would move ~10/11
    delta = [m for m in page.metric if m.label.startswith("Keys moved")][0].delta
    assert "hash mod N would move 9" in delta
    _ok(_button(page, "kv-ring-remove").click().run())
    assert _metric(page, "Nodes") == "10"


def test_kill_run_restart_partition_stop(page: AppTest) -> None:
    _ok(_button(page, "kv-start").click().run())
    cluster = lab("kv-cluster").cluster
    page.selectbox(key="kv-victim").set_value("n2")
    _ok(_button(page, "kv-kill").click().run())
    assert not cluster.running("n2")
    page.number_input(key="kv-ops").set_value(60)
    _ok(_button(page, "kv-run").click().run())
    last = page.session_state["kv-last"]
    assert last["stale reads"] == 0 and last["puts ok"] == last["puts"]
    nodes = [d.value for d in page.dataframe if "process" in d.value.columns][0]
    assert nodes.set_index("node").loc["n2", "process"] == "killed"
    _ok(_button(page, "kv-restart").click().run())
    assert cluster.running("n2")
    page.selectbox(key="kv-other").set_value("n3")
    _ok(_button(page, "kv-partition").click().run())
    assert cluster.blocked["n2"] == {"n3"}
    _ok(_button(page, "kv-heal").click().run())
    assert cluster.blocked["n2"] == set()
    _ok(_button(page, "kv-cart").click().run())
    assert len(page.session_state["kv-cart-result"]["siblings"]) == 2
    _ok(_button(page, "kv-stop").click().run())
    assert lab("kv-cluster") is None and not cluster.procs
