"""Learned ranking for web search: metrics against sklearn, IPW against a known truth,
the model against the hand weights on held-out queries, and serving through the real path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import ndcg_score

from lookup.kit.ltr import (
    Impression,
    LinearRanker,
    bootstrap_ci,
    estimate_propensities,
    examination,
    mrr,
    ndcg_at,
    train_pairwise,
)
from lookup.kit.models import ModelStore
from lookup.search import SearchService
from lookup.search.clicksim import (
    ClickModel,
    Families,
    known_item_queries,
    path_tokens,
    split_by_target,
)
from lookup.search.coordinator import QueryError
from lookup.search.features import FEATURES, RERANK_DEPTH
from lookup.search.learned import MODEL_NAME, TrainReport, publish, train
from tests.search.corpus import BASE_TIME, CrawlWriter

NOW = BASE_TIME + 40 * 86400
ROOT = Path(__file__).resolve().parents[2]


# --- the pieces, against oracles ---------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=2, max_size=25), st.integers(1, 12))
def test_ndcg_equals_sklearn(grades: list[int], k: int) -> None:
    """NDCG@k of a ranked list equals sklearn's (exponential gain = its gain on 2^g - 1)."""
    if not any(grades):
        assert ndcg_at(grades, k) == 0.0
        return
    scores = np.arange(len(grades), 0, -1, dtype=float)  # the list's order, no ties
    gains = np.array([2.0**g - 1 for g in grades])
    want = ndcg_score(gains[None, :], scores[None, :], k=k)
    assert ndcg_at(grades, k) == pytest.approx(want, abs=1e-9)


@given(st.lists(st.integers(0, 3), max_size=20))
def test_mrr_is_the_first_relevant_rank(grades: list[int]) -> None:
    ranks = [i + 1 for i, g in enumerate(grades) if g >= 3]
    assert mrr(grades, 3) == (1.0 / ranks[0] if ranks else 0.0)


def test_bootstrap_interval_holds_the_mean_and_shrinks_with_data() -> None:
    rng = np.random.default_rng(1)
    small, big = rng.normal(1.0, 1.0, 30), rng.normal(1.0, 1.0, 3000)
    m, lo, hi = bootstrap_ci(small, seed=0)
    assert lo < m < hi and m == pytest.approx(small.mean())
    m2, lo2, hi2 = bootstrap_ci(big, seed=0)
    assert hi2 - lo2 < (hi - lo) / 4  # ~ 1/sqrt(100) as wide


