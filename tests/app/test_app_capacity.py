"""The Capacity planner page, through ``streamlit.testing``, and the planner model behind it.

The figures are checked against the seed's numbers and against the formulas written
out here, not against :mod:`lookup.capacity`'s own output.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import fields

import planner  # app/planner.py; dashboard_testing (loaded by conftest) puts app/ on sys.path
import pytest
from dashboard_testing import HOME, RUN_TIMEOUT
from streamlit.testing.v1 import AppTest

CAPACITY = "views/capacity.py"


@pytest.fixture(scope="module")
def at() -> Iterator[AppTest]:
    """The planner, reached through the dashboard's navigation, with no API around."""
    mp = pytest.MonkeyPatch()
    mp.setenv("LOOKUP_API_URL", "http://127.0.0.1:9")
    app = AppTest.from_file(HOME, default_timeout=RUN_TIMEOUT).run()
    app.switch_page(CAPACITY).run()
    assert not app.exception, [e.value for e in app.exception]
    yield app
    mp.undo()


def show(at: AppTest, system: planner.System) -> AppTest:
    """``at`` with ``system``'s tab open (only the open tab runs and is drawn)."""
    at.session_state["capacity.tab"] = system.title
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.fixture
def fresh(at: AppTest) -> AppTest:
    """The shared planner with every system reset to the seed's assumptions, the first
    tab (Shortener) open."""
    for system in planner.SYSTEMS:
        show(at, system).button(key=f"{system.name}.reset").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return show(at, planner.SYSTEMS[0])


def metric(at: AppTest, label: str) -> str:
    """The value shown by the metric with ``label`` (labels are unique on the page)."""
    found = [m for m in at.metric if m.label == label]
    assert len(found) == 1, (label, [m.label for m in at.metric])
    return found[0].value


def widget(at: AppTest, key: str):  # type: ignore[no-untyped-def]
    """The slider or number input with ``key``."""
    for kind in (at.slider, at.number_input):
        for w in kind:
            if w.key == key:
                return w
    raise AssertionError(f"no input with key {key!r}")


# ------------------------------------------------------------------------ the page


SEED_FIGURES = {
    planner.SHORTENER: {
        "Reads (redirects), average": "3,860/s",  # seed: ≈3,900/s
        "Links in 10 years": "12 billion",
        "Storage with 3 replicas": "18 TB",
        "Key length chosen": "7 chars",
    },
    planner.TYPEAHEAD: {"Every keystroke sent, average": "139,000/s"},
    planner.PROXIMITY: {
        "Searches at peak (×3)": "17,400/s",  # seed: ≈17,000/s
        "Location index (only what search needs)": "8 GB",
    },
    planner.CRAWLER: {"Fetch rate, average": "386/s", "Seen-URL set in bytes": "24 GB"},
    planner.SEARCH: {"Queries that hit at least one slow shard": "9.52%"},  # seed ≈9.5%
}


def test_page_runs_and_shows_the_seed_figures(fresh: AppTest) -> None:
    assert [t.label for t in fresh.tabs] == [
        "Shortener",
        "Typeahead",
        "Proximity",
        "Crawler",
        "Search",
        "IDs",
        "Cache",
    ]
    drivers = []
    for system in planner.SYSTEMS:
        show(fresh, system)
        for label, value in SEED_FIGURES.get(system, {}).items():
            assert metric(fresh, label) == value, (system.name, label)
        # the open tab alone is drawn: its driver sentence, its chart, its table
        assert len(fresh.info) == 1 and len(fresh.dataframe) == 1, system.name
        drivers.append(fresh.info[0].value)
    assert "Key-space density" in drivers[0]
    assert "fan-out tail" in drivers[planner.SYSTEMS.index(planner.SEARCH)]


def test_an_input_keeps_its_value_while_another_tab_is_open(fresh: AppTest) -> None:
    widget(fresh, "shortener.links_per_month").set_value(300).run()
    show(fresh, planner.IDS)
    show(fresh, planner.SHORTENER)
    assert widget(fresh, "shortener.links_per_month").value == 300
    assert metric(fresh, "Writes (new links), average") == "116/s"  # 300M / 2,592,000 s


