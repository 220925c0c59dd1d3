"""The search page's *Cluster* panel, through ``streamlit.testing``: shard servers as real
processes started by the dashboard's lab supervisor, a SIGSTOPped primary whose queries
are won by the hedge, a killed replica the queries go around, and a stop that leaves no
process; the lab's answers equal the in-process engine's, and a burst's tally keeps its
invariants (hypothesis)."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from dashboard_testing import lab, ok, page_text
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.types import ASGIApp
from streamlit.testing.v1 import AppTest

from lookup.labs.core import pid_alive
from lookup.labs.searchcluster import SearchClusterLab, tally
from lookup.search import SearchService, build_index
from lookup.server import create_app
from tests.search.corpus import CrawlWriter, stdlib_pages

PAGE = "views/search.py"
SEARCH = ["lookup.search.http:mount"]
KIND = "search-cluster"


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A two-shard index of 80 stdlib-docstring pages."""
    from lookup.search import manifest

    manifest.DURABLE = False
    root = tmp_path_factory.mktemp("search-cluster")
    CrawlWriter(root / "crawl").fetch(stdlib_pages(80))
    build_index(root / "crawl", root / "index", shards=2)
    manifest.DURABLE = True
    return root / "index"


@pytest.fixture
def search_api(
    index_dir: Path,
    tmp_path: Path,
    serve_asgi: Callable[[ASGIApp], str],
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[str, Path]:
    """The real API with the search engine over a copy of the index in the data dir."""
    shutil.copytree(index_dir, tmp_path / "data" / "search")
    monkeypatch.setenv("LOOKUP_DATA_DIR", str(tmp_path / "data"))
    return serve_asgi(create_app(tmp_path / "data", subsystems=SEARCH)), tmp_path / "data"


def _rows(at: AppTest) -> list[dict[str, Any]]:
    frames = [d.value for d in at.dataframe if "Replica" in d.value.columns]
    assert len(frames) == 1, [list(d.value.columns) for d in at.dataframe]
    return frames[0].to_dict("records")


def _row(at: AppTest, shard: int, replica: int) -> dict[str, Any]:
    return next(r for r in _rows(at) if r["Shard"] == shard and r["Replica"] == replica)


def _burst(at: AppTest) -> dict[str, Any]:
    ok(at.button(key="search-cluster-burst").click().run())
    return at.session_state["search.cluster.bursts"][-1]


def _same(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k != "tookMs"}


def test_the_cluster_panel_drives_real_shard_processes(
    search_api: tuple[str, Path], visit: Callable[[str, str], AppTest]
) -> None:
    url, data = search_api
    at = visit(PAGE, url)
    assert "Start the cluster" in [b.label for b in at.button]
    ok(at.button(key="search-cluster-start").click().run())
    cluster = lab(KIND)
    assert isinstance(cluster, SearchClusterLab), page_text(at)
    pids = list(cluster.pids())
    assert len(pids) == 4 and all(pid_alive(p) for p in pids)
    rows = _rows(at)
    oracle = SearchService(data / "search", realtime=False)
    oracle.reload()
    try:
        version = str(oracle.snapshot().version)
        assert {(r["Shard"], r["Replica"]) for r in rows} == {(0, 0), (0, 1), (1, 0), (1, 1)}
        assert all(r["State"] == "running" and r["Health"] == "ok" for r in rows)
        assert {r["Version"] for r in rows} == {version}

        # the lab's coordinator answers as the in-process engine does
        now = time.time()
        for q in ("file", "return value", '"return value"', "pyth* list"):
            got = cluster.service.search(q, now=now, suggest=False)
            assert _same(got) == _same(oracle.search(q, now=now, suggest=False)), q
    finally:
        oracle.close()

    healthy = _burst(at)
    assert healthy["queries"] > 0 and healthy["failed"] == 0
    assert "Last burst" in page_text(at)

    # SIGSTOP shard 0's primary: its queries are answered by the hedge to replica 1
    ok(at.button(key="search-cluster-stop-0-0").click().run())
    assert cluster.state(0, 0) == "stopped"
    row = _row(at, 0, 0)
    assert row["State"] == "stopped" and row["Health"] == "no answer"
    stopped = _burst(at)
    assert stopped["failed"] == 0
    assert stopped["hedges_fired"] > 0 and stopped["hedges_won"] > 0
    assert _row(at, 0, 1)["Won"] > 0 and _row(at, 0, 1)["Hedges to it"] > 0
    assert "hedge" in page_text(at)
    ok(at.button(key="search-cluster-cont-0-0").click().run())
    assert _row(at, 0, 0)["State"] == "running"

    # Kill shard 1's primary: it is gone, and queries still reach shard 1 via replica 1
    killed_pid = cluster.fleet.pid(1, 0)
    ok(at.button(key="search-cluster-kill-1-0").click().run())
    assert not pid_alive(killed_pid)
    assert _row(at, 1, 0)["State"] == "killed"
    assert at.button(key="search-cluster-kill-1-0").disabled
    after = _burst(at)
    assert after["failed"] == 0 and after["queries"] > 0
    assert _row(at, 1, 1)["Won"] > 0

    # Stop: every shard server has exited, and the panel offers a new start
    ok(at.button(key="search-cluster-halt").click().run())
    assert not any(pid_alive(p) for p in pids)
    assert lab(KIND) is None
    assert "Start the cluster" in [b.label for b in at.button]


def test_a_lab_refuses_a_signal_it_does_not_offer(index_dir: Path) -> None:
    cluster = SearchClusterLab(index=index_dir)
    with pytest.raises(ValueError, match="SIGSTOP"):
        cluster.signal(0, 0, "SIGTERM")
    with pytest.raises(RuntimeError):
        cluster.run_queries(["file"])


_trace = st.fixed_dictionaries(
    {
        "shard": st.integers(0, 3),
        "replica": st.one_of(st.none(), st.integers(0, 2)),
        "hedged": st.booleans(),
        "latencyMs": st.one_of(st.none(), st.floats(0, 5000)),
    }
)
_body = st.builds(
    lambda took, traces, answered: {
        "tookMs": took,
        "shardsQueried": len(traces),
        "shardsAnswered": min(answered, len(traces)),
        "fanout": {"shards": traces},
    },
    st.floats(0, 5000),
    st.lists(_trace, max_size=4),
    st.integers(0, 4),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(_body, max_size=20), st.integers(0, 3))
def test_a_burst_tally_keeps_its_invariants(bodies: list[dict[str, Any]], failed: int) -> None:
    burst, answered = tally(bodies, hedging=True, failed=failed)
    hedged = sum(t["hedged"] for b in bodies for t in b["fanout"]["shards"])
    assert burst.queries == len(bodies) + failed
    assert burst.hedges_won <= burst.hedges_fired == hedged
    assert burst.partial == sum(b["shardsAnswered"] < b["shardsQueried"] for b in bodies)
    assert len(answered) <= sum(len(b["fanout"]["shards"]) for b in bodies)
    if bodies:
        assert burst.p50_ms is not None and burst.p99_ms is not None
        assert min(b["tookMs"] for b in bodies) - 1e-3 <= burst.p50_ms <= burst.p99_ms  # 3 decimals
    else:
        assert burst.p50_ms is None and burst.p99_ms is None
