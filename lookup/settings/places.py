"""Places' knobs (proximity search, reviews, areas)."""

from __future__ import annotations

from lookup.settings.base import (
    Setting,
    as_answer_entries,
    as_partitions,
    as_positive_float,
    as_rate,
    as_review_chars,
    as_seconds,
    as_share,
    as_stars,
)


def as_postgres_url(raw: str) -> str:
    """A PostgreSQL connection URL (``postgresql://…``): a read replica is one."""
    url = raw.strip()
    if not url.lower().startswith(("postgresql://", "postgres://")):
        raise ValueError("expected a postgresql://user@host:port/db URL")
    return url


def as_places_store_url(raw: str) -> str:
    """The places database's URL: ``postgresql://…`` or ``sqlite:///path`` (empty: the
    data set's file in the data directory)."""
    url = raw.strip()
    if url and not url.lower().startswith(("postgresql://", "postgres://", "sqlite:")):
        raise ValueError("expected postgresql://user@host:port/db or sqlite:///path")
    return url


KNOBS: list[Setting] = [
    # -- places: serving (lookup/geo/http.py) ---------------------------------------------
    Setting(
        "places_answer_cache",
        "LOOKUP_PLACES_ANSWER_CACHE",
        10000,
        as_answer_entries,
        "answers",
        "0..1000000",
        "finished GET /v1/search answers each API process keeps by query string, each "
        "valid while the index version, the changes applied to it, the ranking model and "
        "the minute it came from are current (a map asking again for the same view costs "
        "a dictionary lookup); 0 turns it off.",
    ),
    # -- places: the store (lookup/geo/places/) -------------------------------------------
    Setting(
        "places_store_url",
        "LOOKUP_PLACES_STORE_URL",
        "",
        as_places_store_url,
        "url",
        "postgresql://… | sqlite:///…",
        "where the places database lives: postgresql://user@host:port/db is one database "
        "every API process writes and tails the changes of (PostGIS; load it with `lookup "
        "places load --store URL`); unset: the SQLite file of the data set in the data "
        "directory.",
    ),
    # -- places: read replica (lookup/geo/replica.py) --------------------------------------
    Setting(
        "places_read_url",
        "LOOKUP_PLACES_READ_URL",
        "",
        as_postgres_url,
        "url",
        "postgresql://…",
        "a streaming read replica of the places database (postgresql://user@host:port/db): "
        "each API process loads its index and tails the changes from it, and /healthz "
        "shows how far it lags; writes always go to the primary. Unset: everything reads "
        "the primary.",
    ),
    # -- places: reviews (lookup/geo/reviews.py) ------------------------------------------
    Setting(
        "places_review_rate",
        "LOOKUP_PLACES_REVIEW_RATE",
        "5/60:5",
        as_rate,
        "rate",
        "COUNT/SECONDS[:BURST]",
        "reviews (POST /v1/places/{id}/reviews) per user per server process: a person "
        "reviews a few places in a sitting; a script posting for one user is cut off.",
    ),
    Setting(
        "places_review_text_max",
        "LOOKUP_PLACES_REVIEW_TEXT_MAX",
        4000,
        as_review_chars,
        "int",
        "characters",
        "longest review text (Unicode characters after NFC normalisation).",
    ),
    Setting(
        "places_review_new_account_s",
        "LOOKUP_PLACES_REVIEW_NEW_ACCOUNT_S",
        7 * 86400.0,
        as_seconds,
        "float",
        "seconds",
        "an account whose first review is younger than this writes new-account reviews, "
        "which weigh less (a brigade is made of fresh accounts); 0: no account is new.",
    ),
    Setting(
        "places_review_new_weight",
        "LOOKUP_PLACES_REVIEW_NEW_WEIGHT",
        0.25,
        as_share,
        "float",
        "votes",
        "how much of a vote a new-account review counts in the displayed rating.",
    ),
    Setting(
        "places_review_prior_votes",
        "LOOKUP_PLACES_REVIEW_PRIOR_VOTES",
        5.0,
        as_positive_float,
        "float",
        "votes",
        "m of IMDb's weighted rating: phantom votes at the place's established rating "
        "that new-account reviews must outweigh to move it.",
    ),
    Setting(
        "places_review_prior",
        "LOOKUP_PLACES_REVIEW_PRIOR",
        3.5,
        as_stars,
        "float",
        "stars",
        "the rating new-account reviews are pulled toward at a place without an established one.",
    ),
    # -- places: polygon search (lookup/geo/within.py) ----------------------------------
    Setting(
        "places_polygon_max_vertices",
        "LOOKUP_PLACES_POLYGON_MAX_VERTICES",
        500,
        as_partitions,
        "int",
        "1..65536",
        "the most vertices (all rings together) GET /v1/places/within accepts in a polygon; "
        "more is 400 INVALID_POLYGON. The exact test costs places x edges near the edge, "
        "and 500 positions still fit the 32 KiB request head as a query parameter.",
    ),
    Setting(
        "places_polygon_max_cells",
        "LOOKUP_PLACES_POLYGON_MAX_CELLS",
        256,
        as_partitions,
        "int",
        "1..65536",
        "the most geohash cells in a polygon's cover (lookup/geo/cover.py): more cells "
        "cut the places checked one by one along the edge, each costs a range read.",
    ),
]
