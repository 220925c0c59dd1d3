"""Learning to rank from clicks: an unbiased pairwise model, its metrics and its error bars.

Any ranked list of candidates with numeric features fits: the web search's pages for a
query, the places near a point. Clicks are biased by position (people look at the top),
so a click at rank r counts ``1 / θ_r`` — inverse propensity weighting (Joachims,
Swaminathan & Schnabel 2017, "Unbiased Learning-to-Rank with Biased Feedback"), with
``θ`` measured, not assumed: :func:`estimate_propensities` runs the paper's swap
experiment (RandPair) on a slice of traffic and fits the exponent of ``θ_r = r^-eta``. Each
clicked candidate is paired with every unclicked one shown with it; a logistic
regression on the feature differences (scikit-learn, no intercept) learns a linear
scorer whose weight per feature is also its explanation: ``contribution = w × z``
with ``z`` the feature standardised by the training mean and spread.

Metrics are written out (MRR, NDCG@k with exponential gain) and checked in the tests
against ``sklearn.metrics.ndcg_score``; :func:`bootstrap_ci` gives a percentile interval
for a mean over queries (paired: resample the queries, not the two rankers apart).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "ClickModel",
    "Impression",
    "LinearRanker",
    "PropensityEstimate",
    "bootstrap_ci",
    "estimate_propensities",
    "examination",
    "mrr",
    "ndcg_at",
    "train_pairwise",
]

FORMAT = 1


def examination(positions: np.ndarray | Sequence[int], eta: float) -> np.ndarray:
    """Position-based model: chance a user looks at rank r (1-based) is ``(1 / r) ** eta``."""
    r = np.asarray(positions, dtype=np.float64)
    return np.power(1.0 / r, eta)


@dataclass(frozen=True)
class ClickModel:
    """Position-based clicking: examination ``(1/r) ** eta``; an examined result is clicked
    with ``ε + (1 - ε) (2^g - 1) / (2^max_grade - 1)`` (its hidden grade g)."""

    eta: float = 1.0
    epsilon: float = 0.05
    shown: int = 10
    max_grade: int = 3

    def click_probability(self, grades: np.ndarray) -> np.ndarray:
        """Chance of a click on each rank of a shown list with these hidden grades."""
        g = np.asarray(grades, dtype=np.float64)[: self.shown]
        attract = self.epsilon + (1 - self.epsilon) * (2.0**g - 1) / (2.0**self.max_grade - 1)
        return examination(np.arange(1, len(g) + 1), self.eta) * attract

    def clicks(self, grades: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One session's clicks on the first ``shown`` results (bool per rank)."""
        p = self.click_probability(grades)
        return rng.random(len(p)) < p


@dataclass(frozen=True)
class Impression:
    """One shown list: each row's features, whether it was clicked and its rank (1-based)."""

    features: np.ndarray  # (n, f)
    clicked: np.ndarray  # (n,) bool
    positions: np.ndarray  # (n,) int


def simulate_clicks(
    lists: Iterable[tuple[np.ndarray, np.ndarray]], clicks: ClickModel, per_list: int, seed: int
) -> list[Impression]:
    """``per_list`` simulated people per shown list ``(features, hidden grades)``, each
    seeing its first ``clicks.shown`` rows: the impressions that got at least one click."""
    rng = np.random.default_rng(seed)
    out = []
    for x, grades in lists:
        n = min(clicks.shown, len(grades))
        for _ in range(per_list):
            c = clicks.clicks(grades[:n], rng)
            if c.any():
                out.append(Impression(x[:n], c, np.arange(1, n + 1)))
    return out


@dataclass(frozen=True)
class PropensityEstimate:
    """Examination propensities relative to rank 1 (``θ_k / θ_1``), as a swap experiment
    measured them, and the power-law exponent ``eta`` fitted to them."""

    ratios: dict[int, float]  # rank k -> θ_k / θ_1
    clicks: dict[int, tuple[int, int]]  # rank k -> (clicks at rank k, clicks at rank 1)
    eta: float


