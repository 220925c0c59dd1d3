"""Issue 28 item 19: ``GET /metrics`` in the Prometheus text format.

Every answer is parsed with ``prometheus_client``'s own parser
(:func:`text_string_to_metric_families`), so what a Prometheus server would read is what
is checked: requests by route *template*, method and status, latencies, the search
coordinator's hedges, and the crawler processes' files with a ``worker`` label; who may
read it; and what counting costs a request (printed, not asserted: a shared machine).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from lookup.crawler.metrics import CrawlMetrics, metrics_file
from lookup.kit.asgi import ErrorGuard
from lookup.kit.metrics import (
    HTTP_STATS,
    LATENCY_BUCKETS,
    HttpStats,
    TextfileCollector,
    exposition,
    write_textfile,
)
from lookup.server import Mounts, create_app

TOKEN = "metrics-admin-token"


def _mount(mounts: Mounts) -> None:
    async def fast(request):  # type: ignore[no-untyped-def]
        return PlainTextResponse("fast:" + request.path_params["name"])

    mounts.fast_routes.append(Route("/fast/{name}", fast))

    @mounts.api.get("/v1/things/{thing}")
    def thing(thing: int) -> dict[str, int]:
        return {"thing": thing}


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of an exposition, by name and labels."""
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def value(text: str, name: str, **labels: str) -> float:
    return samples(text).get((name, frozenset(labels.items())), 0.0)


@pytest.fixture
def client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    monkeypatch.setenv("LOOKUP_ADMIN_TOKEN", TOKEN)
    monkeypatch.setenv("LOOKUP_CRAWL_STORE", f"sqlite:///{tmp_path / 'crawl1' / 'crawl.sqlite'}")
    app = create_app(
        tmp_path / "data", subsystems=[_mount, "lookup.crawler.http:mount"]
    )  # fmt: skip
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


def test_requests_are_counted_by_route_template_method_and_status(client: TestClient) -> None:
    before = client.get("/metrics").text
    for name in ("a", "b", "c"):
        assert client.get(f"/fast/{name}").status_code == 200
    assert client.get("/v1/things/7").status_code == 200
    assert client.get("/v1/things/seven").status_code == 422
    for i in range(3):
        assert client.get(f"/no/such/path/{i}").status_code == 404
    r = client.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    after = r.text
    total = "lookup_http_requests_total"

    def grew(route: str, status: str) -> float:
        labels = {"route": route, "method": "GET", "status": status}
        return value(after, total, **labels) - value(before, total, **labels)

    assert grew("/fast/{name}", "200") == 3  # the template, never the names
    assert grew("/v1/things/{thing}", "200") == 1
    assert grew("/v1/things/{thing}", "422") == 1
    assert grew("unmatched", "404") == 3
    routes = {dict(k[1]).get("route") for k in samples(after) if k[0] == total}
    assert not any(r and r.startswith("/no/such") for r in routes)
    hist = "lookup_http_request_duration_seconds_count"
    assert (
        value(after, hist, route="/fast/{name}", method="GET")
        - value(before, hist, route="/fast/{name}", method="GET")
        == 3
    )
    assert value(after, "lookup_process_info", pid=str(__import__("os").getpid())) == 1


def test_the_crawler_processes_files_are_exposed_with_a_worker_label(
    client: TestClient, tmp_path: Path
) -> None:
    crawl_dir = tmp_path / "crawl1"
    for worker, pages in (("crawl", 3), ("w/2", 5)):
        m = CrawlMetrics()
        for _ in range(pages):
            m.fetched("page", "ok", 0.25)
        m.fetched("page", "http-403", 1.0)
        m.write(metrics_file(crawl_dir, worker))
    text = client.get("/metrics").text
    fetches = "lookup_crawler_fetches_total"
    assert value(text, fetches, kind="page", outcome="ok", worker="crawl") == 3
    assert value(text, fetches, kind="page", outcome="ok", worker="w_2") == 5
    assert value(text, fetches, kind="page", outcome="http-403", worker="w_2") == 1
    waits = "lookup_crawler_politeness_wait_seconds_count"
    assert value(text, waits, worker="crawl") == 4
    assert value(text, "lookup_crawler_politeness_wait_seconds_sum", worker="w_2") == 2.25
    # one family per name however many workers wrote it (a valid exposition)
    names = [f.name for f in text_string_to_metric_families(text)]
    assert len(names) == len(set(names))


def test_search_registers_its_coordinators_counters(tmp_path: Path) -> None:
    app = create_app(tmp_path / "data", subsystems=["lookup.search.http:mount"])
    with TestClient(app, raise_server_exceptions=False) as c:
        r = c.get("/metrics")
    assert r.status_code == 200
    assert "# TYPE lookup_search_hedges_total counter" in r.text  # no index yet: no shards


