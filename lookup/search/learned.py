"""Learned web-search ranking: serve the active model, and train one from simulated clicks.

Serving: the coordinator's hand-set blend (BM25F × links × freshness) picks the first
:data:`~lookup.search.features.RERANK_DEPTH` hits; :func:`rescore` computes their
features and reorders them by the active :class:`~lookup.kit.ltr.LinearRanker`
(Elasticsearch's ``rescore`` window: rescored hits first, the rest after in their
hand-set order). The model is a JSON file in ``DATA_DIR/models/search``
(:class:`~lookup.kit.modelstore.ModelStore`); :class:`ModelSlot` keeps the current one and
falls back to the hand-set weights — saying why — when it is missing or broken.

Training (:func:`train`, ``lookup search train``): known-item queries from the index's
own titles with a hidden structural relevance (:mod:`lookup.search.clicksim`), clicks
simulated on the hand-set ranking's first page, an IPW pairwise logistic model, and an
evaluation on held-out queries (MRR, NDCG@10) with bootstrap intervals and the spread
over several seeds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lookup.kit.ltr import (
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
from lookup.kit.modelstore.slot import ActiveModel, ModelSlot
from lookup.search.bm25 import idf
from lookup.search.clicksim import (
    MAX_GRADE,
    ClickModel,
    JudgedQuery,
    known_item_queries,
    split_by_target,
)
from lookup.search.features import FEATURES, RERANK_DEPTH, as_dict, feature_rows

MODEL_NAME = "search"
__all__ = ["ActiveModel", "ModelSlot", "TrainReport", "publish", "rescore", "train"]


def search_model_slot(store: ModelStore | None) -> ModelSlot:
    """The slot serving the store's current search model (hand-set weights without one)."""
    return ModelSlot(store, MODEL_NAME, FEATURES)


# --- serving --------------------------------------------------------------------------------
def window_features(snapshot: Any, plan: Any, hits: list[Any]) -> np.ndarray:
    """Feature rows of ``hits`` (batch or real-time documents) for one query."""
    from lookup.search.shard import REALTIME

    titles, urls, crawled = [], [], []
    fields = [f"title:{t}" for t in plan.terms]  # the title field (analysis.analyze_document)
    wanted = (*plan.terms, *fields)
    has = np.zeros((len(hits), len(wanted)), dtype=bool)
    groups: dict[tuple[int, int], list[int]] = {}
    for i, h in enumerate(hits):
        if h.segment == REALTIME:
            mi = snapshot.realtime.indexes[h.shard]
            stored = mi.docs[h.doc].stored
            crawled.append(float(mi.crawled[h.doc]))
            for j, term in enumerate(wanted):
                lists = mi.post.get(term)
                docs = np.asarray(lists[0]) if lists is not None else np.zeros(0, dtype=np.int64)
                k = int(np.searchsorted(docs, h.doc))
                has[i, j] = k < len(docs) and int(docs[k]) == h.doc
        else:
            view = snapshot.shards[h.shard].segments[h.segment]
            stored = view.reader.stored(h.doc)
            crawled.append(float(view.reader.crawled[h.doc]))
            groups.setdefault((h.shard, h.segment), []).append(i)
        titles.append(stored.get("title") or "")
        urls.append(stored.get("url") or "")
    for (shard, segment), rows in groups.items():  # one skip-table probe per term and segment
        reader = snapshot.shards[shard].segments[segment].reader
        docs = np.array([hits[i].doc for i in rows], dtype=np.int64)
        order = np.argsort(docs, kind="stable")
        for j, term in enumerate(wanted):
            pl = reader.postings(term)
            if pl is not None:
                found, _, _ = pl.lookup(docs[order])
                has[np.asarray(rows)[order], j] = found
    inlinks = snapshot.inlinks_for(np.array([h.urlkey for h in hits], dtype=np.int64))
    return feature_rows(
        plan,
        np.array([h.bm25 for h in hits]),
        titles,
        urls,
        inlinks,
        np.array(crawled),
        has[:, : len(plan.terms)],
        has[:, len(plan.terms) :],
        np.array([idf(_df(snapshot, f), plan.n_docs) for f in fields]),
    )