def estimate_propensities(
    lists: Iterable[np.ndarray],
    people: Callable[[np.ndarray, np.random.Generator], np.ndarray],
    *,
    per_list: int,
    seed: int,
    shown: int = 10,
) -> PropensityEstimate:
    """Measure position bias with the RandPair intervention (Joachims, Swaminathan &
    Schnabel 2017, §5) instead of assuming it: each person is shown a list with rank 1
    and a random rank ``k`` swapped half of the time. Over both halves the same two results
    sit at rank 1 and at rank ``k`` equally often, so their relevance cancels and the
    click counts' ratio at ``k`` and at 1 estimates ``θ_k / θ_1``. ``eta`` is the
    least-squares slope of ``-log(θ_k / θ_1)`` on ``log k`` (through the origin, weighted
    by clicks). ``people(grades, rng)`` is the only thing that knows how people click: it
    returns one session's clicks for a list in the order shown.
    """
    rng = np.random.default_rng(seed)
    at_k: dict[int, int] = {}
    at_1: dict[int, int] = {}
    for grades in lists:
        g = np.asarray(grades, dtype=np.float64)[:shown]
        if len(g) < 2:
            continue
        for _ in range(per_list):
            k = int(rng.integers(2, len(g) + 1))
            order = g.copy()
            if rng.random() < 0.5:
                order[0], order[k - 1] = g[k - 1], g[0]
            c = people(order, rng)
            at_k[k] = at_k.get(k, 0) + int(c[k - 1])
            at_1[k] = at_1.get(k, 0) + int(c[0])
    ratios = {k: at_k[k] / at_1[k] for k in sorted(at_k) if at_k[k] > 0 and at_1[k] > 0}
    if not ratios:
        raise ValueError("the swap experiment saw no clicks to compare")
    x = np.log(np.array(list(ratios), dtype=np.float64))
    y = -np.log(np.array(list(ratios.values())))
    w = np.array([min(at_k[k], at_1[k]) for k in ratios], dtype=np.float64)
    eta = float(np.sum(w * x * y) / np.sum(w * x * x))
    clicks = {k: (at_k[k], at_1[k]) for k in sorted(at_k)}
    return PropensityEstimate(ratios, clicks, max(0.0, eta))


@dataclass(frozen=True)
class LinearRanker:
    """``score = Σ w_i × (x_i - mean_i) / scale_i``: a model small enough to read."""

    features: tuple[str, ...]
    weights: tuple[float, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    meta: dict[str, Any] = field(default_factory=dict, compare=False)

    def standardise(self, x: np.ndarray) -> np.ndarray:
        """Features on the training scale (what the weights multiply)."""
        return (np.asarray(x, dtype=np.float64) - np.asarray(self.mean)) / np.asarray(self.scale)

    def score(self, x: np.ndarray) -> np.ndarray:
        """One score per row of ``x`` (n × features)."""
        return self.standardise(np.atleast_2d(x)) @ np.asarray(self.weights)

    def contributions(self, x: np.ndarray) -> np.ndarray:
        """Each feature's share of each row's score (rows sum to :meth:`score`)."""
        return self.standardise(np.atleast_2d(x)) * np.asarray(self.weights)

    def to_json(self) -> dict[str, Any]:
        """The model file's content."""
        return {
            "format": FORMAT,
            "kind": "linear-pairwise",
            "features": list(self.features),
            "weights": list(self.weights),
            "mean": list(self.mean),
            "scale": list(self.scale),
            "meta": self.meta,
        }

    @classmethod
    def from_json(cls, data: Any, expected: Sequence[str] | None = None) -> LinearRanker:
        """Parse and check a model file's content; ValueError says what is wrong."""
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError(f"not a ranking model of format {FORMAT}")
        try:
            names = tuple(str(n) for n in data["features"])
            arrays = [tuple(float(v) for v in data[k]) for k in ("weights", "mean", "scale")]
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"ranking model is missing or mangles a field: {exc}") from exc
        if any(len(a) != len(names) for a in arrays):
            raise ValueError("ranking model: weights, mean and scale must match the features")
        if not all(math.isfinite(v) for a in arrays for v in a) or min(arrays[2], default=1) <= 0:
            raise ValueError("ranking model holds a non-finite weight or a non-positive scale")
        if expected is not None and tuple(expected) != names:
            raise ValueError(
                f"ranking model was trained on features {list(names)}, this code computes "
                f"{list(expected)}"
            )
        meta = data.get("meta")
        meta = meta if isinstance(meta, dict) else {}
        weights, mean, scale = arrays
        return cls(names, weights, mean, scale, meta=meta)

    def digest(self) -> str:
        """A short content hash (shown with the version)."""
        raw = json.dumps(self.to_json(), sort_keys=True).encode()
        return hashlib.sha256(raw).hexdigest()[:12]


