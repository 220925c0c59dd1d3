"""The Building blocks page (IDs and Rate limiters tabs), through ``streamlit.testing``.

Generate ids of every kind and see them sorted in the order they were made (UUIDv4
excepted), lay out a Snowflake's bits, read the seed's capacity figures, measure index
locality at a small size; with etcd installed, start lease-holding generators, kill one
and watch its lease expire, then stop everything the page started. Rate limiters: fire
each pattern at the real limiters, read the headers, compare every algorithm on the seed's
boundary attack, and fire at a throw-away Redis the page starts and stops — and that a
page reloaded while it runs (a new session, or a restarted dashboard) finds it again.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from dashboard_testing import HOME, RUN_TIMEOUT, lab
from streamlit.testing.v1 import AppTest

from lookup.labs import available
from lookup.labs.core import pid_alive

PAGE = "views/blocks.py"


def _ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def _text(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption]
    parts += [t.value for t in at.title] + [h.value for h in at.subheader]
    for kind in ("error", "warning", "info", "success"):
        parts += [e.value for e in getattr(at, kind)]
    return "\n".join(parts)


def _frame(at: AppTest, column: str):  # type: ignore[no-untyped-def]
    found = [d.value for d in at.dataframe if column in d.value.columns]
    assert len(found) == 1, (column, [list(d.value.columns) for d in at.dataframe])
    return found[0]


@pytest.fixture
def page(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[AppTest]:
    monkeypatch.setenv("LOOKUP_API_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("LOOKUP_DATA_DIR", str(tmp_path / "data"))  # its labs' state file
    monkeypatch.delenv("LOOKUP_LIMITS_URL", raising=False)  # the Redis test starts its own
    at = AppTest.from_file(HOME, default_timeout=RUN_TIMEOUT).run()
    _ok(at.switch_page(PAGE).run())
    yield at  # the labs it started are stopped by tests/app/conftest.py


def test_the_seeds_table_and_capacity(page: AppTest) -> None:
    text = _text(page)
    assert "Building blocks" in text and "The design notes' table" in text
    table = _frame(page, "coordination")
    assert list(table["approach"]) == [
        "sequential int",
        "UUIDv4",
        "UUIDv7",
        "ULID",
        "ticket server",
        "Snowflake",
    ]
    metrics = {m.label: m.value for m in page.metric}
    assert metrics["Ids per ms, fleet-wide"] == "4,194,304"
    assert metrics["Range"] == "69.7 years"
    assert metrics["Per worker with 4,096 workers"] == "1,024/ms"
    _ok(page.button(key="ids-rate").click().run())
    assert "ids/s (measured)" in _frame(page, "coordination").columns


def test_generate_sort_and_lay_out_the_bits(page: AppTest) -> None:
    page.number_input(key="ids-count").set_value(8)
    _ok(page.button(key="ids-generate").click().run())
    made = _frame(page, "sorted #")
    assert len(made) == 8 * 6
    for kind in ("Snowflake", "UUIDv7", "ULID", "sequential int", "ticket server"):
        mine = made[made["kind"] == kind]
        assert list(mine["made #"]) == list(mine["sorted #"]), kind
    assert "Snowflake :green-badge[in order]" in _text(page)  # no emoji font needed
    page.selectbox(key="ids-bits-kind").set_value("Snowflake")
    _ok(page.run())
    bits = _frame(page, "binary")
    assert list(bits["field"]) == ["sign", "timestamp", "worker", "sequence"]
    assert list(bits["bits"]) == [1, 41, 10, 12]
    assert bits["binary"].iloc[0] == "0"


def test_index_locality_at_a_small_size(page: AppTest) -> None:
    page.number_input(key="ids-locality-rows").set_value(1_000)
    _ok(page.button(key="ids-locality").click().run())
    table = _frame(page, "pages ×")
    assert table.loc["sequential int", "pages ×"] == 1.0
    assert all(table["newest 100 right"])
    assert len(page.get("vega_lite_chart")) == 3  # insert time, pages, newest 100


@pytest.mark.skipif(not available("id-leases"), reason="etcd is not installed")
def test_leases_kill_one_and_watch_it_expire(page: AppTest) -> None:
    _ok(page.button(key="ids-fleet-start").click().run())
    holders = _frame(page, "worker id")
    assert len(holders) == 3 and set(holders["lease"]) == {"held"}
    assert len(set(holders["worker id"])) == 3
    page.selectbox(key="ids-fleet-victim").set_value(1)
    _ok(page.button(key="ids-fleet-kill").click().run())
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        holders = _frame(page, "worker id")
        if holders.set_index("generator").loc[1, "lease"] == "expired":
            break
        time.sleep(0.5)
        _ok(page.button(key="ids-fleet-refresh").click().run())
    rows = holders.set_index("generator")
    assert rows.loc[1, "process"] == "killed" and rows.loc[1, "lease"] == "expired"
    assert list(rows.loc[[0, 2], "lease"]) == ["held", "held"]
    server = lab("id-leases").fleet.server
    _ok(page.button(key="ids-fleet-stop").click().run())
    assert lab("id-leases") is None
    assert server is not None and server.proc is None  # the page stopped its own etcd
    assert page.button(key="ids-fleet-start")


# ----------------------------------------------------------------------- rate limiters


def _fire(page: AppTest, algorithm: str, limit: int, pattern: str) -> AppTest:
    page.selectbox(key="rl-algorithm").set_value(algorithm)
    page.number_input(key="rl-limit").set_value(limit)
    page.selectbox(key="rl-pattern").set_value(pattern)
    return _ok(page.button(key="rl-fire").click().run())


def test_the_boundary_attack_at_a_fixed_window_and_its_headers(page: AppTest) -> None:
    _fire(page, "fixed_window", 100, "boundary attack")
    metrics = {m.label: m.value for m in page.metric}
    assert metrics["Offered"] == "198" and metrics["Admitted"] == "198"  # 99 + 99 in 2 s
    assert metrics["Worst window ÷ limit"] == "1.98×"
    assert page.get("plotly_chart")
    headers = _frame(page, "RateLimit-Remaining").set_index("decision")
    assert headers.loc["first request", "RateLimit-Limit"] == "100"
    assert headers.loc["first request", "RateLimit-Remaining"] == "99"
    assert headers.loc["first request", "Retry-After"] == "—"
    _fire(page, "sliding_counter", 100, "boundary attack")
    metrics = {m.label: m.value for m in page.metric}
    assert metrics["Admitted"] == "100" and metrics["Refused"] == "98"
    headers = _frame(page, "RateLimit-Remaining").set_index("decision")
    assert headers.loc["first refused", "status"] == 429
    assert int(headers.loc["first refused", "Retry-After"]) >= 1


@pytest.mark.parametrize("pattern", ["steady", "burst", "many identities"])
def test_every_pattern_fires(page: AppTest, pattern: str) -> None:
    _fire(page, "token_bucket", 20, pattern)
    metrics = {m.label: m.value for m in page.metric}
    assert int(metrics["Admitted"].replace(",", "")) > 0
    assert int(metrics["Refused"].replace(",", "")) > 0  # every pattern overloads


def test_all_algorithms_side_by_side(page: AppTest) -> None:
    page.number_input(key="rl-limit").set_value(100)
    page.selectbox(key="rl-pattern").set_value("boundary attack")
    _ok(page.button(key="rl-compare-go").click().run())
    table = _frame(page, "worst window ÷ limit").set_index("algorithm")
    assert list(table.index) == [
        "token_bucket",
        "fixed_window",
        "sliding_log",
        "sliding_counter",
        "leaky_bucket",
    ]
    assert table.loc["fixed_window", "admitted"] == 198
    assert table.loc["sliding_counter", "admitted"] == 100
    assert table.loc["sliding_log", "worst window ÷ limit"] == 1.0
    assert "Side by side" in _text(page)


@pytest.mark.skipif(not available("redis"), reason="redis-server is not installed")
def test_on_a_throw_away_redis_the_page_starts_and_stops(page: AppTest) -> None:
    page.radio(key="rl-backend").set_value("Redis")
    _ok(page.run())
    assert page.button(key="rl-fire").disabled
    _ok(page.button(key="rl-redis-start").click().run())
    server = lab("redis", "limits").server
    try:
        _fire(page, "sliding_log", 5, "steady")  # 22 requests over 3 s of real time
        metrics = {m.label: m.value for m in page.metric}
        assert metrics["Offered"] == "22"
        assert 5 <= int(metrics["Admitted"]) < 22  # 5 per second (real time: no exact count)
        assert "(Redis)" in page.get("plotly_chart")[0].proto.spec
    finally:
        _ok(page.button(key="rl-redis-stop").click().run())
    assert lab("redis", "limits") is None and server.proc is None


def _has_button(at: AppTest, key: str) -> bool:
    return any(b.key == key for b in at.button)


def _redis_tab() -> AppTest:
    """The page drawn afresh (a reload: a new session), on the rate limiters' Redis."""
    at = AppTest.from_file(HOME, default_timeout=RUN_TIMEOUT).run()
    _ok(at.switch_page(PAGE).run())
    at.session_state["blocks-tab"] = "Rate limiters"
    at.session_state["rl-backend"] = "Redis"
    return _ok(at.run())