def test_every_rate_says_whether_it_is_an_average_or_a_peak(fresh: AppTest) -> None:
    """Tiles (mostly averages) and the summary (peaks) name their basis, so 3,860/s in a
    tile and 19,300/s in the sentence above it do not look like a contradiction."""
    # The cache tab's rates are one design rate (the seed's 200k requests/s), no peak factor.
    rates = []
    for system in planner.SYSTEMS:
        if system is not planner.CACHE:
            rates += [m for m in show(fresh, system).metric if m.value.endswith("/s")]
            if system is planner.TYPEAHEAD:
                assert metric(fresh, "Origin at peak (×2) (edge absorbs 40%)") == "83,300/s"
            if system is planner.CRAWLER:
                assert metric(fresh, "Fetch rate, average") == "386/s"
    assert rates
    for m in rates:
        assert m.label.endswith(", average") or "peak (×" in m.label, m.label
    show(fresh, planner.SHORTENER)
    shortener = fresh.info[0].value
    assert "19,300/s peak reads" in shortener
    assert "A **peak** here is ×5 the average" in shortener
    table = fresh.dataframe[0].value
    rows = dict(zip(table["Figure"], table["Value"], strict=True))
    assert rows["Reads (redirects), average"] == "3,860/s"
    assert rows["Reads at peak (×5)"] == "19,300/s"  # 3,860/s × 5
    assert rows["Key length chosen"] == "7 chars"  # not a rate: no basis

    widget(fresh, "shortener.peak_factor").set_value(10).run()
    assert not fresh.exception
    assert "×10 the average" in fresh.info[0].value
    table = fresh.dataframe[0].value
    rows = dict(zip(table["Figure"], table["Value"], strict=True))
    assert rows["Reads at peak (×10)"] == "38,600/s"  # 3,860/s × 10
    assert rows["Reads (redirects), average"] == "3,860/s"  # the average does not move
    # Search plans no traffic peak: its figures carry no basis and no note.
    search = show(fresh, planner.SEARCH).info[0].value
    assert "A **peak** here" not in search


def test_the_ids_tab_shows_the_seeds_snowflake_figures(fresh: AppTest) -> None:
    show(fresh, planner.IDS)
    assert metric(fresh, "Ids per ms, fleet-wide") == "4.19 million"  # 4,096 × 1,024
    assert metric(fresh, "Range of the timestamp") == "69.7 years"  # 2^41 ms
    assert metric(fresh, "Workers") == "1,024"
    assert metric(fresh, "Ids per ms per worker after") == "1,024"  # 4,096 workers: 2^10 each
    drivers = " ".join(i.value for i in fresh.info)
    assert "the worker id, not the rate, is the scarce resource" in drivers
    table = fresh.dataframe[0]
    rows = {r["Figure"]: r["Value"] for r in table.value.to_dict("records")}
    assert rows["Workers after re-partitioning"] == "4,096"
    assert rows["Ids per ms, fleet-wide after"] == "4.19 million"  # the fleet keeps its rate


def test_more_worker_bits_move_the_ids_figures(fresh: AppTest) -> None:
    show(fresh, planner.IDS)
    widget(fresh, "ids.worker_bits").set_value(12).run()
    assert not fresh.exception
    assert metric(fresh, "Workers") == "4,096"
    assert metric(fresh, "Ids per ms, fleet-wide") == "16.8 million"  # 4,096 × 4,096
    fresh.button(key="ids.reset").click().run()
    assert metric(fresh, "Workers") == "1,024"


def test_the_cache_tab_shows_the_seeds_store_load(fresh: AppTest) -> None:
    """Seed 004: 200k requests/s at 95% hits → 10k store reads/s; at 90% → 20k/s."""
    show(fresh, planner.CACHE)
    assert metric(fresh, "Store reads at the hit rate") == "10,000/s"
    assert metric(fresh, "Store reads at the lower hit rate") == "20,000/s"
    assert metric(fresh, "Store reads with one cache node lost") == "29,000/s"
    widget(fresh, "cache.hit_rate").set_value(99.0).run()
    assert not fresh.exception
    assert metric(fresh, "Store reads at the hit rate") == "2,000/s"
    fresh.button(key="cache.reset").click().run()
    assert metric(fresh, "Store reads at the hit rate") == "10,000/s"