def _df(snapshot: Any, term: str) -> int:
    """Documents holding ``term`` over both tiers (as the coordinator counts them)."""
    rt = snapshot.realtime
    return int(snapshot.df(term)) + (int(rt.state.df.get(term, 0)) if rt is not None else 0)


def rescore(
    snapshot: Any, plan: Any, hits: list[Any], model: ActiveModel | None
) -> tuple[list[Any], dict[tuple[int, int, int], dict[str, Any]]]:
    """Reorder the window by the model (if any); per hit its features and contributions."""
    window = hits[:RERANK_DEPTH]
    extras: dict[tuple[int, int, int], dict[str, Any]] = {}
    if not window:
        return hits, extras
    x = window_features(snapshot, plan, window)
    if model is None:
        for h, row in zip(window, x, strict=True):
            extras[(h.shard, h.segment, h.doc)] = {"features": as_dict(row)}
        return hits, extras
    scores = model.ranker.score(x)
    parts = model.ranker.contributions(x)
    order = sorted(range(len(window)), key=lambda i: (-scores[i], i))  # ties: hand-set order
    rescored = []
    for i in order:
        h = window[i]
        rescored.append(h._replace(score=float(scores[i])))
        extras[(h.shard, h.segment, h.doc)] = {
            "features": as_dict(x[i]),
            "learned": {
                "model": model.version,
                "handScore": h.score,
                "handRank": i + 1,
                "contributions": dict(zip(FEATURES, map(float, parts[i]), strict=True)),
                "score": float(scores[i]),
            },
        }
    return rescored + hits[RERANK_DEPTH:], extras


# --- training and evaluation ------------------------------------------------------------------
@dataclass
class Window:
    """One query's first-stage candidates (hand-set order) with their features."""

    query: JudgedQuery
    urls: list[str]
    x: np.ndarray
    grades: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.grades = np.array([self.query.grade(u) for u in self.urls], dtype=np.float64)


def live_pages(snapshot: Any) -> list[tuple[str, str]]:
    """(url, title) of every live batch document."""
    out = []
    for shard in snapshot.shards:
        for view in shard.segments:
            for doc in np.flatnonzero(view.live):
                stored = view.reader.stored(int(doc))
                out.append((stored["url"], stored.get("title") or ""))
    return out


def collect(
    service: Any,
    queries: list[JudgedQuery],
    now: float,
    progress: Callable[[str], None] | None = None,
) -> list[Window]:
    """Each query's hand-set window through the real search path (``features=True``)."""
    out = []
    for i, q in enumerate(queries):
        body = service.search(q.text, limit=RERANK_DEPTH, now=now, features=True, ranking="hand")
        res = body["results"]
        if res:
            x = np.array([[r["features"][f] for f in FEATURES] for r in res])
            out.append(Window(q, [r["url"] for r in res], x))
        if progress and (i + 1) % 200 == 0:
            progress(f"searched {i + 1:,}/{len(queries):,} queries")
    return out


def simulate(
    windows: list[Window], clicks: ClickModel, sessions: int, seed: int
) -> list[Impression]:
    """``sessions`` simulated users per training query, each shown the hand-set first page."""
    return simulate_clicks(((w.x, w.grades) for w in windows), clicks, sessions, seed)


def _metrics(grades_in_order: np.ndarray, w: Window) -> tuple[float, float]:
    ideal = list(w.grades)
    if MAX_GRADE not in ideal:
        ideal.append(MAX_GRADE)  # the target exists even when the window missed it
    return mrr(grades_in_order, MAX_GRADE), ndcg_at(grades_in_order, 10, ideal)


def evaluate(windows: list[Window], ranker: LinearRanker) -> dict[str, np.ndarray]:
    """Per held-out query: MRR and NDCG@10 of the hand-set order and of the model's."""
    rows = []
    for w in windows:
        s = ranker.score(w.x)
        order = sorted(range(len(w.urls)), key=lambda i: (-s[i], i))
        rows.append((*_metrics(w.grades, w), *_metrics(w.grades[order], w)))
    a = np.array(rows).reshape(-1, 4)
    return {"handMrr": a[:, 0], "handNdcg": a[:, 1], "learnedMrr": a[:, 2], "learnedNdcg": a[:, 3]}


