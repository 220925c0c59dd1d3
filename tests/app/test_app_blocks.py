"""The Building blocks page (IDs tab), through ``streamlit.testing``.

Generate ids of every kind and see them sorted in the order they were made (UUIDv4
excepted), lay out a Snowflake's bits, read the seed's capacity figures, measure index
locality at a small size; with etcd installed, start lease-holding generators, kill one
and watch its lease expire, then stop everything the page started.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from dashboard_testing import HOME, RUN_TIMEOUT
from streamlit.testing.v1 import AppTest

from lookup.blocks.ids.etcd import etcd_available

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
def page(monkeypatch: pytest.MonkeyPatch) -> Iterator[AppTest]:
    monkeypatch.setenv("LOOKUP_API_URL", "http://127.0.0.1:9")
    at = AppTest.from_file(HOME, default_timeout=RUN_TIMEOUT).run()
    _ok(at.switch_page(PAGE).run())
    yield at
    fleet = at.session_state["ids-fleet"] if "ids-fleet" in at.session_state else None
    if fleet is not None:
        fleet.stop()


def test_the_seeds_table_and_capacity(page: AppTest) -> None:
    text = _text(page)
    assert "Building blocks" in text and "The seed's table" in text
    table = _frame(page, "coordination")
    assert list(table["approach"]) == ["sequential int", "UUIDv4", "UUIDv7", "ULID",
                                       "ticket server", "Snowflake"]
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
    assert "Snowflake ✅" in _text(page)
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


@pytest.mark.skipif(not etcd_available(), reason="etcd is not installed")
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
    fleet = page.session_state["ids-fleet"]
    server = fleet.server
    _ok(page.button(key="ids-fleet-stop").click().run())
    assert "ids-fleet" not in page.session_state
    assert server is not None and server.proc is None  # the page stopped its own etcd
    assert page.button(key="ids-fleet-start")
