"""Ranking features of a (query, page) pair, computed for the first candidates of a query.

The learned ranker re-scores the top :data:`RERANK_DEPTH` hits of the hand-set blend
(Elasticsearch's ``rescore`` window): first-stage retrieval stays BM25F with its exact
oracles, the features below only reorder the window.

=================  ==========================================================================
``bm25``           BM25F of the whole page (title ×3 + body), divided by the window's best
``titleBm25``      BM25 of the query over the title alone (b = 0.5, window's mean title length)
``titleCoverage``  share of the query's terms in the index's ``title:`` field, each weighted by
                   its idf *among titles* (a word few titles hold names the page)
``titleExact``     1 when the title's terms are exactly the query's
``coverage``       share of the query's terms in the page (below 1 after the OR fallback)
``inLinks``        log(1 + in-links)
``freshness``      ``0.5 ** (age / 30 days)``
``urlDepth``       path segments of the URL
``titleLength``    log(1 + title terms)
=================  ==========================================================================
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from lookup.search.analysis import analyze
from lookup.search.bm25 import K1

FEATURES = (
    "bm25",
    "titleBm25",
    "titleCoverage",
    "titleExact",
    "coverage",
    "inLinks",
    "freshness",
    "urlDepth",
    "titleLength",
)

#: How many of the first-stage hits the learned model reorders.
RERANK_DEPTH = 50
HALF_LIFE_DAYS = 30.0
_TITLE_B = 0.5


def url_depth(url: str) -> int:
    """Non-empty path segments (``/a/b.html`` → 2, the home page → 0)."""
    return len([s for s in urlsplit(url).path.split("/") if s])


def feature_rows(
    plan: Any,
    bm25: np.ndarray,
    titles: list[str],
    urls: list[str],
    inlinks: np.ndarray,
    crawled: np.ndarray,
    term_present: np.ndarray,
    title_present: np.ndarray,
    title_idfs: np.ndarray,
) -> np.ndarray:
    """The feature matrix (candidates × :data:`FEATURES`) of one query's window.

    ``term_present`` and ``title_present`` are (candidates × plan.terms): whether the page
    holds each term, and whether its ``title:`` field does; ``title_idfs`` each term's idf
    over the ``title:`` field.
    """
    n = len(titles)
    out = np.zeros((n, len(FEATURES)))
    if n == 0:
        return out
    idfs = np.asarray(plan.idfs, dtype=np.float64)
    query = set(plan.terms)
    bm = np.asarray(bm25, dtype=np.float64)
    out[:, 0] = bm / bm.max() if bm.max() > 0 else 0.0
    title_terms = [analyze(t).terms for t in titles]
    lengths = np.array([len(t) for t in title_terms], dtype=np.float64)
    avg = max(float(lengths.mean()), 1.0)
    for i, terms in enumerate(title_terms):
        tf = Counter(terms)
        norm = K1 * (1.0 - _TITLE_B + _TITLE_B * lengths[i] / avg)
        hits = np.array([tf.get(t, 0) for t in plan.terms], dtype=np.float64)
        out[i, 1] = float(np.sum(idfs * hits / (hits + norm)))
        out[i, 3] = 1.0 if terms and set(terms) == query else 0.0
    t_idf = np.asarray(title_idfs, dtype=np.float64)
    in_title = np.asarray(title_present, dtype=bool).reshape(n, len(plan.terms))
    out[:, 2] = (in_title * t_idf).sum(axis=1) / t_idf.sum() if t_idf.sum() > 0 else 0.0
    present = np.asarray(term_present, dtype=bool).reshape(n, len(plan.terms))
    out[:, 4] = present.mean(axis=1) if plan.terms else 0.0
    out[:, 5] = np.log1p(np.asarray(inlinks, dtype=np.float64))
    age_days = np.maximum(plan.now - np.asarray(crawled, dtype=np.float64), 0.0) / 86400.0
    out[:, 6] = np.power(0.5, np.minimum(age_days / HALF_LIFE_DAYS, 900.0))
    out[:, 7] = [url_depth(u) for u in urls]
    out[:, 8] = np.log1p(lengths)
    return out


def as_dict(row: np.ndarray) -> dict[str, float]:
    """One row as ``{feature: value}`` (for ``features=true`` and explanations)."""
    return {
        name: float(v) if math.isfinite(v) else 0.0 for name, v in zip(FEATURES, row, strict=True)
    }
