"""The places page's ranking switch: hand-set vs learned, and where the order changes."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import serve_in_thread

PLACES = "views/places.py"
TOKYO = "Shinjuku, Tokyo"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from lookup.datasets import places

    data_dir = tmp_path_factory.mktemp("places-rank")
    places.build(data_dir, count=3_000, progress=False)
    return data_dir


@pytest.fixture(scope="module")
def places_api(built: Path) -> Iterator[str]:
    from lookup.server import create_app

    with serve_in_thread(create_app(built), timeout_s=60) as url:
        yield url


def _train(data_dir: Path) -> None:
    from lookup.geo.learned import publish, train
    from lookup.geo.service import PlacesService
    from lookup.kit.models import ModelStore

    svc = PlacesService(data_dir, cache_ttl=0.0)
    try:
        assert svc.ready()
        report = train(svc.searcher(), n_sessions=600, seed=0, seeds=1, per_session=8)
    finally:
        svc.close()
    assert publish(ModelStore(data_dir / "models"), report)[1]


def _widget(at: AppTest, key: str) -> Any:
    for kind in (at.selectbox, at.select_slider, at.segmented_control):
        for w in kind:
            if w.key == key:
                return w
    raise AssertionError(key)


def _results(at: AppTest) -> Any:
    tables = [d.value for d in at.dataframe if "Distance (m)" in d.value.columns]
    assert len(tables) == 1
    return tables[0]


def _set_up(at: AppTest) -> AppTest:
    _widget(at, "places.preset").set_value(TOKYO).run()
    _widget(at, "places.radius").set_value(20_000).run()
    return at


def test_learned_without_a_model_names_the_command(
    places_api: str, visit: Callable[[str, str], AppTest]
) -> None:
    at = _set_up(visit(PLACES, places_api))
    assert "vs hand-set" not in _results(at).columns
    _widget(at, "places.ranking").set_value("learned").run()
    assert not at.exception
    assert any("lookup places train" in w.value for w in at.warning)


def test_the_learned_ranking_is_trained_from_the_page(
    built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    visit: Callable[[str, str], AppTest],
) -> None:  # fmt: skip
    """Issue 24, item 16: "Learned" with no model offers to train one; the button trains it
    through the API (``POST /v1/places/model/train``) with a progress bar, and afterwards
    the learned ranking answers."""
    import placestrain  # app/placestrain.py: the page's training panel

    from lookup.server import create_app

    data_dir = tmp_path / "data"
    shutil.copytree(built, data_dir, ignore=shutil.ignore_patterns("models"))
    monkeypatch.setenv("LOOKUP_DATA_DIR", str(data_dir))  # where the admin token is
    monkeypatch.setattr(placestrain, "OPTIONS", {"sessions": 300, "seeds": 1, "clicks": 8})
    with serve_in_thread(create_app(data_dir), timeout_s=60) as api:
        at = _set_up(visit(PLACES, api))
        _widget(at, "places.ranking").set_value("learned").run()
        assert any("Train the learned ranking" in w.value for w in at.warning)
        button = at.button(key="places.train")
        assert button.label == "Train the learned ranking" and not button.disabled
        button.click().run(timeout=300)
        assert not at.exception, [e.value for e in at.exception]
        job = httpx.get(f"{api}/v1/places/model/train").json()
        assert job["state"] == "succeeded" and job["result"]["live"], job
        version = job["result"]["version"]
        assert any(f"Model `{version}` now ranks" in s.value for s in at.success)
        assert not at.warning  # no "No learned ranking yet" any more
        assert "vs hand-set" in _results(at).columns  # the learned ranking answers
        assert at.button(key="places.train").label == "Train again"
        assert any(f"model `{version}` serves it" in c.value for c in at.caption)


def test_learned_ranking_shows_each_places_move(
    built: Path, places_api: str, visit: Callable[[str, str], AppTest]
) -> None:
    _train(built)
    deadline = time.monotonic() + 15.0  # the API re-reads the model store within a second
    while True:
        r = httpx.get(
            f"{places_api}/v1/search", params={"lat": 35.69, "lng": 139.70, "ranking": "learned"}
        )
        if r.status_code == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert r.status_code == 200, r.text
    at = _set_up(visit(PLACES, places_api))
    _widget(at, "places.ranking").set_value("learned").run()
    assert not at.exception
    table = _results(at)
    moves = list(table["vs hand-set"])
    # oracle: the API's own hand-set ranking of the same search, compared here
    lat, lng = at.session_state["places.lat"], at.session_state["places.lng"]
    hand = httpx.get(
        f"{places_api}/v1/search",
        params={
            "lat": lat,
            "lng": lng,
            "radius": 20_000,
            "limit": 100,
            "ranking": "hand",
        },
    ).json()["results"]
    where = {p["id"]: i for i, p in enumerate(hand, start=1)}
    for rank, (pid, move) in enumerate(zip(table["Id"], moves, strict=True), start=1):
        before = where.get(pid)
        want = (
            "new"
            if before is None
            else "="
            if before == rank
            else f"▲ {before - rank}"
            if before > rank
            else f"▼ {rank - before}"
        )
        assert move == want
    assert any(m != "=" for m in moves), "the learned model reorders this search"
    assert any("sit elsewhere in the hand-set order" in c.value for c in at.caption)