def test_the_admin_setting_asks_for_the_token(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert client.get("/metrics").status_code == 200  # open by default, as /healthz
    monkeypatch.setenv("LOOKUP_METRICS_AUTH", "admin")
    r = client.get("/metrics")
    assert r.status_code == 401 and r.json()["error"] == "UNAUTHORIZED"
    r = client.get("/metrics", headers={"Authorization": "Bearer wrong"})
    assert r.status_code == 403 and r.json()["error"] == "FORBIDDEN"
    r = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert r.status_code == 200 and "lookup_http_requests_total" in r.text
    assert client.post("/metrics").status_code == 405


def test_a_file_that_is_not_metrics_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "metrics-bad.prom").write_text("this is { not metrics\n")
    m = CrawlMetrics()
    m.fetched("robots", "rules", 0.5)
    m.write(metrics_file(tmp_path, "good"))
    text = exposition([TextfileCollector(lambda: tmp_path.glob("metrics-*.prom"))]).decode()
    assert value(text, "lookup_crawler_fetches_total", kind="robots", outcome="rules",
                 worker="good") == 1  # fmt: skip
    gone = TextfileCollector(lambda: (tmp_path / "missing").glob("*.prom"))
    assert list(gone.collect()) == []


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    counts=st.dictionaries(
        st.sampled_from(["w1", "w2", "w3"]),
        st.dictionaries(st.sampled_from(["ok", "http-404", "retry:http-429"]), st.integers(0, 50)),
        max_size=3,
    )
)
def test_merged_files_keep_every_writers_counts(
    counts: dict[str, dict[str, int]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The re-exposed samples are exactly each writer's own, under its own label."""
    d = tmp_path_factory.mktemp("prom")
    for worker, by_outcome in counts.items():
        reg = CollectorRegistry()
        c = Counter("lookup_crawler_fetches", "x", ["kind", "outcome"], registry=reg)
        for outcome, n in by_outcome.items():
            c.labels("page", outcome).inc(n)
        write_textfile(d / f"metrics-{worker}.prom", reg)
    text = exposition([TextfileCollector(lambda: d.glob("metrics-*.prom"))]).decode()
    got = {
        (dict(k[1])["worker"], dict(k[1])["outcome"]): v
        for k, v in samples(text).items()
        if k[0] == "lookup_crawler_fetches_total"
    }
    want = {(w, o): float(n) for w, by in counts.items() for o, n in by.items()}
    assert got == want


@settings(max_examples=60, deadline=None)
@given(
    seconds=st.lists(
        st.one_of(st.sampled_from(LATENCY_BUCKETS), st.floats(0, 20, allow_nan=False)),
        max_size=60,
    )
)
def test_the_lock_free_histogram_is_prometheus_clients_own(seconds: list[float]) -> None:
    """The oracle: ``prometheus_client``'s Histogram with the same buckets, fed the same."""
    stats = HttpStats()
    reg = CollectorRegistry()
    oracle = Histogram(
        "lookup_http_request_duration_seconds", "x", ["route", "method"],
        buckets=LATENCY_BUCKETS, registry=reg,
    )  # fmt: skip
    for x in seconds:
        stats.record("/{key}", "GET", 200, x)
        oracle.labels("/{key}", "GET").observe(x)
    mine = samples(exposition_of(stats))
    theirs = samples(exposition_of(reg))
    want = {k: v for k, v in theirs.items() if not k[0].endswith("_created")}
    got = {k: v for k, v in mine.items() if k[0].startswith("lookup_http_request_duration")}
    assert got.keys() == want.keys()
    for k, v in want.items():
        assert got[k] == pytest.approx(v)
    if seconds:
        total = samples(exposition_of(stats))[
            ("lookup_http_requests_total", frozenset({"route": "/{key}", "method": "GET",
                                                      "status": "200"}.items()))
        ]  # fmt: skip
        assert total == len(seconds)


def exposition_of(collector: Any) -> str:
    return generate_latest(collector).decode()


def test_what_counting_costs_a_request(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A micro-measurement (printed): a hot-path request through the whole app with and
    without the counting (the outer :class:`ErrorGuard` with and without its stats); both
    answer, and only the counted one counts."""
    counted = create_app(tmp_path / "data", subsystems=[_mount])
    assert isinstance(counted, ErrorGuard) and counted.stats is HTTP_STATS
    bare = ErrorGuard(counted.app)
    scope = {
        "type": "http", "http_version": "1.1", "method": "GET", "scheme": "http",
        "path": "/fast/abc", "raw_path": b"/fast/abc", "root_path": "", "query_string": b"",
        "headers": [(b"host", b"127.0.0.1:8000")], "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 50000),
    }  # fmt: skip
    statuses: list[int] = []

    async def send(message: Any) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    async def receive() -> Any:
        return {"type": "http.request", "body": b""}

    async def run(target: Any, n: int) -> float:
        t0 = time.perf_counter()
        for _ in range(n):
            await target(dict(scope), receive, send)
        return (time.perf_counter() - t0) / n

    async def both(n: int) -> tuple[float, float]:
        await run(bare, 500)
        await run(counted, 500)  # warm: the labelled children exist from here on
        b = min([await run(bare, n) for _ in range(5)])
        c = min([await run(counted, n) for _ in range(5)])
        return b, c

    b, c = asyncio.run(both(4000))
    assert set(statuses) == {200}
    with capsys.disabled():
        print(
            f"\n/fast/{{name}} through the app: {b * 1e6:.1f} µs per request without "
            f"counting, {c * 1e6:.1f} µs with it: +{(c - b) * 1e6:.1f} µs"
        )
