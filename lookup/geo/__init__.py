"""Proximity search: places near a point or inside a map view, from geohash cells.

The public API the dashboard, the notebooks and the HTTP layer use:

* :mod:`lookup.geo.geohash` — encode/decode/neighbours/precision, written by hand;
* :class:`GeohashIndex` — the sorted in-memory index (read path) and its live updates;
  :class:`QuadtreeIndex` and :class:`ScanIndex` plan the same searches differently;
* :class:`ProximitySearch` — radius and map-area search: filters, ranking, cursor
  pages, widening and the per-cell result cache;
* :class:`PlaceStore` — the places database and its change stream (write path), the seam
  :mod:`lookup.geo.places`: :class:`SqlitePlaceStore` (embedded) or
  :class:`PostgresPlaceStore` (PostGIS) behind it, opened by :func:`open_place_store`;
* :class:`PlacesService` — the live index over a data directory, synced and rebuilt.
"""

from lookup.kit.lazy import lazy_exports

#: Each public name and the module it lives in, imported on first use.
_EXPORTS = {
    "geohash": "lookup.geo",
    "NotBuilt": "lookup.errors",
    "Box": "lookup.geo.index",
    "GeohashIndex": "lookup.geo.index",
    "Plan": "lookup.geo.index",
    "ScanIndex": "lookup.geo.index",
    "circle_box": "lookup.geo.index",
    "QuadtreeIndex": "lookup.geo.quadtree",
    "bayesian_rating": "lookup.geo.ranking",
    "haversine_m": "lookup.geo.ranking",
    "score": "lookup.geo.ranking",
    "tokenize": "lookup.geo.ranking",
    "MAX_RADIUS_M": "lookup.geo.search",
    "WIDEN_STEPS_M": "lookup.geo.search",
    "Filters": "lookup.geo.search",
    "ProximitySearch": "lookup.geo.search",
    "SearchError": "lookup.geo.search",
    "SearchResult": "lookup.geo.search",
    "PlacesService": "lookup.geo.service",
    "Change": "lookup.geo.places",
    "PlaceError": "lookup.geo.places",
    "PlaceStore": "lookup.geo.places",
    "SqlitePlaceStore": "lookup.geo.places.sqlite",
    "PostgresPlaceStore": "lookup.geo.places.postgres",
    "open_place_store": "lookup.geo.places",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

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
    "PostgresPlaceStore",
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
