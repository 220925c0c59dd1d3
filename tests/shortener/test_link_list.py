"""The link list a person can use (issue 27 item 4): search, sort by clicks / last click /
created, a creation-date range and click counts, against a brute-force oracle.

Each example makes a fresh owner's links on one real shortener (the embedded SQLite stores,
then the link store and the click counts on a throw-away PostgreSQL), clicks them through
the real click pipeline (the redirect's hook → buffer → log → aggregator → counters), then
pages through ``LinkApi.list_links`` with a random page size and compares the keys with a
plain sort of what the test itself made and clicked.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lookup.errors import WorkbenchError
from lookup.shortener import Shortener, ShortenerConfig
from lookup.shortener.listing import rank, search_terms
from lookup.shortener.model import ClickContext
from tests.shortener.conftest import BASE_URL, Clock, generous_limits, no_dns

BROWSER = "Mozilla/5.0 (X11; Linux x86_64; rv:126.0) Gecko/20100101 Firefox/126.0"
BASE = 1_800_000_000.0
_serial = itertools.count()


def _shortener(data_dir: Path, clock: Clock, store_url: str = "") -> Shortener:
    config = ShortenerConfig(
        data_dir=data_dir, base_url=BASE_URL, wall_clock=clock, mono_clock=clock,
        block_size=100, limits=generous_limits(), scanner=False, resolve_host=no_dns,
        aggregator="thread", store_url=store_url,
    )  # fmt: skip
    return Shortener(config)


@pytest.fixture(scope="module")
def sqlite_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Shortener, Clock]]:
    clock = Clock(BASE)
    root = _shortener(tmp_path_factory.mktemp("list-sqlite"), clock)
    yield root, clock
    root.close()


@pytest.fixture(scope="module")
def postgres_root(
    tmp_path_factory: pytest.TempPathFactory, postgres_server: Any
) -> Iterator[tuple[Shortener, Clock]]:
    import psycopg

    name = f"t_list_{next(_serial)}_{id(tmp_path_factory) % 10_000}"
    with psycopg.connect(postgres_server.url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = postgres_server.url.rsplit("/", 1)[0] + f"/{name}"
    clock = Clock(BASE)
    root = _shortener(tmp_path_factory.mktemp("list-pg"), clock, url)
    yield root, clock
    root.close()


LINK = st.tuples(
    st.text("abAB%_", max_size=6),  # the destination's path
    st.integers(0, 6),  # created: minutes after the example's start (ties happen)
    st.lists(st.integers(0, 40), max_size=4),  # clicks: minutes after the start
    st.booleans(),  # an alias (text to search in the key) or a generated key
)


@st.composite
def listings(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "links": draw(st.lists(LINK, min_size=0, max_size=9)),
        "sort": draw(st.sampled_from(["clicks", "lastClick", "created"])),
        "order": draw(st.sampled_from(["asc", "desc"])),
        "limit": draw(st.integers(1, 4)),
        "search": draw(st.none() | st.text("abAB_%", min_size=1, max_size=2)),
        "range": draw(st.none() | st.tuples(st.integers(0, 6), st.integers(1, 7))),
    }


def _run(root: Shortener, clock: Clock, case: dict[str, Any]) -> None:
    serial = next(_serial)
    owner = f"owner-{serial:06d}-{id(root) % 997}"
    start = clock.now = max(clock.now, BASE) + 3_600  # created times tie within an example
    made: dict[str, dict[str, Any]] = {}
    for i, (path, created, clicks, alias) in enumerate(case["links"]):
        clock.now = start + created * 60
        body: dict[str, Any] = {"longUrl": f"https://example.com/{path}"}
        if alias:
            body["customAlias"] = f"{serial:06d}{id(root) % 997:03d}-{path.lower()[:3]}{i}x"
            body["customAlias"] = body["customAlias"].replace("%", "p")
        key = root.api.create(body, owner=owner).body["key"]
        made[key] = {"created": clock.now, "url": root.store.get(key).long_url, "clicks": clicks}  # type: ignore[union-attr]
    clock.now = start + 41 * 60
    for key, info in made.items():
        for minute in info["clicks"]:
            ts = start + minute * 60 + 7
            root.service.emit_click(
                ClickContext(key, ts, "203.0.113.9", BROWSER, None, None, None, "GET", 302)
            )

    # -- the oracle: what the test made and clicked, sorted plainly ---------------------
    terms = search_terms(case["search"])
    wanted = [
        k for k, info in made.items()
        if not terms or any(t in k.lower() or t in info["url"].lower() for t in terms)
    ]  # fmt: skip
    params: dict[str, Any] = {}
    if case["range"] is not None:
        lo, hi = case["range"]
        params = {
            "created_from": str(int(start + lo * 60)),
            "created_to": str(int(start + hi * 60)),
        }
        if lo >= hi:
            with pytest.raises(WorkbenchError) as refused:
                root.api.list_links(owner, **params)
            assert refused.value.code == "INVALID_RANGE"
            return
        wanted = [k for k in wanted if start + lo * 60 <= made[k]["created"] < start + hi * 60]
    descending = case["order"] == "desc"
    totals = {k: len(made[k]["clicks"]) for k in wanted}
    last = {k: max(start + m * 60 for m in made[k]["clicks"]) if made[k]["clicks"] else None
            for k in wanted}  # fmt: skip
    if case["sort"] == "created":
        expected = sorted(wanted, key=lambda k: (made[k]["created"], k), reverse=descending)
    elif case["sort"] == "clicks":
        expected = sorted(wanted, key=lambda k: (totals[k], k), reverse=descending)
    else:
        clicked = sorted((k for k in wanted if last[k] is not None),
                         key=lambda k: (last[k], k), reverse=descending)  # fmt: skip
        never = sorted((k for k in wanted if last[k] is None), reverse=descending)
        expected = clicked + never

    # -- the pages -----------------------------------------------------------------------
    got: list[str] = []
    cursor = None
    for _ in range(len(made) + 2):
        page = root.api.list_links(
            owner, limit=case["limit"], cursor=cursor, search=case["search"],
            sort=case["sort"], order=case["order"], **params,
        )  # fmt: skip
        assert len(page["links"]) <= case["limit"]
        for item in page["links"]:
            got.append(item["key"])
            clicks = item["clicks"]
            assert clicks["total"] == totals[item["key"]] == clicks["human"]
            if last[item["key"]] is None:
                assert clicks["lastClickAt"] is None
            else:
                assert clicks["lastClickAt"] is not None
        cursor = page["nextCursor"]
        if cursor is None:
            break
        other = "created" if case["sort"] != "created" else "clicks"
        with pytest.raises(WorkbenchError) as mismatch:
            root.api.list_links(owner, cursor=cursor, sort=other, order=case["order"], **params)
        assert mismatch.value.code == "CURSOR_MISMATCH"
    assert got == expected


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=listings())
def test_pages_equal_a_brute_force_sort_on_sqlite(
    sqlite_root: tuple[Shortener, Clock], case: dict[str, Any]
) -> None:
    _run(*sqlite_root, case)


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=listings())
def test_pages_equal_a_brute_force_sort_on_postgres(
    postgres_root: tuple[Shortener, Clock], case: dict[str, Any]
) -> None:
    _run(*postgres_root, case)


@given(
    st.lists(
        st.tuples(st.none() | st.integers(0, 5), st.text("aAb", min_size=1, max_size=3)),
        unique_by=lambda t: t[1],
        max_size=8,
    ),  # fmt: skip
    st.booleans(),
)
def test_rank_is_the_plain_sort_with_never_clicked_last(
    items: list[tuple[int | None, str]], descending: bool
) -> None:
    ranked = sorted(items, key=lambda t: rank(t[0], t[1], descending))
    clicked = sorted((t for t in items if t[0] is not None), reverse=descending)
    never = sorted((t for t in items if t[0] is None), key=lambda t: t[1], reverse=descending)
    assert ranked == clicked + never


def test_refusals(sqlite_root: tuple[Shortener, Clock]) -> None:
    root, _clock = sqlite_root
    api = root.api
    for bad, code in (
        ({"sort": "visits"}, "INVALID_SORT"),
        ({"order": "up"}, "INVALID_ORDER"),
        ({"created_from": "yesterday"}, "INVALID_RANGE"),
        ({"created_from": "2026-12-08", "created_to": "2026-12-07"}, "INVALID_RANGE"),
        ({"search": "x" * 201}, "INVALID_SEARCH"),
        ({"cursor": "WzEsMl0"}, "INVALID_CURSOR"),
        ({"cursor": "e30.AAAA"}, "INVALID_CURSOR"),
    ):
        with pytest.raises(WorkbenchError) as refused:
            api.list_links("someone", **bad)
        assert refused.value.code == code, bad


def test_a_bare_end_date_includes_its_day(sqlite_root: tuple[Shortener, Clock]) -> None:
    root, clock = sqlite_root
    owner = f"dates-{next(_serial)}"
    clock.now = 1_796_601_600.0 + 86_399  # 2026-12-07T23:59:59Z
    key = root.api.create({"longUrl": "https://example.com/late"}, owner=owner).body["key"]
    day = root.api.list_links(owner, created_from="2026-12-07", created_to="2026-12-07")
    assert [item["key"] for item in day["links"]] == [key]
    assert root.api.list_links(owner, created_to="2026-12-06")["links"] == []
