"""Proximity search: places near a point or inside a map view, from geohash cells.

The public API the dashboard, the notebooks and the HTTP layer use:

* :mod:`lookup.geo.geohash` — encode/decode/neighbours/precision, written by hand;
* :class:`GeohashIndex` — the sorted in-memory index (read path) and its live updates;
  :class:`QuadtreeIndex` and :class:`ScanIndex` plan the same searches differently;
* :class:`ProximitySearch` — radius and map-area search: filters, ranking, cursor
  pages, widening and the per-cell result cache;
* :class:`PlaceStore` — the places database and its change stream (write path):
  :class:`SqlitePlaceStore` behind it, opened by :func:`open_place_store`;
* :class:`PlacesService` — the live index over a data directory, synced and rebuilt.
"""

from lookup.errors import NotBuilt
from lookup.geo import geohash
from lookup.geo.index import Box, GeohashIndex, Plan, ScanIndex, circle_box
from lookup.geo.quadtree import QuadtreeIndex
from lookup.geo.ranking import bayesian_rating, haversine_m, score, tokenize
from lookup.geo.search import (
    MAX_RADIUS_M,
    WIDEN_STEPS_M,
    Filters,
    ProximitySearch,
    SearchError,
    SearchResult,
)
from lookup.geo.service import PlacesService
from lookup.geo.store import Change, PlaceError, PlaceStore, SqlitePlaceStore, open_place_store

__all__ = [
    "MAX_RADIUS_M",
    "WIDEN_STEPS_M",
    "Box",
    "Change",
    "Filters",
    "GeohashIndex",
    "NotBuilt",
    "Plan",
    "PlaceError",
    "PlaceStore",
    "PlacesService",
    "ProximitySearch",
    "QuadtreeIndex",
    "ScanIndex",
    "SearchError",
    "SearchResult",
    "SqlitePlaceStore",
    "bayesian_rating",
    "circle_box",
    "geohash",
    "haversine_m",
    "open_place_store",
    "score",
    "tokenize",
]