def test_changing_links_per_month_changes_the_writes_shown(fresh: AppTest) -> None:
    before = metric(fresh, "Writes (new links), average")
    assert before == "38.6/s"  # 100M / (30 × 86,400 s)
    widget(fresh, "shortener.links_per_month").set_value(200).run()
    assert not fresh.exception
    after = metric(fresh, "Writes (new links), average")
    assert after != before
    assert after == "77.2/s"  # 200M / 2,592,000 s
    shown = [m for m in fresh.metric if m.label == "Writes (new links), average"][0]
    assert shown.delta == "design notes: 38.6/s"
    assert metric(fresh, "Links in 10 years") == "24 billion"


def test_a_number_input_in_the_expander_drives_the_bloom_filter(fresh: AppTest) -> None:
    show(fresh, planner.CRAWLER)
    assert metric(fresh, "Seen-URL set in bytes") == "24 GB"
    widget(fresh, "crawler.bloom_fp_rate").set_value(0.1).run()  # percent
    assert not fresh.exception
    bits = -math.log(0.001) / math.log(2) ** 2
    expected_gb = 20e9 * bits / 8 / 1e9
    assert metric(fresh, "Seen-URL set in bytes") == f"{expected_gb:.3g} GB"


def test_more_links_can_push_the_key_to_eight_characters(fresh: AppTest) -> None:
    widget(fresh, "shortener.links_per_month").set_value(2000).run()
    widget(fresh, "shortener.retention_years").set_value(30).run()
    links = 2e9 * 12 * 30
    expected = next(n for n in range(1, 20) if links / 62**n <= 0.01)
    assert metric(fresh, "Key length chosen") == f"{expected} chars"
    assert expected == 8


def test_reset_puts_the_seed_back(fresh: AppTest) -> None:
    widget(fresh, "shortener.links_per_month").set_value(500).run()
    assert metric(fresh, "Writes (new links), average") != "38.6/s"
    fresh.button(key="shortener.reset").click().run()
    assert metric(fresh, "Writes (new links), average") == "38.6/s"
    assert widget(fresh, "shortener.links_per_month").value == 100


def test_every_assumption_has_an_input_at_the_seed_value(fresh: AppTest) -> None:
    for system in planner.SYSTEMS:
        show(fresh, system)
        for f in fields(system.assumptions):
            w = widget(fresh, planner.widget_key(system, f.name))
            knob = system.knob(f.name)
            assert math.isclose(w.value * knob.scale, f.default, rel_tol=1e-12), (
                system.name,
                f.name,
                w.value,
                f.default,
            )


def test_the_worked_out_table_lists_every_figure_with_its_formula(fresh: AppTest) -> None:
    table = fresh.dataframe[0].value
    assert list(table.columns) == ["Figure", "Value", "Worked out as"]
    rows = dict(
        zip(table["Figure"], zip(table["Value"], table["Worked out as"], strict=True), strict=True)
    )
    assert rows["Fill at 6 characters"][0] == "21.1%"
    assert rows["Fill at 7 characters"][0] == "0.341%"
    assert rows["Key space at 7 characters"][1] == "62^7"
    for system in planner.SYSTEMS:  # every tab has its worked-out table
        assert list(show(fresh, system).dataframe[0].value.columns)[0] == "Figure"


# ----------------------------------------------------------------- the planner model