@dataclass
class TrainReport:
    """What a training run found (printed by the CLI, stored in the model's meta)."""

    ranker: LinearRanker
    figures: dict[str, Any]


def _ci(values: np.ndarray, seed: int) -> list[float]:
    return [round(v, 4) for v in bootstrap_ci(values, seed=seed)]


def train(
    service: Any,
    *,
    seed: int = 0,
    seeds: int = 3,
    sessions: int = 20,
    per_page: int = 2,
    clicks: ClickModel | None = None,
    now: float | None = None,
    progress: Callable[[str], None] | None = None,
) -> TrainReport:
    """Train on simulated clicks and compare with the hand weights on held-out queries.

    The query split is fixed by ``seed``; the click logs (and so the models) are drawn
    with ``seeds`` different seeds, whose spread is the run-to-run noise. The first
    seed's model is the one returned.
    """
    clicks = clicks or ClickModel()
    say = progress or (lambda _m: None)
    snap = service.snapshot()
    pages = live_pages(snap)
    now = now if now is not None else time.time()
    queries = known_item_queries(pages, seed=seed, per_page=per_page)
    train_q, test_q = split_by_target(queries, seed=seed)
    say(f"{len(pages):,} pages → {len(train_q):,} training and {len(test_q):,} held-out queries")
    train_w = collect(service, train_q, now, say)
    test_w = collect(service, test_q, now, say)
    # Position bias is measured on swap-experiment traffic, never read off the simulator.
    bias = estimate_propensities(
        (w.grades for w in train_w), clicks.clicks, per_list=sessions, seed=seed + 7
    )
    say(f"position bias measured by swaps: eta {bias.eta:.3f} (the simulated people's: "
        f"{clicks.eta:g})")  # fmt: skip
    runs = []
    for s in range(seeds):
        imps = simulate(train_w, clicks, sessions, seed + 1000 * s)
        say(f"seed {seed + 1000 * s}: {len(imps):,} sessions with clicks")
        ranker = train_pairwise(imps, FEATURES, eta=bias.eta, seed=seed + s, progress=say)
        runs.append((ranker, evaluate(test_w, ranker), len(imps)))
    ranker, ev, n_imps = runs[0]
    naive = train_pairwise(simulate(train_w, clicks, sessions, seed), FEATURES, eta=0.0, seed=seed)
    ev_naive = evaluate(test_w, naive)
    figures: dict[str, Any] = {
        "pages": len(pages),
        "trainQueries": len(train_w),
        "heldOutQueries": len(test_w),
        "sessionsWithClicks": n_imps,
        "eta": clicks.eta,
        "etaMeasured": round(bias.eta, 4),
        "seed": seed,
        "seeds": seeds,
    }
    for m in ("Mrr", "Ndcg"):
        hand, learned = ev[f"hand{m}"], ev[f"learned{m}"]
        per_seed = [float(r[1][f"learned{m}"].mean()) for r in runs]
        figures[f"hand{m}"] = _ci(hand, seed)
        figures[f"learned{m}"] = _ci(learned, seed)
        figures[f"gain{m}"] = _ci(learned - hand, seed)
        figures[f"learned{m}PerSeed"] = [round(v, 4) for v in per_seed]
        figures[f"noise{m}"] = round(float(np.std(per_seed, ddof=1)) if seeds > 1 else 0.0, 4)
        figures[f"naive{m}"] = round(float(ev_naive[f"learned{m}"].mean()), 4)
    model = LinearRanker(
        ranker.features, ranker.weights, ranker.mean, ranker.scale,
        meta={**ranker.meta, "trainedAt": now, "figures": figures},
    )  # fmt: skip
    return TrainReport(model, figures)


def publish(
    store: ModelStore, report: TrainReport, *, require_gain: bool = True
) -> tuple[str, bool]:
    """Store the model as a new version; current only if it beat the hand weights held
    out (:meth:`~lookup.kit.modelstore.ModelStore.publish_model`). Returns (version, current)."""
    return store.publish_model(MODEL_NAME, report.ranker, report.figures, require_gain)