def _synthetic(
    seed: int, eta: float, n_queries: int = 300
) -> tuple[list[Impression], np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
    """Lists whose true relevance is linear in 4 features, logged by a ranker that looks
    mostly at the *wrong* feature, clicked with position bias."""
    rng = np.random.default_rng(seed)
    truth = np.array([1.0, 0.5, 0.0, -0.7])
    imps, held = [], []
    for q in range(n_queries):
        x = rng.normal(size=(10, 4))
        rel = x @ truth
        grades = np.digitize(rel, [-0.5, 0.5, 1.5])  # 0..3
        logged = np.argsort(-(x[:, 2] + 0.5 * x[:, 0]))  # the logging policy
        if q % 3 == 0:
            held.append((x, grades))
            continue
        xs, gs = x[logged], grades[logged]
        clicks = ClickModel(eta=eta, epsilon=0.02).clicks(gs, rng)
        imps.append(Impression(xs, clicks, np.arange(1, 11)))
    return imps, truth, held


def test_ipw_pairwise_recovers_the_hidden_weights_better_than_naive() -> None:
    """Oracle: the true relevance weights. IPW's direction is closer than the naive fit's."""
    imps, truth, held = _synthetic(seed=3, eta=1.5, n_queries=1500)
    names = ("a", "b", "c", "d")
    ipw = train_pairwise(imps, names, eta=1.5, seed=0)
    naive = train_pairwise(imps, names, eta=0.0, seed=0)

    def cosine(model: LinearRanker) -> float:
        w = np.asarray(model.weights) / np.asarray(model.scale)  # back to raw feature units
        return float(w @ truth / np.linalg.norm(w) / np.linalg.norm(truth))

    assert cosine(ipw) > 0.97  # measured 0.993 (naive 0.82)
    assert cosine(ipw) > cosine(naive) + 0.1

    def held_ndcg(model: LinearRanker) -> float:
        return float(np.mean([ndcg_at(g[np.argsort(-model.score(x))], 10) for x, g in held]))

    logged = float(
        np.mean([ndcg_at(g[np.argsort(-(x[:, 2] + 0.5 * x[:, 0]))], 10) for x, g in held])
    )
    assert held_ndcg(ipw) > logged + 0.05


def test_model_file_round_trips_and_refuses_damage() -> None:
    m = LinearRanker(("a", "b"), (0.5, -1.0), (0.0, 2.0), (1.0, 3.0), meta={"x": 1})
    again = LinearRanker.from_json(json.loads(json.dumps(m.to_json())), expected=("a", "b"))
    assert again == m and again.digest() == m.digest()
    x = np.array([[1.0, 5.0], [0.0, 2.0]])
    assert m.contributions(x).sum(axis=1) == pytest.approx(m.score(x))
    bad = [
        {},
        {**m.to_json(), "weights": [1.0]},
        {**m.to_json(), "scale": [1.0, 0.0]},
        {**m.to_json(), "weights": ["x", 1]},
        {**m.to_json(), "format": 99},
    ]
    for data in bad:
        with pytest.raises(ValueError):
            LinearRanker.from_json(data)
    with pytest.raises(ValueError, match="trained on features"):
        LinearRanker.from_json(m.to_json(), expected=("a", "c"))


def test_queries_come_from_titles_and_grades_from_structure() -> None:
    pages = [
        ("http://d.test/lib/json.html", "json — Python standard library"),
        ("http://d.test/lib/json.decoder.html", "json.decoder — Python standard library"),
        ("http://d.test/lib/heapq.html", "heapq — Python standard library"),
        ("http://d.test/lib/bisect.html", "bisect — Python standard library"),
        ("http://d.test/lib/glob.html", "glob — Python standard library"),
    ]
    assert path_tokens(pages[1][0]) == ("lib", "json", "decoder")
    fam = Families(u for u, _ in pages)
    assert fam.kin(pages[1][0]) == [pages[0][0]] and fam.kin(pages[0][0]) == [pages[1][0]]
    assert fam.kin(pages[2][0]) == []  # /lib alone holds most of the site: no kin
    qs = known_item_queries(pages, seed=1, per_page=3)
    assert {q.target for q in qs} == {u for u, _ in pages}
    for q in qs:
        assert q.grade(q.target) == 3
        # boilerplate alone ("Python standard library") is never a query
        assert set(q.text.lower().split()) - {"python", "standard", "library"}
    dec = next(q for q in qs if q.target.endswith("json.decoder.html"))
    assert dec.grade("http://d.test/lib/json.html") == 1  # same family
    assert dec.grade("http://d.test/lib/heapq.html") == 0
    train_q, test_q = split_by_target(qs, seed=0)
    assert {q.target for q in train_q}.isdisjoint({q.target for q in test_q})


def test_click_model_is_position_biased() -> None:
    cm = ClickModel(eta=1.0, epsilon=0.05)
    p = cm.click_probability(np.full(10, 3))
    assert p[0] == pytest.approx(1.0) and p[4] == pytest.approx(0.2)
    rng = np.random.default_rng(0)
    freq = np.mean([cm.clicks(np.full(10, 3), rng) for _ in range(4000)], axis=0)
    assert np.allclose(freq, p, atol=0.03)


@pytest.mark.parametrize("eta", [0.5, 1.0, 1.5])
def test_swaps_measure_the_position_bias_the_people_have(eta: float) -> None:
    """The oracle is the simulated people's own examination curve. The lists are sorted
    best first, as a ranker shows them: a click-rate-per-rank estimate would mix position
    with relevance there, and the swaps must not."""
    rng = np.random.default_rng(11)
    lists = [np.sort(rng.integers(0, 4, size=10).astype(float))[::-1] for _ in range(400)]
    people = ClickModel(eta=eta, epsilon=0.05)
    est = estimate_propensities(lists, people.clicks, per_list=20, seed=5)
    assert est.eta == pytest.approx(eta, abs=0.1)
    for k in (2, 3, 5):
        assert est.ratios[k] == pytest.approx(float(examination([k], eta)[0]), abs=0.08)
    # without the swaps, the same people's click rates per rank overstate the bias
    shown = np.mean([people.clicks(g, rng) for g in lists for _ in range(20)], axis=0)
    naive = float(-np.polyfit(np.log(np.arange(1, 11)), np.log(shown / shown[0]), 1)[0])
    assert naive > eta + 0.2


def test_a_swap_experiment_without_clicks_is_refused() -> None:
    never = ClickModel(eta=1.0, epsilon=0.0)
    with pytest.raises(ValueError, match="no clicks"):
        estimate_propensities([np.zeros(10)] * 5, never.clicks, per_list=5, seed=0)


# --- on the test web: learned vs hand --------------------------------------------------------
@pytest.fixture(scope="module")
def trained(index_4: Path) -> Iterator[TrainReport]:
    svc = SearchService(index_4, realtime=False)
    try:
        yield train(svc, seed=0, seeds=3, sessions=15, now=NOW)
    finally:
        svc.close()


def test_learned_beats_hand_weights_by_more_than_the_noise(trained: TrainReport) -> None:
    """Done means: on held-out queries the model beats the hand weights by a margin larger
    than the run-to-run noise, with a bootstrap interval above zero."""
    f = trained.figures
    print(json.dumps(f))
    assert f["heldOutQueries"] >= 100
    for m in ("Mrr", "Ndcg"):
        gain, lo, _hi = f[f"gain{m}"]
        assert lo > 0, (m, f[f"gain{m}"])
        assert gain > 3 * f[f"noise{m}"], (m, gain, f[f"noise{m}"])
        assert f[f"learned{m}"][0] > f[f"hand{m}"][0]


def test_training_measures_the_position_bias_it_corrects_for(trained: TrainReport) -> None:
    """The IPW weights use the exponent a swap experiment measured, close to the one the
    simulated people have (which training never reads)."""
    f = trained.figures
    print(f"position bias: measured eta {f['etaMeasured']}, the people's {f['eta']}")
    assert f["etaMeasured"] == pytest.approx(f["eta"], abs=0.2)
    assert trained.ranker.meta["eta"] == pytest.approx(f["etaMeasured"], abs=1e-4)


def test_training_is_deterministic(index_4: Path, trained: TrainReport) -> None:
    svc = SearchService(index_4, realtime=False)
    try:
        again = train(svc, seed=0, seeds=1, sessions=15, now=NOW)
    finally:
        svc.close()
    assert again.ranker.weights == trained.ranker.weights
    assert again.figures["gainNdcg"] == trained.figures["gainNdcg"]


@pytest.fixture
def data_dir(tmp_path: Path, index_4: Path, trained: TrainReport) -> Path:
    import shutil

    shutil.copytree(index_4, tmp_path / "search")
    version, live = publish(ModelStore(tmp_path / "models"), trained)
    assert live and version == "v000001"
    return tmp_path


def test_the_service_serves_the_model_and_explains_it(data_dir: Path, trained: TrainReport) -> None:
    svc = SearchService(data_dir / "search", realtime=False, models=data_dir / "models")
    try:
        assert svc.status()["model"]["ranking"] == "learned"
        checked = 0
        for q in ("heap queue", "json decoder", "sorted list", "return value", "path join"):
            hand = svc.search(q, limit=RERANK_DEPTH, now=NOW, ranking="hand", features=True)
            body = svc.search(q, limit=10, now=NOW, explain=True)
            assert body["ranking"] == {"model": "v000001", "kind": "learned"}
            # oracle: the offline model applied to the hand-set window's features
            x = np.array([[r["features"][f] for f in FEATURES] for r in hand["results"]])
            s = trained.ranker.score(x)
            order = sorted(range(len(s)), key=lambda i: (-s[i], i))
            want = [hand["results"][i]["url"] for i in order][:10]
            assert [r["url"] for r in body["results"]] == want
            for r in body["results"]:
                learned = r["explain"]["learned"]
                assert sum(learned["contributions"].values()) == pytest.approx(r["score"], abs=1e-5)
                assert set(learned["contributions"]) == set(FEATURES)
            checked += 1
        assert checked == 5
    finally:
        svc.close()


def test_a_broken_or_missing_model_falls_back_to_hand_weights(data_dir: Path) -> None:
    store = ModelStore(data_dir / "models")
    svc = SearchService(data_dir / "search", realtime=False, models=data_dir / "models")
    hand = SearchService(data_dir / "search", realtime=False)
    try:
        want = [r["url"] for r in hand.search("heap queue", now=NOW)["results"]]
        (store.root / MODEL_NAME / "v000002.json").write_text("{not json")
        store.activate(MODEL_NAME, "v000002")
        body = svc.search("heap queue", now=NOW, explain=True)
        assert [r["url"] for r in body["results"]] == want
        assert body["ranking"]["kind"] == "hand" and "v000002 unusable" in body["ranking"]["reason"]
        assert svc.status()["model"]["ranking"] == "hand"
        with pytest.raises(QueryError) as err:
            svc.search("heap queue", ranking="learned")
        assert err.value.code == "NO_MODEL"
        assert store.rollback(MODEL_NAME) == "v000001"  # the swap back is seen
        svc.models._checked = 0.0  # skip the once-a-second wait
        assert svc.search("heap", explain=True)["ranking"]["kind"] == "learned"
        with pytest.raises(QueryError):
            svc.search("heap", ranking="best")
    finally:
        svc.close()
        hand.close()
    missing = SearchService(data_dir / "search", realtime=False, models=data_dir / "nothing")
    try:
        body = missing.search("heap", trace=True)
        assert body["ranking"] == {"kind": "hand", "reason": "no trained model: hand-set weights"}
    finally:
        missing.close()


def test_model_store_versions_swaps_and_rejects(tmp_path: Path) -> None:
    store = ModelStore(tmp_path)
    assert store.current("search") is None and store.names() == []
    for v in ("v000001", "v000002"):
        src = tmp_path / f"{v}.tmp"
        src.write_text(json.dumps({"v": v}))
        store.publish("search", store.next_version("search"), src)
    assert store.versions("search") == ["v000001", "v000002"]
    assert store.current("search") == "v000002" and store.open("search") == {"v": "v000002"}
    assert store.rollback("search") == "v000001"
    assert store.rollback("search") == "v000002"  # a rollback is a swap: undone by the next
    assert store.rollback("search") == "v000001"
    src = tmp_path / "bad.tmp"
    src.write_text("{}")
    store.reject("search", store.next_version("search"), src, {"why": "worse"})
    assert store.next_version("search") == "v000004"  # a rejected number is never reused
    assert store.current("search") == "v000001"
    with pytest.raises(ValueError):
        store.open("../etc")
    with pytest.raises(LookupError):
        store.activate("search", "v000003")


def test_http_ranking_parameter(data_dir: Path) -> None:
    from starlette.testclient import TestClient

    from lookup.server import create_app

    app = create_app(data_dir, subsystems=["lookup.search.http:mount"])
    with TestClient(app, raise_server_exceptions=False) as c:
        r = c.get("/search", params={"q": "heap queue", "explain": "1"})
        assert r.status_code == 200 and r.json()["ranking"]["kind"] == "learned"
        assert "learned" in r.json()["results"][0]["explain"]
        plain = c.get("/search", params={"q": "heap queue"}).json()
        assert "ranking" not in plain  # the design contract's keys are unchanged
        r = c.get("/search", params={"q": "heap", "ranking": "nope"})
        assert r.status_code == 400 and r.json()["error"] == "INVALID_RANKING"
        r = c.get("/search", params={"q": "heap", "ranking": "hand", "features": "1"})
        assert set(r.json()["results"][0]["features"]) == set(FEATURES)


def test_cli_trains_and_publishes(tmp_path: Path, index_4: Path) -> None:
    import shutil

    shutil.copytree(index_4, tmp_path / "search")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "lookup.cli", "search", "train", "--data-dir", str(tmp_path)]
    run = subprocess.run(
        [*cmd, "--seeds", "2", "--sessions", "10"], capture_output=True, text=True, env=env
    )
    assert run.returncode == 0, run.stderr
    assert "NDCG@10" in run.stdout and "now current" in run.stdout
    assert "searched" in run.stderr  # progress
    assert ModelStore(tmp_path / "models").current("search") == "v000001"
    bad = subprocess.run([*cmd, "--seeds", "0"], capture_output=True, text=True, env=env)
    assert bad.returncode == 2 and "--seeds" in bad.stderr
    none = subprocess.run(
        [*cmd[:-1], str(tmp_path / "empty")], capture_output=True, text=True, env=env
    )
    assert none.returncode == 1 and "no search index" in none.stderr