def test_every_field_has_a_knob_whose_whole_range_is_valid() -> None:
    for system in planner.SYSTEMS:
        names = system.field_names()
        assert {k.field for k in system.knobs} == set(names), system.name
        for name in names:
            knob = system.knob(name)
            default = system.defaults()[name]
            assert knob.minimum <= knob.to_shown(default) <= knob.maximum, (system.name, name)
            assert knob.to_value(knob.to_shown(default)) == default
            for end in (knob.minimum, knob.maximum):
                value = knob.to_value(end)
                value = int(round(value)) if system.is_integer(name) else value
                system.assumptions(**{name: value})  # raises ValueError if out of bounds


def test_metric_rows_fill_evenly() -> None:
    rows = planner.metric_rows
    assert [len(r) for r in rows(list(range(5)))] == [3, 2]
    assert [len(r) for r in rows(list(range(4)))] == [2, 2]
    assert [len(r) for r in rows(list(range(3)))] == [3]
    assert [x for r in rows(list(range(7))) for x in r] == list(range(7))
    assert rows([]) == []


def _points(fig, name_start: str) -> tuple[list[float], list[float]]:  # type: ignore[no-untyped-def]
    trace = next(t for t in fig.data if t.name and t.name.startswith(name_start))
    return list(trace.x), list(trace.y)


def test_keyspace_chart_ends_at_the_seed_densities() -> None:
    fig = planner.keyspace_fill_chart(planner.capacity.shortener())
    for length, seed_percent in ((6, 21.0), (7, 0.34)):
        years, percents = _points(fig, f"{length} characters")
        assert years[-1] == 10
        assert percents[-1] == pytest.approx(100 * 12e9 / 62**length)
        assert percents[-1] == pytest.approx(seed_percent, rel=0.02)
    # density grows linearly with the years
    years, percents = _points(fig, "8 characters")
    assert percents[4] == pytest.approx(percents[0] * years[4] / years[0])


def test_bloom_chart_marks_the_assumption_on_the_curve() -> None:
    fig = planner.bloom_size_chart(20e9, 0.01)
    x, y = _points(fig, "your assumption")
    assert x == [1.0]  # percent
    assert y[0] == pytest.approx(20e9 * (-math.log(0.01) / math.log(2) ** 2) / 8)
    xs, ys = _points(fig, "filter size")
    assert all(a > b for a, b in zip(ys, ys[1:], strict=False)), "size falls as p grows"


def test_id_split_chart_keeps_the_product_constant() -> None:
    fig = planner.id_split_chart(planner.capacity.ids())
    xs, ys = _points(fig, "every split")
    assert all(x * y == 2**22 for x, y in zip(xs, ys, strict=True))
    assert _points(fig, "your layout") == ([1024], [4096])
    assert _points(fig, "re-partitioned") == ([4096], [1024])


def test_fanout_chart_matches_one_minus_the_chance_all_are_fast() -> None:
    fig = planner.fanout_tail_chart(0.001, 100)
    x, y = _points(fig, "your assumption")
    assert y[0] == pytest.approx(100 * (1 - 0.999**100))
    xs, ys = _points(fig, "one shard slow 0.1%")
    for n, percent in zip(xs, ys, strict=True):
        assert percent == pytest.approx(100 * (1 - 0.999**n))


def test_decay_chart_settles_then_halves_every_half_life() -> None:
    plan = planner.capacity.typeahead()
    fig = planner.decay_chart(plan)
    days, scores = _points(fig, "score")
    factor = 0.5 ** (1 / 7)
    steady = 10_000 / (1 - factor)
    quiet = next(d for d in range(1, len(scores)) if scores[d] < scores[d - 1])
    assert scores[quiet - 1] == pytest.approx(steady, rel=0.02)
    assert scores[quiet - 1 + 7] == pytest.approx(scores[quiet - 1] / 2)


def test_long_tile_texts_get_two_tiles_to_a_row() -> None:
    assert planner.tiles_per_row([("Writes (new links), average", "38.6/s")]) == 3
    assert planner.tiles_per_row([("Origin at peak (×2) (edge absorbs 40%)", "83,300/s")]) == 2
    assert planner.tiles_per_row([("Reads per write", "1,500 reads/write")]) == 2
    assert planner.metric_rows(list("abcde"), 2) == [["a", "b"], ["c", "d"], ["e"]]
