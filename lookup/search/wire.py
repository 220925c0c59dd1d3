"""The shard protocol's wire format: a query plan out, a shard's answer back, as JSON.

A plan (:class:`~lookup.search.bm25.QueryPlan`) is a tree of frozen dataclasses — the
signals, the phrases, a query-language AST (:mod:`.query`) and its scoring
(:mod:`.matching`). They travel as JSON objects naming their class, and only the classes
listed in :data:`WIRE_TYPES` are rebuilt on the other side: a request can make a shard
server build a plan and nothing else (no pickle, so no code runs from a request).
Floats go through ``repr`` (shortest round trip), so every idf, weight and score comes
back bit for bit and a remote shard scores exactly as the in-process one.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import numpy as np
import orjson

from lookup.search import query as query_lang
from lookup.search.analysis import Phrase
from lookup.search.bm25 import QueryPlan, Signals
from lookup.search.facets import FACETS, FacetCounts
from lookup.search.matching import Scoring
from lookup.search.shard import Hit, ShardAnswer

#: The classes a plan may hold, by the name they travel under.
WIRE_TYPES: dict[str, type] = {
    cls.__name__: cls
    for cls in (
        QueryPlan,
        Signals,
        Phrase,
        Scoring,
        query_lang.Term,
        query_lang.Prefix,
        query_lang.PhraseNode,
        query_lang.Fuzzy,
        query_lang.Boost,
        query_lang.AnyOf,
        query_lang.FieldTerm,
        query_lang.FieldPrefix,
        query_lang.CrawledRange,
        query_lang.And,
        query_lang.Or,
        query_lang.Not,
    )
}
#: Nesting a decoded plan may have (a query is at most a few dozen nodes deep).
MAX_DEPTH = 64


class WireError(ValueError):
    """A request or answer that is not a well-formed plan or shard answer."""


def _encode(value: Any) -> Any:
    if value is None or isinstance(value, (bool, str, int, float)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple):
        return {"t": [_encode(v) for v in value]}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, (frozenset, set)):
        return {"s": [_encode(v) for v in value]}
    if isinstance(value, dict):
        return {"m": [[_encode(k), _encode(v)] for k, v in value.items()]}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        name = type(value).__name__
        if WIRE_TYPES.get(name) is not type(value):
            raise TypeError(f"{name} cannot be sent to a shard")
        return {
            "c": name,
            "f": {f.name: _encode(getattr(value, f.name)) for f in dataclasses.fields(value)},
        }
    raise TypeError(f"{type(value).__name__} cannot be sent to a shard")


def _decode(value: Any, depth: int = 0) -> Any:
    if depth > MAX_DEPTH:
        raise WireError("the plan is nested too deeply")
    if value is None or isinstance(value, (bool, str, int, float)):
        return value
    if isinstance(value, list):
        return [_decode(v, depth + 1) for v in value]
    if not isinstance(value, dict) or len(value) not in (1, 2):
        raise WireError("not a plan value")
    if "t" in value and len(value) == 1:
        return tuple(_decode(v, depth + 1) for v in _items(value["t"]))
    if "s" in value and len(value) == 1:
        return frozenset(_decode(v, depth + 1) for v in _items(value["s"]))
    if "m" in value and len(value) == 1:
        out = {}
        for pair in _items(value["m"]):
            if not isinstance(pair, list) or len(pair) != 2:
                raise WireError("a mapping entry is not a [key, value] pair")
            out[_decode(pair[0], depth + 1)] = _decode(pair[1], depth + 1)
        return out
    name = value.get("c")
    cls = WIRE_TYPES.get(name) if isinstance(name, str) else None
    fields = value.get("f")
    if cls is None or not isinstance(fields, dict):
        raise WireError(f"unknown plan type {name!r}")
    names = {f.name for f in dataclasses.fields(cls)}
    if not names.issuperset(fields):
        raise WireError(f"{cls.__name__} has no field {sorted(set(fields) - names)}")
    try:
        return cls(**{k: _decode(v, depth + 1) for k, v in fields.items()})
    except TypeError as exc:
        raise WireError(f"{cls.__name__}: {exc}") from None


def _items(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise WireError("a sequence is not a list")
    return value


def encode_plan(plan: QueryPlan) -> bytes:
    """A plan as the JSON a shard server accepts."""
    return json.dumps(_encode(plan), separators=(",", ":")).encode()


def decode_plan(body: bytes) -> QueryPlan:
    """A plan from a request body (:class:`WireError` for anything else)."""
    try:
        plan = _decode(json.loads(body))
    except (ValueError, UnicodeDecodeError) as exc:
        if isinstance(exc, WireError):
            raise
        raise WireError("the request body is not valid JSON") from None
    except RecursionError:
        raise WireError("the plan is nested too deeply") from None
    if not isinstance(plan, QueryPlan):
        raise WireError("the body is not a query plan")
    if not isinstance(plan.k, int) or not 0 <= plan.k <= 100_000:
        raise WireError("the plan's k must be an integer from 0 to 100000")
    if len(plan.terms) != len(plan.idfs) or len(plan.terms) != len(plan.dfs):
        raise WireError("the plan needs one idf and one df per term")
    return plan


def encode_answer(answer: ShardAnswer, version: str) -> bytes:
    """A shard's answer, and the index version it was computed on, as JSON."""
    facets = None
    if answer.facets is not None:
        facets = {"exact": answer.facets.exact, "counts": answer.facets.counts}
    body = {
        "version": version,
        "shard": answer.shard,
        "hits": [list(h) for h in answer.hits],
        "matched": answer.matched,
        "mode": answer.mode,
        "docs": answer.docs,
        "tookMs": answer.took_ms,
        "exact": answer.exact,
        "facets": facets,
    }
    return orjson.dumps(body, option=orjson.OPT_SERIALIZE_NUMPY)


def decode_answer(body: bytes) -> tuple[ShardAnswer, str]:
    """``(answer, version)`` from a shard server's reply (:class:`WireError` if malformed)."""
    try:
        raw = orjson.loads(body)
        hits = [
            Hit(float(s), int(k), float(b), int(sh), int(seg), int(d))
            for s, k, b, sh, seg, d in raw["hits"]
        ]
        facets = None
        if raw.get("facets") is not None:
            facets = FacetCounts()
            facets.exact = bool(raw["facets"]["exact"])
            counts = raw["facets"]["counts"]
            for name in FACETS:
                facets.counts[name].update({str(v): int(n) for v, n in counts[name].items()})
        answer = ShardAnswer(
            shard=int(raw["shard"]),
            hits=hits,
            matched=int(raw["matched"]),
            mode=str(raw["mode"]),
            docs=int(raw["docs"]),
            took_ms=float(raw["tookMs"]),
            exact=bool(raw["exact"]),
            facets=facets,
        )
        return answer, str(raw["version"])
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as exc:
        raise WireError(f"a malformed shard answer: {exc}") from None


__all__ = [
    "WIRE_TYPES",
    "WireError",
    "decode_answer",
    "decode_plan",
    "encode_answer",
    "encode_plan",
]
