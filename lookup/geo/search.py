"""Radius and map-area search: plan cells, filter exactly, rank, page, cache.

A radius search (the seed's flow): the planner picks the cells (the 3×3 block at the
precision chosen from the radius and density), the index returns the places in them
within the exact haversine radius, the filters drop the wrong category, price or the
closed, the text query keeps places whose name, category or tags match, and the
score orders what is left. Pages follow an opaque cursor over the sort key
``(score desc, distance asc, place number asc)``, signed with HMAC-SHA256 (the
service's key lives in the data directory), so a forged radius or position is a 400.
When fewer than :data:`WIDEN_UNTIL` places match, the radius widens (2 km, 5 km, 10 km,
20 km) and the answer says which was used; the page size plays no part in it.
``sort="distance"`` orders the same matches by ``(distance, place number)`` instead
(Redis ``GEOSEARCH … ASC``, Elasticsearch's ``_geo_distance`` sort).

Nearest-k (:meth:`ProximitySearch.nearest`): no radius at all — the k nearest places
passing the filters, however far (PostGIS ``ORDER BY geom <-> point LIMIT k``), found
by a best-first walk over the planner's own cells (:mod:`lookup.geo.nearest`); pages
continue by ``(distance, place number)``, and ``total`` counts the places seen so far
(a lower bound, ``totalRelation: gte``, until the last page). The signed cursors and
the request checks live in :mod:`lookup.geo.paging`.

A map area answers pins (ranked from the rectangle's centre) or, past ``max_pins``,
clusters; pins cut by ``limit`` say ``truncated`` and carry a ``nextCursor`` to the rest.

The result cache is keyed by the user's geohash-6 cell (plus filters, radius and the
index version): its entry holds every candidate within the radius *plus the cell's
half-diagonal* of the cell centre, so the exact filter and the scores are recomputed
for each actual user — everyone in a cell shares one entry, and the answer is still
exact.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lookup.geo import geohash as gh
from lookup.geo.hours import minute_of_week
from lookup.geo.index import Box, GeohashIndex, PlaceColumns, Plan, Planner
from lookup.geo.nearest import DIST_SCALE, nearest_rows
from lookup.geo.paging import (
    DEFAULT_LIMIT,
    DEFAULT_RADIUS_M,
    PROCESS_CURSOR_KEY,
    SearchError,
    check_limit,
    check_point,
    check_radius,
    check_sort,
    decode_cursor,
    encode_cursor,
    fingerprint,
    model_digest,
)

# the limits and checks moved to lookup.geo.paging; these names stay importable from here
from lookup.geo.paging import MAX_LIMIT as MAX_LIMIT
from lookup.geo.paging import MAX_RADIUS_M as MAX_RADIUS_M
from lookup.geo.paging import MIN_RADIUS_M as MIN_RADIUS_M
from lookup.geo.ranking import PLACE_FEATURES, blend, haversine_m, place_features, score
from lookup.kit.cache import MISSING, SingleFlight, TTLCache

#: Radii tried in turn when a first page comes back short.
WIDEN_STEPS_M = (2_000.0, 5_000.0, 10_000.0, 20_000.0)
#: Widening stops at the first radius where this many places match (after the filters),
#: whatever the page size: a search's answer (its radius, total and order) is one, and
#: ``limit`` only cuts it into pages.
WIDEN_UNTIL = 20
#: Geohash precision of the result-cache key (≈1.2 km × 0.6 km cells).
CACHE_PRECISION = 6
#: A map view with more matches than this answers with clusters instead of pins.
MAX_PINS = 300
_SCORE_SCALE = 1e9  # sort keys are integers: score in 1e-9, distance in micrometres
_DIST_SCALE = DIST_SCALE
#: Where a nearest-k answer with no place says it looked: the whole sphere (πR).
WHOLE_EARTH_M = math.pi * gh.EARTH_RADIUS_M


@dataclass(frozen=True)
class Filters:
    """What a search keeps besides distance."""

    categories: tuple[str, ...] = ()
    open_now: bool = False
    prices: tuple[int, ...] = ()
    q: str = ""
    #: Stars (0-5) of the rating the ranking uses (a place's column ``rating`` × 5).
    min_rating: float | None = None

    def key(self) -> tuple[Any, ...]:
        return (
            tuple(sorted(self.categories)),
            self.open_now,
            tuple(sorted(self.prices)),
            self.q.strip().casefold(),
            self.min_rating,
        )


@dataclass
class Matches:
    """Every place matching one query at one radius, with its distance, score and sort keys."""

    cols: PlaceColumns
    dist: np.ndarray
    score: np.ndarray
    relevance: np.ndarray
    score_key: np.ndarray
    dist_key: np.ndarray

    def __len__(self) -> int:
        return len(self.dist)

    def order(self) -> np.ndarray:
        """Row order: score desc, then distance, then place number."""
        return np.lexsort((self.cols.num, self.dist_key, -self.score_key))

    def first(
        self, limit: int, rows: np.ndarray | None = None, *, sort: str = "score"
    ) -> np.ndarray:
        """The first ``limit`` of ``rows`` (default: all) in :meth:`order`'s order (with
        ``sort="distance"``: by distance, then place number), without sorting the rest:
        only rows at least as good as the ``limit``-th best are sorted."""
        rows = np.arange(len(self)) if rows is None else rows
        by_distance = sort == "distance"
        if len(rows) > 4 * limit:
            if by_distance:
                key = self.dist_key[rows]
                rows = rows[key <= np.partition(key, limit - 1)[limit - 1]]
            else:
                key = self.score_key[rows]
                kth = np.partition(key, len(key) - limit)[len(key) - limit]
                rows = rows[key >= kth]  # every row above the limit-th best, and its ties
        if by_distance:
            best = np.lexsort((self.cols.num[rows], self.dist_key[rows]))
        else:
            best = np.lexsort((self.cols.num[rows], self.dist_key[rows], -self.score_key[rows]))
        return rows[best[:limit]]

    def after(self, cursor: tuple[int, int, int], sort: str = "score") -> np.ndarray:
        """Rows that come after a cursor's ``(score key, distance key, place number)``."""
        s, d, n = cursor
        sk, dk, nk = self.score_key, self.dist_key, self.cols.num
        later = (dk > d) | ((dk == d) & (nk > n))
        if sort == "distance":
            return np.flatnonzero(later)
        return np.flatnonzero((sk < s) | ((sk == s) & later))


