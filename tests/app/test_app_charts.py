"""Chart details (issue 24, item 18): log axes read in full, legends stay off the titles, and
the outage drill's "What answered" chart tells its story.

``chartstyle`` and ``drillcharts`` are the dashboard's own helpers (``app/``); the drill
data here is shaped as :func:`lookup.fleet.outage_drill` returns it.
"""

from __future__ import annotations

import math

import plotly.graph_objects as go
import pytest
from chartstyle import legend_below, log_axis, log_ticks, tick_label
from drillcharts import drill_figures, drill_story, layer_rates, phase_rates


def test_log_ticks_are_labelled_in_full() -> None:
    values, labels = log_ticks(0.7, 30)
    assert labels == ["1", "2", "5", "10", "20"]  # never "1 2 5 10 2"
    assert values == [1, 2, 5, 10, 20]
    assert log_ticks(0.05, 4)[1] == ["0.05", "0.1", "0.2", "0.5", "1", "2"]
    assert log_ticks(20, 900)[1] == ["20", "50", "100", "200", "500"]


def test_a_wide_log_range_ticks_only_the_powers_of_ten() -> None:
    assert log_ticks(1, 5e6)[1] == ["1", "10", "100", "1k", "10k", "100k", "1M"]


def test_a_narrow_log_range_still_has_two_ticks() -> None:
    values, labels = log_ticks(3.1, 4.4)
    assert len(values) == 2 and labels == ["3.1", "4.4"]


@pytest.mark.parametrize("value,label", [(0.001, "0.001"), (2, "2"), (2000, "2k"),
                                         (3e6, "3M"), (1.5e9, "1.5G")])  # fmt: skip
def test_tick_labels(value: float, label: str) -> None:
    assert tick_label(value) == label


def test_log_axis_sets_the_ticks_and_the_range() -> None:
    fig = go.Figure(go.Bar(x=[0.8, 3.0, 28.0], y=["a", "b", "c"], orientation="h"))
    log_axis(fig, "x", [0.8, 3.0, 28.0, 0.0], title="ms")  # a zero is left out
    axis = fig.layout.xaxis
    assert axis.type == "log" and axis.title.text == "ms"
    assert list(axis.ticktext) == ["1", "2", "5", "10", "20"]
    assert axis.range[0] == pytest.approx(math.log10(0.8 / 1.3))


def test_log_axis_can_tick_the_values_measured() -> None:
    fig = go.Figure(go.Scatter(x=[25, 50, 100, 200, 400, 800], y=[1, 2, 3, 4, 5, 6]))
    log_axis(fig, "x", [25, 800], ticks=[25, 50, 100, 200, 400, 800])
    assert list(fig.layout.xaxis.ticktext) == ["25", "50", "100", "200", "400", "800"]


def test_legend_below_keeps_it_off_the_title() -> None:
    fig = go.Figure(go.Scatter(x=[1, 2], y=[3, 4], name="a"))
    fig.update_layout(title="A title", margin=dict(t=40, b=10))
    legend_below(fig)
    assert fig.layout.legend.y < 0 and fig.layout.legend.yanchor == "top"
    assert fig.layout.margin.b >= 70 and fig.layout.margin.t == 40


def _drill(before: float = 8.0, after: float = 8.0) -> dict:
    """A drill of 8 s, Redis stopped from 2 to 5 s, sampled every 0.25 s: the tier answers
    ``before`` then ``after`` lookups/s; while it is down the store takes them."""
    layers, shared, store, l1 = [], 0.0, 0.0, 0.0
    t = 0.25
    while t <= 8.0:
        down = 2.0 < t <= 5.0
        shared += 0 if down else 0.25 * (before if t <= 2.0 else after)
        store += 0.25 * (8.0 + (8.0 if down else 0.0))
        l1 += 0.25 * 30.0
        layers.append({"t": t, "shared": shared, "store": store, "l1": l1, "negative": 0,
                       "requests": 0, "sharedErrors": 0})  # fmt: skip
        t += 0.25
    events = [{"t": 0.1 * i, "op": "redirect (warm)", "status": 302, "ms": 1.0 + i % 7}
              for i in range(80)]  # fmt: skip
    return {"events": events, "marks": {"stop": 2.0, "start": 5.0}, "layers": layers}


def test_the_drill_shows_the_misses_falling_back_to_the_store_and_returning() -> None:
    drill = _drill()
    rates = phase_rates(drill)
    assert rates["before"]["shared"] == pytest.approx(8.0)
    assert rates["during"]["shared"] == pytest.approx(0.0)
    assert rates["during"]["store"] == pytest.approx(16.0)  # the tier's share moved here
    assert rates["after"]["shared"] == pytest.approx(8.0)
    story = drill_story(drill)
    assert story is not None
    assert "answered **8 lookups/s**" in story and "answered **0/s**" in story
    assert "the store took **16/s**" in story


def test_the_rates_are_per_second_over_the_last_second() -> None:
    frame = layer_rates(_drill())
    steady = frame[(frame["t"] > 1.0) & (frame["t"] <= 2.0)]
    assert steady["shared"].tolist() == pytest.approx([8.0] * len(steady))
    assert steady["l1"].tolist() == pytest.approx([30.0] * len(steady))


def test_the_drill_figures_draw_each_layer_with_the_legend_below() -> None:
    lat, rates = drill_figures(_drill())
    assert [t.name for t in rates.data] == ["Redis tier", "store (PostgreSQL)", "in-process LRU"]
    for fig in (lat, rates):
        assert fig.layout.legend.y < 0  # below the plot: the title stays readable
        assert fig.layout.title.text
        assert any(s.x0 == 2.0 and s.x1 == 5.0 for s in fig.layout.shapes)  # the outage
    assert "1" in lat.layout.yaxis.ticktext and lat.layout.yaxis.type == "log"


def test_a_drill_without_samples_tells_no_story() -> None:
    assert drill_story({"events": [], "marks": {}, "layers": []}) is None