def test_a_model_without_a_held_out_gain_is_rejected_not_served(tmp_path: Path) -> None:
    store = ModelStore(tmp_path / "models")
    m = LinearRanker(
        FEATURES, (1.0,) * len(FEATURES), (0.0,) * len(FEATURES), (1.0,) * len(FEATURES)
    )
    assert store.publish_model("search", m, {"gainNdcg": [0.02, 0.01, 0.03]}) == ("v000001", True)
    worse = {"gainNdcg": [0.001, -0.004, 0.006]}
    assert store.publish_model("search", m, worse) == ("v000002", False)
    assert store.current("search") == "v000001" and store.versions("search") == ["v000001"]
    reason = json.loads((store.root / "search" / "rejected" / "v000002.reason.json").read_text())
    assert reason["why"] == "no held-out NDCG gain" and reason["gainNdcg"][1] < 0
    assert store.publish_model("search", m, worse, require_gain=False) == ("v000003", True)


def test_real_time_documents_get_the_features_a_rebuild_gives_them(
    crawl: CrawlWriter, tmp_path: Path, trained: TrainReport
) -> None:
    """Oracle for the real-time tier's feature path: the same pages after a batch build."""
    from lookup.kit.models import ActiveModel
    from lookup.search import build_index
    from tests.search.corpus import Page

    build_index(crawl.root, tmp_path / "idx", shards=2)
    live = SearchService(tmp_path / "idx")  # real-time tier on; polled by hand
    live.reload()
    fresh = [
        Page(f"http://fresh.test/q/{i}.html", f"Quokka heap notes {i}",
             f"quokka heap queue notes number {i}", links=[])
        for i in range(4)
    ]  # fmt: skip
    crawl.fetch(fresh, at=NOW)
    assert live.tier is not None and live.tier.poll() == 4
    build_index(crawl.root, tmp_path / "idx2", shards=2)
    batch = SearchService(tmp_path / "idx2", realtime=False)
    try:
        q = "quokka heap notes"
        a = live.search(q, limit=20, now=NOW, features=True, ranking="hand", explain=True)
        b = batch.search(q, limit=20, now=NOW, features=True, ranking="hand")
        assert {r["explain"]["tier"] for r in a["results"]} == {"realtime"}
        assert [r["url"] for r in a["results"]] == [r["url"] for r in b["results"]]
        for ra, rb in zip(a["results"], b["results"], strict=True):
            assert ra["features"] == pytest.approx(rb["features"], abs=1e-9)
        model = ActiveModel(trained.ranker, "t")
        got = live.coordinator.search(live.snapshot(), q, 1, 20, now=NOW, model=model)
        want = batch.coordinator.search(batch.snapshot(), q, 1, 20, now=NOW, model=model)
        assert [r["url"] for r in got["results"]] == [r["url"] for r in want["results"]]
    finally:
        live.close()
        batch.close()