def _pairs(
    impressions: Iterable[Impression], eta: float, clip: float
) -> tuple[list[np.ndarray], list[float]]:
    diffs: list[np.ndarray] = []
    weights: list[float] = []
    for imp in impressions:
        clicked = np.flatnonzero(imp.clicked)
        if clicked.size == 0 or len(imp.clicked) < 2:
            continue
        prop = examination(imp.positions[clicked], eta) if eta else np.ones(clicked.size)
        for i, p in zip(clicked, prop, strict=True):
            others = np.delete(np.arange(len(imp.clicked)), i)
            diffs.append(imp.features[i] - imp.features[others])
            weights += [min(1.0 / float(p), clip)] * others.size
    return diffs, weights


def train_pairwise(
    impressions: Sequence[Impression],
    features: Sequence[str],
    *,
    eta: float,
    seed: int = 0,
    c: float = 1.0,
    clip: float = 100.0,
    progress: Callable[[str], None] | None = None,
) -> LinearRanker:
    """Fit the IPW pairwise logistic model on click logs (``eta=0``: no debiasing).

    ``eta`` is the position-bias exponent of the examination model; propensities above
    ``clip`` are capped (the usual variance guard). Deterministic for a given seed.
    """
    from sklearn.linear_model import LogisticRegression

    rows = [imp.features for imp in impressions if len(imp.features)]
    if not rows:
        raise ValueError("no impressions to learn from")
    all_x = np.vstack(rows).astype(np.float64)
    mean = all_x.mean(axis=0)
    scale = all_x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    std_imps = [
        Impression((imp.features - mean) / scale, imp.clicked, imp.positions) for imp in impressions
    ]
    diffs, weights = _pairs(std_imps, eta, clip)
    if not diffs:
        raise ValueError("the click log has no clicked-above-unclicked pair to learn from")
    x = np.vstack(diffs)
    w = np.asarray(weights)
    if progress:
        progress(f"fitting on {len(x):,} weighted pairs from {len(impressions):,} impressions")
    # both orientations of every pair: a symmetric problem needs no intercept
    model = LogisticRegression(C=c, fit_intercept=False, max_iter=2000, random_state=seed)
    model.fit(
        np.vstack([x, -x]),
        np.r_[np.ones(len(x)), np.zeros(len(x))],
        sample_weight=np.r_[w, w] / w.mean(),
    )
    coef = model.coef_[0]
    return LinearRanker(
        tuple(features),
        tuple(float(v) for v in coef),
        tuple(float(v) for v in mean),
        tuple(float(v) for v in scale),
        meta={"pairs": int(len(x)), "impressions": len(impressions), "eta": eta, "seed": seed},
    )


def mrr(grades_in_order: Sequence[float] | np.ndarray, relevant: float) -> float:
    """Reciprocal rank of the first candidate with grade ≥ ``relevant`` (0 if none)."""
    for i, g in enumerate(grades_in_order):
        if g >= relevant:
            return 1.0 / (i + 1)
    return 0.0


def _dcg(grades: Sequence[float] | np.ndarray, k: int) -> float:
    return sum((2.0**g - 1.0) / math.log2(i + 2) for i, g in enumerate(list(grades)[:k]))


def ndcg_at(
    grades_in_order: Sequence[float] | np.ndarray,
    k: int,
    ideal: Sequence[float] | np.ndarray | None = None,
) -> float:
    """NDCG@k with gain ``2^g - 1``; ``ideal`` (all judged grades) defaults to the list's."""
    best = _dcg(sorted(ideal if ideal is not None else grades_in_order, reverse=True), k)
    return _dcg(grades_in_order, k) / best if best > 0 else 0.0


def bootstrap_ci(
    values: Sequence[float] | np.ndarray, *, seed: int = 0, rounds: int = 2000, level: float = 0.95
) -> tuple[float, float, float]:
    """Mean of ``values`` (one per query) with a percentile bootstrap interval."""
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        return 0.0, 0.0, 0.0
    rng = np.random.default_rng(seed)
    means = v[rng.integers(0, v.size, size=(rounds, v.size))].mean(axis=1)
    tail = (1.0 - level) / 2.0
    return float(v.mean()), float(np.quantile(means, tail)), float(np.quantile(means, 1 - tail))
