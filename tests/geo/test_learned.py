"""Learned places ranking: the model beats today's constants on held-out sessions by more
than the run-to-run noise, is served through ``/v1/search``, and falls back when broken."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from starlette.testclient import TestClient

from lookup.geo.learned import MODEL_NAME, PlacesTrainReport, hidden_grade, publish, train
from lookup.geo.ranking import PLACE_FEATURES, blend, score
from lookup.geo.service import PlacesService
from lookup.kit.ltr import LinearRanker
from lookup.kit.models import ModelSlot, ModelStore
from tests.geo.conftest import NOW

ROOT = Path(__file__).resolve().parents[2]
RADIUS = 20_000.0


def busiest_point(svc: PlacesService) -> tuple[float, float]:
    """The middle of the busiest ~15 km cell (the small data set is sparse)."""
    base = svc.require().base
    lat, lng = base.lat.astype(float), base.lng.astype(float)
    cell = np.floor(lat / 0.15) * 10_000 + np.floor(lng / 0.15)
    values, counts = np.unique(cell, return_counts=True)
    inside = cell == values[np.argmax(counts)]
    return float(np.median(lat[inside])), float(np.median(lng[inside]))


def test_blend_is_the_hand_score_without_a_model() -> None:
    rng = np.random.default_rng(0)
    d, rating, rel = rng.uniform(0, 900, 50), rng.uniform(0, 1, 50), rng.uniform(0, 1, 50)
    assert np.array_equal(blend(d, 1000.0, rating, rel), score(d, 1000.0, rating, rel))
    m = LinearRanker(PLACE_FEATURES, (1.0, 0, 0, 0, 2.0, 0), (0.0,) * 6, (1.0,) * 6)
    open_now = rng.random(50) < 0.5
    got = blend(d, 1000.0, rating, rel, m, open_now, np.zeros(50))
    assert got == pytest.approx(np.clip(1 - d / 1000.0, 0, 1) + 2.0 * open_now)


def test_hidden_grade_follows_the_profile_not_the_features() -> None:
    near = {"openNow": True, "rating": 4.5, "reviews": 300, "distanceM": 100}
    assert hidden_grade(near, 2000.0) == 3
    assert hidden_grade({**near, "openNow": False}, 2000.0) == 0
    assert hidden_grade({**near, "rating": 1.5, "distanceM": 1900}, 2000.0) == 0
    assert hidden_grade({**near, "rating": None, "reviews": 0}, 2000.0) == 2


@pytest.fixture(scope="module")
def service(
    built_data_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PlacesService]:
    data = tmp_path_factory.mktemp("places-ltr")
    shutil.copytree(built_data_dir, data, dirs_exist_ok=True)
    svc = PlacesService(data, cache_ttl=0.0)
    assert svc.ready()
    yield svc
    svc.close()


@pytest.fixture(scope="module")
def trained(service: PlacesService) -> PlacesTrainReport:
    return train(service.searcher(), n_sessions=800, seed=0, seeds=3, per_session=8, now=NOW)


def test_learned_beats_the_constants_by_more_than_the_noise(trained: PlacesTrainReport) -> None:
    f = trained.figures
    print(json.dumps(f))
    assert f["heldOutSessions"] >= 20
    for m in ("Mrr", "Ndcg"):
        gain, lo, _hi = f[f"gain{m}"]
        assert lo > 0, (m, f[f"gain{m}"])
        assert gain > 3 * f[f"noise{m}"], (m, gain, f[f"noise{m}"])
    # what the simulated people care about most: being open
    weights = dict(zip(trained.ranker.features, trained.ranker.weights, strict=True))
    assert weights["openNow"] == max(weights.values())


def test_training_measures_the_position_bias_it_corrects_for(trained: PlacesTrainReport) -> None:
    """The IPW weights use the exponent a swap experiment measured, close to the one the
    simulated people have (which training never reads)."""
    f = trained.figures
    print(f"position bias: measured eta {f['etaMeasured']}, the people's {f['eta']}")
    assert f["etaMeasured"] == pytest.approx(f["eta"], abs=0.2)
    assert trained.ranker.meta["eta"] == pytest.approx(f["etaMeasured"], abs=1e-4)


def test_training_is_deterministic(service: PlacesService, trained: PlacesTrainReport) -> None:
    again = train(service.searcher(), n_sessions=800, seed=0, seeds=1, per_session=8, now=NOW)
    assert again.ranker.weights == trained.ranker.weights


@pytest.fixture
def served(service: PlacesService, trained: PlacesTrainReport) -> Iterator[PlacesService]:
    store = ModelStore(service.data_dir / "models")
    shutil.rmtree(store.root, ignore_errors=True)
    version, live = publish(store, trained)
    assert live and version == "v000001"
    service.models._checked = 0.0
    yield service
    shutil.rmtree(store.root, ignore_errors=True)
    service.models._checked = 0.0


def test_search_ranks_by_the_model_with_its_own_cursors(
    served: PlacesService, trained: PlacesTrainReport
) -> None:
    s = served.searcher()
    model = served.ranker("auto")
    assert model is not None and model.weights == trained.ranker.weights
    lat, lng = busiest_point(served)
    hand = s.search(lat, lng, RADIUS, limit=50, now=NOW, widen=False, features=True)
    learned = s.search(lat, lng, RADIUS, limit=50, now=NOW, widen=False, model=model)
    assert hand.total == learned.total and hand.total > 50
    # oracle: the model applied by hand to the hand ranking's features, on the same set
    full = s.search(lat, lng, RADIUS, limit=100, now=NOW, widen=False, features=True, model=model)
    x = np.array([[r["features"][f] for f in PLACE_FEATURES] for r in full.results])
    s_offline = trained.ranker.score(x)
    assert [r["score"] for r in full.results] == pytest.approx(np.round(s_offline, 4), abs=1e-4)
    assert s_offline.tolist() == sorted(s_offline.tolist(), reverse=True)
    assert [r["id"] for r in learned.results] != [r["id"] for r in hand.results]
    # walking the learned pages with cursors gives the same order, no repeats
    walked: list[str] = []
    cursor = None
    for _ in range(5):
        page = s.search(
            lat, lng, RADIUS, limit=10, now=NOW, widen=False, model=model, cursor=cursor
        )
        walked += [r["id"] for r in page.results]
        cursor = page.next_cursor
    assert walked == [r["id"] for r in learned.results]
    with pytest.raises(Exception, match="different search"):  # a hand cursor is not a model's
        first = s.search(lat, lng, RADIUS, limit=10, now=NOW, widen=False)
        s.search(
            lat, lng, RADIUS, limit=10, now=NOW, widen=False, model=model, cursor=first.next_cursor
        )


def test_http_switch_and_fallback(served: PlacesService) -> None:
    from lookup.server import create_app

    data = served.data_dir
    app = create_app(data, subsystems=["lookup.geo.http:mount"])
    lat, lng = busiest_point(served)
    q = {"lat": lat, "lng": lng, "radius": RADIUS, "limit": 20, "widen": "false"}
    with TestClient(app, raise_server_exceptions=False) as c:
        learned = c.get("/v1/search", params={**q, "explain": "1"})
        assert learned.status_code == 200
        assert learned.json()["explain"]["ranking"]["ranking"] == "learned"
        for item in learned.json()["results"]:  # each result's score, feature by feature
            assert sum(item["contributions"].values()) == pytest.approx(item["score"], abs=1e-3)
        hand = c.get("/v1/search", params={**q, "ranking": "hand", "explain": "1"}).json()
        assert hand["explain"]["ranking"] == {"ranking": "hand", "reason": "asked for"}
        assert list(learned.json()) == list(hand)  # the same contract
        bad = c.get("/v1/search", params={**q, "ranking": "best"})
        assert bad.status_code == 400
        # a broken model: the constants serve, and the reason is shown
        store = ModelStore(data / "models")
        (store.root / MODEL_NAME / "v000002.json").write_text('{"format": 1}')
        store.activate(MODEL_NAME, "v000002")
        deadline = time.monotonic() + 15.0  # the service re-reads the store once a second
        while True:
            fell = c.get("/v1/search", params={**q, "explain": "1"}).json()
            if fell["explain"]["ranking"]["ranking"] == "hand" or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert fell["explain"]["ranking"]["ranking"] == "hand"
        assert "v000002 unusable" in fell["explain"]["ranking"]["reason"]
        assert [r["id"] for r in fell["results"]] == [r["id"] for r in hand["results"]]
        strict = c.get("/v1/search", params={**q, "ranking": "learned"})
        assert strict.status_code == 400 and strict.json()["error"] == "NO_MODEL"


def test_cli_trains_and_publishes(tmp_path: Path, built_data_dir: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(built_data_dir, data)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "lookup.cli", "places", "train", "--data-dir", str(data)]
    run = subprocess.run(
        [*cmd, "--sessions", "600", "--seeds", "2"], capture_output=True, text=True, env=env
    )
    assert run.returncode == 0, run.stderr
    assert "NDCG@10" in run.stdout and "now current" in run.stdout and "searched" in run.stderr
    assert ModelStore(data / "models").current("places") == "v000001"
    bad = subprocess.run([*cmd, "--seeds", "0"], capture_output=True, text=True, env=env)
    assert bad.returncode == 2
    none = subprocess.run(
        [*cmd[:-1], str(tmp_path / "empty")], capture_output=True, text=True, env=env
    )
    assert none.returncode == 1 and "lookup datasets build places" in none.stderr


def test_a_request_reports_the_model_it_ranked_by(
    served: PlacesService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store swaps to a broken model between ranking and reporting: the answer still
    says which model ranked it (CI once saw a learned order reported as the hand-set one)."""
    from lookup.server import create_app

    app = create_app(served.data_dir, subsystems=["lookup.geo.http:mount"])
    lat, lng = busiest_point(served)
    q = {"lat": lat, "lng": lng, "radius": RADIUS, "limit": 20, "widen": "false"}
    with TestClient(app, raise_server_exceptions=False) as c:
        active = served.models.get()
        assert active is not None
        reads = iter([active])  # the first read sees the model, every later one the swap
        monkeypatch.setattr(ModelSlot, "get", lambda *a, **k: next(reads, None))
        body = c.get("/v1/search", params={**q, "explain": "1"}).json()
        assert body["explain"]["ranking"]["ranking"] == "learned"
        assert body["explain"]["ranking"]["version"] == active.version
        assert all("contributions" in r for r in body["results"])