@dataclass
class RankedPage:
    """One page of a radius search ranked and cut, before its places' profiles are read.

    :attr:`nums` are the places :meth:`ProximitySearch.finish` hydrates: a server ranks
    on its event loop (memory only) and reads the profiles it does not hold in a thread.
    """

    matches: Matches
    page: np.ndarray
    radius_used_m: float
    next_cursor: str | None
    plan: Plan
    read: int
    cache_hit: bool
    now: float
    widened: list[float]
    started: float
    features: bool = False
    #: None: every match (``len(matches)``); nearest-k: the places of this and earlier pages
    total: int | None = None
    total_exact: bool = True
    scored: bool = True  # False for nearest-k: no radius, so no score; ordered by distance

    @property
    def nums(self) -> list[int]:
        """The page's place numbers, best first."""
        return self.matches.cols.num[self.page].tolist()  # type: ignore[no-any-return]


@dataclass
class SearchResult:
    """One page of a radius search, and how it was found."""

    results: list[dict[str, Any]]
    radius_used_m: float
    next_cursor: str | None
    total: int
    plan: Plan
    read: int
    cache_hit: bool
    took_ms: float
    widened: list[float] = field(default_factory=list)
    #: False when :attr:`total` is a lower bound (nearest-k before its last page)
    total_exact: bool = True

    def to_json(self, *, explain: bool = False) -> dict[str, Any]:
        """The HTTP body (``explain`` adds how the answer was found)."""
        body: dict[str, Any] = {
            "results": self.results,
            "radiusUsedM": _num(self.radius_used_m),
            "nextCursor": self.next_cursor,
            "total": self.total,
        }
        if not self.total_exact:  # as Elasticsearch's hits.total.relation
            body["totalRelation"] = "gte"
        if explain:
            body["explain"] = {
                **self.plan.describe(),
                "read": self.read,
                "matched": self.total,
                "cacheHit": self.cache_hit,
                "tookMs": round(self.took_ms, 3),
                "radiiTriedM": [_num(r) for r in self.widened],
            }
        return body


