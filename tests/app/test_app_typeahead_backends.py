"""The Typeahead page's Backends tab and the build's progress on Dask (issue 26, "Starting it").

The page reads everything from the API: ``/healthz`` names where searches, trending windows
and snapshots live and where a build folds; ``GET /v1/typeahead/snapshots/build`` says how
far the fold got on Dask. The oracle is the API asked directly and, for the progress lines,
``BuildProgress`` itself (the words the build writes). A small log is built once per module.
"""

from __future__ import annotations

import shutil
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from dashboard_testing import HOME, RUN_TIMEOUT, page_text
from starlette.types import ASGIApp
from streamlit.testing.v1 import AppTest

from lookup.typeahead import querylog, run

TYPEAHEAD = "views/typeahead.py"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory with a published snapshot per market (a few thousand events)."""
    data_dir = tmp_path_factory.mktemp("typeahead-backends") / "data"
    assert run(data_dir, querylog.write(querylog.generate(4000, seed=11),
                                        querylog.log_path(data_dir))).ok  # fmt: skip
    return data_dir


def serve(
    built: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    serve_asgi: Callable[[ASGIApp], str],
    **env: str,
) -> str:
    """The real API (typeahead only) over a copy of the built data, with ``env`` set."""
    from lookup.server import create_app

    data_dir = tmp_path / "data"
    shutil.copytree(built, data_dir)
    monkeypatch.setenv("LOOKUP_DATA_DIR", str(data_dir))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    url = serve_asgi(create_app(data_dir, subsystems=["lookup.typeahead.http:mount"]))
    monkeypatch.setenv("LOOKUP_API_URL", url)
    return url


def page() -> AppTest:
    app = AppTest.from_file(HOME, default_timeout=RUN_TIMEOUT).run()
    app.switch_page(TYPEAHEAD).run()
    assert not app.exception, [e.value for e in app.exception]
    return app


def backends(at: AppTest) -> dict[str, tuple[str, str]]:
    """The Backends tab's table: part → (backend, where)."""
    frames = [d.value for d in at.dataframe if "Part" in d.value.columns]
    assert len(frames) == 1
    rows = frames[0].to_dict("records")
    return {r["Part"]: (r["Backend"], r["Where"]) for r in rows}


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: str(m.value) for m in at.metric}


def health(url: str) -> dict[str, Any]:
    body: dict[str, Any] = httpx.get(f"{url}/healthz").json()["systems"]["typeahead"]
    return body


# ------------------------------------------------------------------ against the API


def test_an_embedded_api_shows_file_memory_and_directory(
    built: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    serve_asgi: Callable[[ASGIApp], str],
) -> None:
    url = serve(built, tmp_path, monkeypatch, serve_asgi)
    report = health(url)
    snapshots = (tmp_path / "data" / "typeahead" / "snapshots").resolve()
    assert report["snapshotStore"] == snapshots.as_uri() and report["buildFold"] == "process"
    at = page()
    table = backends(at)
    assert table["Submitted searches"][0] == "file"
    assert table["Trending windows"][0] == "memory"
    assert table["Snapshot store"] == ("directory", str(snapshots))
    assert table["Build: the fold"][0] == "this process"
    assert "No build has run since the API started." in page_text(at)


def test_a_fleet_api_shows_the_redis_stream_and_its_counts(
    built: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    serve_asgi: Callable[[ASGIApp], str],
    redis_server: Any,
) -> None:
    feed = f"{redis_server.url}?prefix=page-{uuid.uuid4().hex[:8]}"
    url = serve(built, tmp_path, monkeypatch, serve_asgi, LOOKUP_TYPEAHEAD_SEARCHES_URL=feed,
                LOOKUP_TYPEAHEAD_DASK_SCHEDULER="tcp://127.0.0.1:8786")  # fmt: skip
    for q in ("ipl live score", "ipl final", "weather delhi"):
        r = httpx.post(f"{url}/v1/searches", json={"q": q, "market": "en-IN"})
        assert r.status_code < 300, r.text
    report = health(url)
    assert report["searches"]["appended"] == 3 and report["trending"]["recorded"] == 3
    at = page()
    table = backends(at)
    where = redis_server.url.split("://", 1)[1]
    assert table["Submitted searches"][0] == "Redis stream"
    assert where.split("/")[0] in table["Submitted searches"][1]
    assert table["Trending windows"][0] == "Redis"
    assert table["Build: the fold"] == ("Dask", "tcp://127.0.0.1:8786")
    shown = metrics(at)
    assert shown["Searches appended"] == "3"
    assert shown["Copied for the build"] == str(report["searches"]["copied"])
    assert "3 searches recorded by this process" in page_text(at)


@pytest.mark.slow
def test_a_build_on_dask_from_the_page_shows_its_tasks_and_workers(
    built: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    serve_asgi: Callable[[ASGIApp], str],
) -> None:
    """The Snapshots tab's build, with the API's builds set to a two-worker local Dask
    cluster: the notice and the Backends tab show the fold's tasks and workers, as the
    job's ``result.cluster`` says."""
    url = serve(built, tmp_path, monkeypatch, serve_asgi,
                LOOKUP_TYPEAHEAD_DASK_SCHEDULER="local")  # fmt: skip
    # searches submitted since the first build: what this build folds (on Dask)
    now = int(time.time())
    searches = tmp_path / "data" / "typeahead" / "searches.csv"
    searches.write_text("ts,market,query,user_id,picked\n" + "".join(
        f"{now - 600 + i},{m},quokka selfie spot,s{i},0\n"
        for i in range(12) for m in ("en-IN", "hi-IN")
    ))  # fmt: skip
    at = page()
    at.button(key="ta-build").click().run(timeout=300)
    assert not at.exception, [e.value for e in at.exception]
    job = httpx.get(f"{url}/v1/typeahead/snapshots/build").json()
    assert job["state"] == "succeeded", job
    cluster = job["result"]["cluster"]
    assert cluster["tasks_done"] == cluster["tasks_total"] > 0 and cluster["workers_alive"] == 2
    assert any(m.startswith("dask: ") for m in job["messages"])
    text = page_text(at)
    assert "The log was folded on Dask" in text
    assert f"{cluster['tasks_total']} of {cluster['tasks_total']} fold tasks done" in text
    shown = metrics(at)
    assert shown["Fold tasks done"] == f"{cluster['tasks_done']} / {cluster['tasks_total']}"
    assert shown["Workers alive"] == "2" and shown["Scheduler"] == cluster["scheduler"]
    assert "The latest build on Dask" in text


def test_snapshots_served_from_postgresql_are_named_on_the_page(
    postgres_db: str,  # first: dropped after the API stopped
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    serve_asgi: Callable[[ASGIApp], str],
) -> None:
    """A build published to the shared version store, served with no snapshot on disk:
    the page names PostgreSQL (the server's address, never a password)."""
    from lookup.kit.engines.postgres import describe_url

    monkeypatch.setenv("LOOKUP_TYPEAHEAD_SNAPSHOT_STORE", postgres_db)
    data_dir = tmp_path / "built"
    log = querylog.write(querylog.generate(2000, seed=5), querylog.log_path(data_dir))
    assert run(data_dir, log).ok
    assert not (data_dir / "typeahead" / "snapshots").exists()
    url = serve(data_dir, tmp_path, monkeypatch, serve_asgi)
    assert health(url)["snapshotStore"] == describe_url(postgres_db)
    table = backends(page())
    assert table["Snapshot store"] == ("PostgreSQL", describe_url(postgres_db).split("://")[1])
    assert table["Submitted searches"][0] == "file"