@pytest.mark.skipif(not available("redis"), reason="redis-server is not installed")
def test_a_page_reloaded_mid_drill_finds_its_redis_again(page: AppTest) -> None:
    _ok(page.radio(key="rl-backend").set_value("Redis").run())
    _ok(page.button(key="rl-redis-start").click().run())
    url = lab("redis", "limits").url
    # a reload: a new session of the same dashboard finds the server, not a start button
    again = _redis_tab()
    assert f"Throw-away redis-server at `{url}`" in _text(again)
    assert not again.button(key="rl-fire").disabled and not _has_button(again, "rl-redis-start")
    # a restarted dashboard (a new supervisor over the same data directory) finds it in
    # the state file, says who left it running, and stops it
    from common import labs

    from lookup.labs import core as labs_module

    [pid] = lab("redis", "limits").pids()
    first = labs_module._SUPERVISORS.pop(labs().state_dir)  # the dashboard "crashed"
    try:
        restarted = _redis_tab()
        text = _text(restarted)
        assert "A throw-away redis-server left running by an earlier dashboard" in text
        assert url in text
        assert not _has_button(restarted, "rl-redis-start")
        _ok(restarted.button(key="rl-redis-left").click().run())
        assert not pid_alive(pid) and lab("redis", "limits") is None
        assert _has_button(restarted, "rl-redis-start")  # a fresh start is offered again
    finally:
        first.stop_all()
