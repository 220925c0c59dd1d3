"""Learned places ranking: simulated sessions over the real places, an IPW pairwise model.

A *session* is a person at a point (near a real place, jittered by a few hundred metres)
searching a radius, half the time for a category word (``q=cafe``), at an hour of the
week. They are shown the hand-set ranking's first page and click with position bias
(:class:`~lookup.kit.ltr.ClickModel`). What they want — the hidden grade, which the
ranker never sees — comes from the place's profile in the database, not from its
features: a closed place is useless (grade 0); an open one is worth its raw average
stars (not the Bayesian score the index keeps), how many reviewed it, and how close it
is relative to the radius asked::

    utility = 2 × (1 - d / radius) + 0.8 × (stars - 3) + 0.5 × min(log(1 + reviews) / log 400, 1)
    grade   = clip(round(utility), 0, 3)           (0 when closed)

The model learns from the clicks, and is compared with today's constants
(``0.5 distance + 0.35 rating + 0.15 relevance``) on held-out sessions by MRR (first
grade ≥ 2) and NDCG@10 with bootstrap intervals and the spread over seeds. The served
model is ``DATA_DIR/models/places`` (:class:`~lookup.kit.modelstore.ModelStore`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lookup.geo.ranking import PLACE_FEATURES
from lookup.kit.ltr import (
    ClickModel,
    Impression,
    LinearRanker,
    bootstrap_ci,
    estimate_propensities,
    mrr,
    ndcg_at,
    simulate_clicks,
    train_pairwise,
)
from lookup.kit.modelstore import ModelStore
from lookup.kit.modelstore.slot import ModelSlot

MODEL_NAME = "places"
#: Results a training session looks at (the first page is the first ``shown`` of them).
WINDOW = 30
RELEVANT = 2
RADII_M = (1000.0, 2000.0, 5000.0)
_WEEK = 7 * 86400


def places_model_slot(store: ModelStore | None) -> ModelSlot:
    """The slot serving the store's current places model (hand-set weights without one)."""
    return ModelSlot(store, MODEL_NAME, PLACE_FEATURES)


def hidden_grade(item: dict[str, Any], radius_m: float) -> int:
    """What a person really thinks of a result (see the module docstring)."""
    if not item.get("openNow"):
        return 0
    stars = item.get("rating")
    stars = 3.0 if stars is None else float(stars)
    reviews = float(item.get("reviews") or 0)
    u = (
        2.0 * max(0.0, 1.0 - float(item["distanceM"]) / radius_m)
        + 0.8 * (stars - 3.0)
        + 0.5 * min(math.log1p(reviews) / math.log(400.0), 1.0)
    )
    return int(min(max(round(u), 0), 3))


@dataclass(frozen=True)
class Session:
    """Where a person stands, what they ask for, and when."""

    lat: float
    lng: float
    radius_m: float
    q: str
    now: float


@dataclass
class Shown:
    """One session's hand-set results with features and hidden grades."""

    session: Session
    ids: list[str]
    x: np.ndarray
    grades: np.ndarray = field(default_factory=lambda: np.zeros(0))