def _num(x: float) -> float | int:
    return int(x) if float(x).is_integer() else round(float(x), 3)


# ------------------------------------------------------------------------ search


Profiles = Callable[[Sequence[int]], dict[int, dict[str, Any]]]


class ProximitySearch:
    """Radius and map-area search over one planner (geohash, quadtree or scan).

    ``profiles`` hydrates a page (place number → profile fields such as id and name);
    ``cache_ttl`` > 0 turns on the per-cell result cache.
    """

    def __init__(
        self,
        planner: Planner,
        *,
        profiles: Profiles | None = None,
        cache_ttl: float = 0.0,
        cache_size: int = 20_000,
        clock: Callable[[], float] = time.time,
        cursor_key: bytes = PROCESS_CURSOR_KEY,
    ) -> None:
        self.planner = planner
        self.cursor_key = cursor_key
        self.profiles = profiles
        self.clock = clock
        self.cache: TTLCache[Any, Any] | None = (
            TTLCache(cache_size, cache_ttl) if cache_ttl > 0 else None
        )
        self.flight = SingleFlight()
        self._minutes: dict[tuple[float, int], int] = {}  # (instant, zone) → minute of week

    @property
    def places(self) -> GeohashIndex:
        return self.planner.places

    # ----------------------------------------------------------- filters

    def check_filters(
        self,
        category: str | Sequence[str] | None = None,
        open_now: bool = False,
        price: int | Sequence[int] | str | None = None,
        q: str | None = None,
        min_rating: float | None = None,
    ) -> Filters:
        """Validated :class:`Filters` (unknown category or bad price → ``SearchError``)."""
        cats: list[str] = []
        if category:
            items = category.split(",") if isinstance(category, str) else list(category)
            for c in items:
                c = str(c).strip().lower()
                if not c:
                    continue
                if self.places.vocab.category_id(c) is None:
                    known = ", ".join(sorted(self.places.vocab.categories))
                    raise SearchError(
                        "INVALID_PARAMETER", f"unknown category {c!r}; known: {known}"
                    )
                cats.append(c)
        prices: list[int] = []
        if price is not None and price != "":
            levels: list[str] | list[int] = (
                price.split(",")
                if isinstance(price, str)
                else ([price] if isinstance(price, int) else list(price))
            )
            for p in levels:
                try:
                    level = int(str(p).strip())
                except ValueError:
                    raise SearchError(
                        "INVALID_PARAMETER", "price must be levels 1-4, e.g. price=2 or price=1,2"
                    ) from None
                if not 1 <= level <= 4:
                    raise SearchError("INVALID_PARAMETER", "price levels are 1 to 4")
                prices.append(level)
        text = (q or "").strip()
        if len(text) > 200:
            raise SearchError("INVALID_PARAMETER", "q is limited to 200 characters")
        if min_rating is not None and not 0.0 <= min_rating <= 5.0:
            raise SearchError("INVALID_PARAMETER", "minRating is 0 to 5 stars")
        return Filters(
            tuple(dict.fromkeys(cats)),
            bool(open_now),
            tuple(sorted(set(prices))),
            text,
            min_rating,
        )

    def _static_mask(self, cols: PlaceColumns, filters: Filters) -> tuple[np.ndarray, np.ndarray]:
        """Category/price/text filters (independent of time and of the user): mask, relevance."""
        keep = np.ones(len(cols), dtype=bool)
        vocab = self.places.vocab
        if filters.categories:
            ids = [vocab.category_id(c) for c in filters.categories]
            keep &= np.isin(cols.category, [i for i in ids if i is not None])
        if filters.prices:
            keep &= np.isin(cols.price, filters.prices)
        if filters.min_rating is not None:
            keep &= cols.rating.astype(np.float64) * 5.0 >= filters.min_rating
        if filters.q:
            qids = self.places.text.query_ids(filters.q)
            rel = self.places.text.relevance(cols.num.astype(np.int64), qids) if qids else None
            if rel is not None:
                keep &= rel > 0
            else:
                rel = np.ones(len(cols))
        else:
            rel = np.ones(len(cols))
        return keep, rel

    def open_mask(self, cols: PlaceColumns, now: float) -> np.ndarray:
        """Which places are open at Unix time ``now``, each in its own time zone."""
        if not len(cols):
            return np.zeros(0, dtype=bool)
        vocab = self.places.vocab
        tz_ids = set(cols.tz.tolist()) if len(cols) <= 1024 else np.unique(cols.tz).tolist()
        mow = np.full(len(vocab.timezones), -1, dtype=np.int64)
        for tid in tz_ids:
            mow[tid] = self._minute_of_week(now, tid)
        minute = mow[cols.tz]
        known = minute >= 0
        out = np.zeros(len(cols), dtype=bool)
        bitmaps = vocab.bitmaps
        hours = cols.hours.astype(np.int64)
        ok = known & (hours < len(bitmaps))
        out[ok] = bitmaps[hours[ok], minute[ok]]
        return out

    def _minute_of_week(self, now: float, tid: int) -> int:
        """The local minute of the week in time zone ``tid`` at ``now`` (-1: none or
        unknown), worked out once per zone and instant: every search in the same second
        asks the same (time-zone arithmetic costs more than the rest of the mask)."""
        key = (now, tid)
        found = self._minutes.get(key)
        if found is None:
            name = self.places.vocab.timezones[tid]
            found = -1
            if name:
                try:
                    found = minute_of_week(now, name)
                except ValueError:
                    pass
            if len(self._minutes) >= 4096:
                self._minutes.clear()
            self._minutes[key] = found
        return found

    # ------------------------------------------------------------ matching

    def _candidates(
        self, lat: float, lng: float, radius: float, filters: Filters
    ) -> tuple[PlaceColumns, np.ndarray, np.ndarray, Plan, int]:
        """Places within ``radius`` passing the static filters: columns, distance, relevance."""
        plan = self.planner.plan_radius(lat, lng, radius)
        cols, dist, read = self.places.within_radius(plan.ranges, lat, lng, radius)
        keep, rel = self._static_mask(cols, filters)
        return cols.take(keep), dist[keep], rel[keep], plan, read

    def _cached_candidates(
        self, lat: float, lng: float, radius: float, filters: Filters
    ) -> tuple[PlaceColumns, np.ndarray, np.ndarray, Plan, int, bool]:
        """As :meth:`_candidates`, through the per-cell cache (exact for any user in the cell)."""
        assert self.cache is not None
        places = self.places
        cell = gh.encode(lat, lng, CACHE_PRECISION)
        key = (self.planner.name, places.version, places.generation, cell, radius, filters.key())
        entry = self.cache.get(key)
        hit = entry is not MISSING
        if not hit:

            def load() -> Any:
                c = gh.decode(cell)
                clat, clng = c.center
                corners = haversine_m(
                    clat,
                    clng,
                    np.array([c.south, c.south, c.north, c.north]),
                    np.array([c.west, c.east, c.west, c.east]),
                )
                reach = radius + float(corners.max()) * 1.01 + 1.0
                cols, _, rel, plan, read = self._candidates(clat, clng, reach, filters)
                value = (cols, rel, plan, read)
                self.cache.set(key, value)  # type: ignore[union-attr]
                return value

            entry = self.flight.do(key, load)
        cols, rel, plan, read = entry
        dist = haversine_m(lat, lng, cols.lat, cols.lng)
        keep = dist <= radius
        return cols.take(keep), dist[keep], rel[keep], plan, read, hit

    def matches(
        self,
        lat: float,
        lng: float,
        radius: float,
        filters: Filters,
        now: float,
        *,
        use_cache: bool = False,
        model: Any = None,
    ) -> tuple[Matches, Plan, int, bool]:
        """Every match of one query at one radius, scored (unsorted); ``model``: a learned
        ranker (:func:`~lookup.geo.ranking.blend`) instead of the hand-set constants."""
        if use_cache and self.cache is not None:
            cols, dist, rel, plan, read, hit = self._cached_candidates(lat, lng, radius, filters)
        else:
            cols, dist, rel, plan, read = self._candidates(lat, lng, radius, filters)
            hit = False
        if filters.open_now:
            keep = self.open_mask(cols, now)
            cols, dist, rel = cols.take(keep), dist[keep], rel[keep]
        open_now = self.open_mask(cols, now) if model is not None else None
        s = blend(dist, radius, cols.rating.astype(np.float64), rel, model, open_now, cols.price)
        m = Matches(
            cols=cols,
            dist=dist,
            score=s,
            relevance=rel,
            score_key=np.rint(s * _SCORE_SCALE).astype(np.int64),
            dist_key=np.rint(dist * _DIST_SCALE).astype(np.int64),
        )
        return m, plan, read, hit

    def search(
        self,
        lat: float,
        lng: float,
        radius_m: float = DEFAULT_RADIUS_M,
        *,
        filters: Filters | None = None,
        limit: int = DEFAULT_LIMIT,
        cursor: str | None = None,
        widen: bool = True,
        now: float | None = None,
        use_cache: bool = False,
        model: Any = None,
        features: bool = False,
        sort: str = "score",
    ) -> SearchResult:
        """One page of places near (lat, lng); see the module docstring for the rules.

        ``model`` ranks by a learned :class:`~lookup.kit.ltr.LinearRanker` (its own cursors);
        ``features=True`` adds each result's ranking features (for training);
        ``sort="distance"`` orders by distance instead of the score. The same as
        :meth:`rank` then :meth:`finish` with the profiles of :attr:`profiles`.
        """
        ranked = self.rank(
            lat,
            lng,
            radius_m,
            filters=filters,
            limit=limit,
            cursor=cursor,
            widen=widen,
            now=now,
            use_cache=use_cache,
            model=model,
            features=features,
            sort=sort,
        )
        return self._hydrated(ranked)

    def nearest(
        self,
        lat: float,
        lng: float,
        *,
        filters: Filters | None = None,
        limit: int = DEFAULT_LIMIT,
        cursor: str | None = None,
        now: float | None = None,
    ) -> SearchResult:
        """The ``limit`` nearest places passing ``filters``, however far: :meth:`rank_nearest`
        then :meth:`finish` with the profiles of :attr:`profiles`."""
        ranked = self.rank_nearest(lat, lng, filters=filters, limit=limit, cursor=cursor, now=now)
        return self._hydrated(ranked)

    def _hydrated(self, ranked: RankedPage) -> SearchResult:
        nums = ranked.nums
        profiles = self.profiles(nums) if self.profiles is not None and nums else None
        return self.finish(ranked, profiles)

    def _same_query(self, data: dict[str, Any], fp: str) -> None:
        if data["f"] != fp:
            raise SearchError(
                "INVALID_PARAMETER", "cursor belongs to a different search; repeat the same query"
            )

    def keep_filter(self, filters: Filters, now: float) -> Callable[[PlaceColumns], np.ndarray]:
        """Which of some places pass ``filters`` at ``now`` (what a nearest walk counts)."""
        if filters == Filters():
            return lambda cols: np.ones(len(cols), dtype=bool)

        def keep(cols: PlaceColumns) -> np.ndarray:
            mask, _ = self._static_mask(cols, filters)
            if filters.open_now and mask.any():
                idx = np.flatnonzero(mask)
                mask[idx] = self.open_mask(cols.take(idx), now)
            return mask

        return keep

    def rank_nearest(
        self,
        lat: float,
        lng: float,
        *,
        filters: Filters | None = None,
        limit: int = DEFAULT_LIMIT,
        cursor: str | None = None,
        now: float | None = None,
    ) -> RankedPage:
        """The page of :meth:`nearest` before hydration (memory only): the filters apply
        before the k are counted; ties at equal distance go by place number; the radius
        used is the page's farthest place (the whole sphere when nothing matches)."""
        started = time.perf_counter()
        lat, lng = check_point(lat, lng)
        limit = check_limit(limit)
        filters = filters or Filters()
        fp = fingerprint(lat, lng, "nearest", filters.key(), self.planner.name)
        after: tuple[int, int] | None = None
        seen = 0  # places on the earlier pages
        if cursor:
            data = decode_cursor(cursor, self.cursor_key, "nearest")
            self._same_query(data, fp)
            now, after, seen = float(data["t"]), (int(data["d"]), int(data["n"])), int(data["c"])
        else:
            now = float(int(self.clock() if now is None else now))
        # one more than the page: whether a next page exists is then known, not guessed
        walk = nearest_rows(
            self.planner, lat, lng, limit + 1, self.keep_filter(filters, now), after
        )
        found = len(walk.dist)
        zeros = np.zeros(found)
        m = Matches(walk.cols, walk.dist, zeros, zeros + 1.0, zeros.astype(np.int64), walk.dist_key)
        page = np.arange(min(found, limit))
        next_cursor = None
        if found > limit:
            last = page[-1]
            payload = {"v": 1, "k": "nearest", "f": fp, "t": int(now)}
            payload |= {"d": int(walk.dist_key[last]), "n": int(walk.cols.num[last])}
            next_cursor = encode_cursor({**payload, "c": seen + limit}, self.cursor_key)
        reach = float(walk.dist[page[-1]]) if len(page) else WHOLE_EARTH_M
        return RankedPage(
            m,
            page,
            reach,
            next_cursor,
            walk.plan,
            walk.read,
            False,
            now,
            [],
            started,
            total=seen + len(page),
            total_exact=next_cursor is None,
            scored=False,
        )

    def rank(
        self,
        lat: float,
        lng: float,
        radius_m: float = DEFAULT_RADIUS_M,
        *,
        filters: Filters | None = None,
        limit: int = DEFAULT_LIMIT,
        cursor: str | None = None,
        widen: bool = True,
        now: float | None = None,
        use_cache: bool = False,
        model: Any = None,
        features: bool = False,
        sort: str = "score",
    ) -> RankedPage:
        """The page of :meth:`search` before hydration: in-memory work only (no store)."""
        started = time.perf_counter()
        lat, lng = check_point(lat, lng)
        radius = check_radius(radius_m)
        limit = check_limit(limit)
        sort = check_sort(sort)
        filters = filters or Filters()
        planner = self.planner.name
        ranked_by = planner if model is None else f"{planner}:{model_digest(model)}"
        asked = (lat, lng, radius, filters.key(), widen, ranked_by)
        fp = fingerprint(*asked) if sort == "score" else fingerprint(*asked, sort)
        after: tuple[int, int, int] | None = None
        if cursor:
            data = decode_cursor(cursor, self.cursor_key)
            self._same_query(data, fp)
            radii = [float(data["r"])]
            now = float(data["t"])
            after = (int(data["s"]), int(data["d"]), int(data["n"]))
        else:
            now = float(int(self.clock() if now is None else now))
            radii = [radius]
            if widen:
                radii += [r for r in WIDEN_STEPS_M if r > radius]
        tried: list[float] = []
        for r in radii:
            tried.append(r)
            m, plan, read, hit = self.matches(
                lat, lng, r, filters, now, use_cache=use_cache, model=model
            )
            if len(m) >= WIDEN_UNTIL:  # never the page size: the answer must not depend on it
                break
        rows = None if after is None else m.after(after, sort)  # None: every match
        page = m.first(limit, rows, sort=sort)
        next_cursor = None
        if (len(m) if rows is None else len(rows)) > limit:
            last = page[-1]
            next_cursor = encode_cursor(
                {
                    "v": 1,
                    "f": fp,
                    "r": r,
                    "t": int(now),
                    "s": int(m.score_key[last]),
                    "d": int(m.dist_key[last]),
                    "n": int(m.cols.num[last]),
                },
                self.cursor_key,
            )
        return RankedPage(m, page, r, next_cursor, plan, read, hit, now, tried, started, features)

    def finish(
        self, ranked: RankedPage, profiles: Mapping[int, dict[str, Any]] | None
    ) -> SearchResult:
        """The :class:`SearchResult` of a :meth:`rank`-ed page, hydrated from ``profiles``
        (place number → profile fields; None: no hydration). A place of the page without a
        profile was deleted since the index saw it, and is left out."""
        m, page, now, r = ranked.matches, ranked.page, ranked.now, ranked.radius_used_m
        results = self._render(m, page, now, profiles, scored=ranked.scored)
        if ranked.features and results:
            rows = m.cols.take(page)
            x = place_features(
                m.dist[page],
                r,
                rows.rating,
                m.relevance[page],
                self.open_mask(rows, now),
                rows.price,
            )
            by_num = dict(zip(rows.num.tolist(), x.tolist(), strict=True))
            for item in results:
                item["features"] = dict(zip(PLACE_FEATURES, by_num[item["num"]], strict=True))
        return SearchResult(
            results=results,
            radius_used_m=r,
            next_cursor=ranked.next_cursor,
            total=len(m) if ranked.total is None else ranked.total,
            plan=ranked.plan,
            read=ranked.read,
            cache_hit=ranked.cache_hit,
            took_ms=(time.perf_counter() - ranked.started) * 1000.0,
            widened=ranked.widened,
            total_exact=ranked.total_exact,
        )

    def _render(
        self,
        m: Matches,
        page: np.ndarray,
        now: float,
        profiles: Mapping[int, dict[str, Any]] | None,
        *,
        scored: bool = True,
    ) -> list[dict[str, Any]]:
        if not len(page):
            return []
        cols = m.cols.take(page)
        open_now = self.open_mask(cols, now).tolist()
        nums = cols.num.tolist()
        hydrate = profiles is not None
        profiles = profiles or {}
        # whole columns to Python at once (``tolist``) rather than a numpy scalar per cell
        lats, lngs = cols.lat.tolist(), cols.lng.tolist()
        dists = np.rint(m.dist[page]).astype(np.int64).tolist()
        scores = [round(x, 4) for x in m.score[page].tolist()] if scored else [None] * len(page)
        out = []
        for num, lat, lng, dist, is_open, sc in zip(
            nums, lats, lngs, dists, open_now, scores, strict=True
        ):
            prof = profiles.get(num)
            if hydrate and prof is None:
                continue  # deleted since the index saw it
            out.append(
                {
                    "num": num,
                    **(prof or {}),
                    "lat": lat,
                    "lng": lng,
                    "distanceM": dist,
                    "openNow": is_open,
                    "score": sc,
                }
            )
        return out

    # ------------------------------------------------------------ map area

    def area(
        self,
        south: float,
        west: float,
        north: float,
        east: float,
        *,
        filters: Filters | None = None,
        limit: int = 100,
        max_pins: int = MAX_PINS,
        now: float | None = None,
        profiles: Profiles | None = None,
        cursor: str | None = None,
    ) -> dict[str, Any]:
        """Places inside a map rectangle (``west > east`` crosses ±180): pins, or clusters.

        Pins are ranked like a radius search from the rectangle's centre (radius = its
        half-diagonal). With more than ``max_pins`` matches the answer is clusters:
        counts per geohash cell, each at the mean position of its places (complete: never
        truncated). Pins cut at ``limit`` say ``truncated: true`` and give a ``nextCursor``
        to the next ones in the same order (Elasticsearch's ``search_after``); a cursor
        always answers pins. ``profiles`` hydrates the pins instead of :attr:`profiles`.
        """
        started = time.perf_counter()
        south, west = check_point(south, west)
        north, east = check_point(north, east)
        if south > north:
            raise SearchError("INVALID_PARAMETER", "south must not be greater than north")
        limit = max(1, min(int(limit), 500))
        filters = filters or Filters()
        asked = (south, west, north, east, filters.key(), self.planner.name, "area")
        after: tuple[int, int, int] | None = None
        if cursor:
            data = decode_cursor(cursor, self.cursor_key, "area")
            self._same_query(data, fingerprint(*asked))
            now, after = float(data["t"]), (int(data["s"]), int(data["d"]), int(data["n"]))
        else:
            now = float(int(self.clock() if now is None else now))
        box = Box.rect(south, west, north, east)
        plan = self.planner.plan_box(box)
        cols, read = self.places.in_box(plan.ranges, box)
        keep, rel = self._static_mask(cols, filters)
        cols, rel = cols.take(keep), rel[keep]
        if filters.open_now:
            keep = self.open_mask(cols, now)
            cols, rel = cols.take(keep), rel[keep]
        total = len(cols)
        body: dict[str, Any] = {
            "total": total,
            "precision": plan.precision,
            "cells": plan.cells,
            "read": read,
            "results": [],
            "clusters": [],
            "truncated": False,
            "nextCursor": None,
        }
        if total > max_pins and after is None:
            precision = self._cluster_precision(box)
            shift = gh.CODE_BITS - 5 * precision
            cells, inverse, counts = np.unique(
                cols.code >> shift, return_inverse=True, return_counts=True
            )
            mean_lat = np.bincount(inverse, weights=cols.lat) / counts
            # average longitudes as unit vectors so a cluster astride ±180 stays there
            ang = np.radians(cols.lng)
            mean_lng = np.degrees(
                np.arctan2(
                    np.bincount(inverse, weights=np.sin(ang)),
                    np.bincount(inverse, weights=np.cos(ang)),
                )
            )
            body["mode"] = "clusters"
            body["clusterPrecision"] = precision
            body["clusters"] = [
                {
                    "geohash": gh.to_string(int(c), precision),
                    "count": int(n),
                    "lat": float(a),
                    "lng": float(b),
                }
                for c, n, a, b in zip(cells, counts, mean_lat, mean_lng, strict=True)
            ]
        else:
            clat = (south + north) / 2.0
            span = (east - west) % 360.0 if west != east else 0.0
            clng = (west + span / 2.0 + 180.0) % 360.0 - 180.0
            dist = haversine_m(clat, clng, cols.lat, cols.lng)
            half_diag = float(haversine_m(clat, clng, np.array([north]), np.array([west]))[0])
            s = score(dist, max(half_diag, 1.0), cols.rating.astype(np.float64), rel)
            m = Matches(
                cols,
                dist,
                s,
                rel,
                np.rint(s * _SCORE_SCALE).astype(np.int64),
                np.rint(dist * _DIST_SCALE).astype(np.int64),
            )
            rows = None if after is None else m.after(after)
            page = m.first(limit, rows)
            if (total if rows is None else len(rows)) > limit:
                last = page[-1]
                payload = {"v": 1, "k": "area", "f": fingerprint(*asked), "t": int(now)}
                payload |= {"s": int(m.score_key[last]), "d": int(m.dist_key[last])}
                body["nextCursor"] = encode_cursor(
                    {**payload, "n": int(m.cols.num[last])}, self.cursor_key
                )
                body["truncated"] = True
            hydrate = profiles or self.profiles
            nums = m.cols.num[page].tolist()
            found = hydrate(nums) if hydrate is not None and nums else None
            body["mode"] = "pins"
            body["results"] = self._render(m, page, now, found)
        body["tookMs"] = round((time.perf_counter() - started) * 1000.0, 3)
        return body

    @staticmethod
    def _cluster_precision(box: Box) -> int:
        """The finest precision that splits the view into at most ~256 cells."""
        best = 1
        lat_span = box.north - box.south
        lng_span = sum(e - w for w, e in box.lngs)
        for p in range(1, gh.MAX_PRECISION + 1):
            h, w = gh.cell_size_deg(p)
            if (lat_span / h + 1) * (lng_span / w + 1) > 256:
                break
            best = p
        return best