def sessions(index: Any, n: int, *, seed: int, now: float) -> list[Session]:
    """``n`` sessions anchored at real places (uniformly over the places, seeded)."""
    rng = np.random.default_rng(seed)
    base = index.base
    cats = index.vocab.categories
    picks = rng.integers(0, len(base), size=n)
    out = []
    for i in picks.tolist():
        # a few hundred metres away, in a random direction
        dist, bearing = float(rng.uniform(50, 600)), float(rng.uniform(0, 2 * math.pi))
        lat = float(base.lat[i]) + dist * math.cos(bearing) / 111_320.0
        coslat = max(math.cos(math.radians(lat)), 1e-6)
        lng = float(base.lng[i]) + dist * math.sin(bearing) / (111_320.0 * coslat)
        lat = min(max(lat, -90.0), 90.0)
        lng = (lng + 180.0) % 360.0 - 180.0
        q = cats[int(base.category[i])] if rng.random() < 0.5 else ""
        t = now + float(rng.integers(0, _WEEK // 3600)) * 3600.0
        out.append(Session(lat, lng, float(rng.choice(RADII_M)), q, t))
    return out


def show(searcher: Any, s: Session) -> Shown | None:
    """The hand-set first results of a session through the real search path."""
    filters = searcher.check_filters(q=s.q or None)
    res = searcher.search(
        s.lat, s.lng, s.radius_m, filters=filters, limit=WINDOW, widen=True, now=s.now,
        features=True,
    )  # fmt: skip
    items = res.results
    if len(items) < 2:
        return None
    x = np.array([[it["features"][f] for f in PLACE_FEATURES] for it in items])
    used = float(res.radius_used_m)  # the search widens, as it does for a person
    grades = np.array([hidden_grade(it, used) for it in items], dtype=np.float64)
    return Shown(s, [str(it.get("id", it["num"])) for it in items], x, grades)


def _metrics(grades: np.ndarray, ideal: np.ndarray) -> tuple[float, float]:
    return mrr(grades, RELEVANT), ndcg_at(grades, 10, ideal)


def evaluate(shown: list[Shown], ranker: LinearRanker) -> dict[str, np.ndarray]:
    """Per held-out session (with anything relevant): hand vs learned MRR and NDCG@10."""
    rows = []
    for w in shown:
        if not (w.grades > 0).any():
            continue  # nothing worth showing: both rankers score 0
        s = ranker.score(w.x)
        order = sorted(range(len(w.ids)), key=lambda i: (-s[i], i))
        rows.append((*_metrics(w.grades, w.grades), *_metrics(w.grades[order], w.grades)))
    a = np.array(rows).reshape(-1, 4)
    return {"handMrr": a[:, 0], "handNdcg": a[:, 1], "learnedMrr": a[:, 2], "learnedNdcg": a[:, 3]}


def simulate(
    shown: list[Shown], clicks: ClickModel, per_session: int, seed: int
) -> list[Impression]:
    """Clicks of ``per_session`` people per training session on its first page."""
    return simulate_clicks(((w.x, w.grades) for w in shown), clicks, per_session, seed)


@dataclass
class PlacesTrainReport:
    """The model and what its training run measured."""

    ranker: LinearRanker
    figures: dict[str, Any]


def train(
    searcher: Any,
    *,
    n_sessions: int = 1200,
    seed: int = 0,
    seeds: int = 3,
    per_session: int = 10,
    now: float = 1_749_645_000.0,
    clicks: ClickModel | None = None,
    progress: Callable[[str], None] | None = None,
) -> PlacesTrainReport:
    """Simulate, learn and compare on held-out sessions (30 % of them); see the module doc."""
    clicks = clicks or ClickModel()
    say = progress or (lambda _m: None)
    all_s = sessions(searcher.places, n_sessions, seed=seed, now=now)
    shown = []
    for i, s in enumerate(all_s):
        w = show(searcher, s)
        if w is not None:
            shown.append(w)
        if (i + 1) % 200 == 0:
            say(f"searched {i + 1:,}/{len(all_s):,} sessions")
    cut = int(len(shown) * 0.7)
    train_w, test_w = shown[:cut], shown[cut:]
    # Position bias is measured on swap-experiment traffic, never read off the simulator.
    bias = estimate_propensities(
        (w.grades for w in train_w), clicks.clicks, per_list=per_session, seed=seed + 7
    )
    say(f"position bias measured by swaps: eta {bias.eta:.3f} (the simulated people's: "
        f"{clicks.eta:g})")  # fmt: skip
    runs = []
    for k in range(seeds):
        imps = simulate(train_w, clicks, per_session, seed + 1000 * k)
        say(f"seed {seed + 1000 * k}: {len(imps):,} sessions with clicks")
        ranker = train_pairwise(imps, PLACE_FEATURES, eta=bias.eta, seed=seed + k)
        runs.append((ranker, evaluate(test_w, ranker), len(imps)))
    ranker, ev, n_imps = runs[0]
    figures: dict[str, Any] = {
        "sessions": len(shown),
        "trainSessions": len(train_w),
        "heldOutSessions": int(len(ev["handMrr"])),
        "sessionsWithClicks": n_imps,
        "eta": clicks.eta,
        "etaMeasured": round(bias.eta, 4),
        "seed": seed,
        "seeds": seeds,
    }
    for m in ("Mrr", "Ndcg"):
        hand, learned = ev[f"hand{m}"], ev[f"learned{m}"]
        per_seed = [float(r[1][f"learned{m}"].mean()) for r in runs]
        figures[f"hand{m}"] = [round(v, 4) for v in bootstrap_ci(hand, seed=seed)]
        figures[f"learned{m}"] = [round(v, 4) for v in bootstrap_ci(learned, seed=seed)]
        figures[f"gain{m}"] = [round(v, 4) for v in bootstrap_ci(learned - hand, seed=seed)]
        figures[f"learned{m}PerSeed"] = [round(v, 4) for v in per_seed]
        figures[f"noise{m}"] = round(float(np.std(per_seed, ddof=1)) if seeds > 1 else 0.0, 4)
    model = LinearRanker(
        ranker.features,
        ranker.weights,
        ranker.mean,
        ranker.scale,
        meta={**ranker.meta, "figures": figures},
    )
    return PlacesTrainReport(model, figures)


def publish(
    store: ModelStore, report: PlacesTrainReport, *, require_gain: bool = True
) -> tuple[str, bool]:
    """Store as a new version; current only when its held-out NDCG gain is above zero."""
    return store.publish_model(MODEL_NAME, report.ranker, report.figures, require_gain)
