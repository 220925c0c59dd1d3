"""HTTP for place reviews: ``POST`` and ``GET /v1/places/{id}/reviews``.

Who writes a review is the caller's to prove, never the body's to claim: the route takes
the admin token and a ``userId`` — the server trusts one relay (a sign-in front end, the
dashboard) to have authenticated its user, as ``POST /v1/searches`` trusts the admin token
alone to name a ``userId``. Without the token the answer is 401/403, so nobody posts as
someone else by writing their name into a body. The limit is per user
(``places_review_rate``, the project's token bucket, per server process).

A second review of the same place by the same user replaces the first (Google Maps: one
review per person per place; posting again edits it): the answer says ``replaced: true``
with ``200`` instead of ``201``. The write, the place's new totals and the change-stream
entry are one transaction (:mod:`lookup.geo.reviewstore`); this process's index applies it
at once, every other serving process within its next poll (a second).

``GET`` pages the reviews newest first (a replacement counts as new) with a signed cursor.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any

from fastapi import Body, Depends, Query, Response

from lookup import errors, settings
from lookup.geo.places import PlaceError
from lookup.geo.reviews import ReviewError, ReviewPolicy, Totals, check_body
from lookup.geo.service import PlacesService
from lookup.kit.admin import ADMIN_RESPONSES
from lookup.kit.asgi import known_query_only
from lookup.kit.http import ApiError
from lookup.kit.ratelimit import RateLimiter, RatePolicy, open_rate_limiter

#: The largest page of reviews.
MAX_REVIEWS_PAGE = 50

_EXAMPLE = {"userId": "asha", "rating": 5, "text": "Crisp dosa, quick service."}


def review_limiter(policy: RatePolicy | None = None) -> RateLimiter:
    """The per-user limit on review writes (in-process token buckets)."""
    chosen = policy or RatePolicy.parse(settings.get("places_review_rate"))
    return open_rate_limiter("memory:", chosen, name="reviews")


def rating_of(row: dict[str, Any]) -> float | None:
    """The rating a place shows, from its row's totals (as its profile and search do)."""
    count, stars = row.get("review_count") or 0, row.get("review_stars") or 0
    return round(stars / count, 1) if count else None


def _encode_cursor(key: bytes, place_id: str, after: tuple[float, str]) -> str:
    body = base64.urlsafe_b64encode(json.dumps([place_id, *after]).encode()).decode().rstrip("=")
    sig = hmac.new(key, body.encode(), hashlib.sha256).hexdigest()[:24]
    return f"{body}.{sig}"


def _decode_cursor(key: bytes, place_id: str, cursor: str) -> tuple[float, str]:
    bad = ApiError(400, "INVALID_CURSOR", "cursor is not a nextCursor of this place's reviews")
    body, _, sig = cursor.partition(".")
    want = hmac.new(key, body.encode(), hashlib.sha256).hexdigest()[:24]
    if not hmac.compare_digest(sig, want):
        raise bad
    try:
        pid, at, user = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    except (ValueError, TypeError):  # not three items of JSON
        raise bad from None
    if pid != place_id or not isinstance(at, (int, float)) or not isinstance(user, str):
        raise bad
    return float(at), user


def mount_reviews(
    mounts: Any, service: PlacesService, guarded: list[Any], limiter: RateLimiter | None = None
) -> None:
    """Add the review routes to ``mounts.api`` (``guarded``: the admin-token dependency)."""
    api = mounts.api
    limits = limiter or review_limiter()

    def store() -> Any:
        service.require()
        return service.store

    @api.post(
        "/v1/places/{place_id}/reviews",
        tags=["places"],
        status_code=201,
        summary="Review a place, 1-5 stars and text; a user's second review replaces the "
        "first (admin token: a trusted relay names the user)",
        dependencies=guarded,
        responses={
            **ADMIN_RESPONSES,
            200: {"description": "the user's earlier review of the place was replaced"},
            400: {"description": "INVALID_RATING, INVALID_TEXT, TEXT_TOO_LONG, INVALID_USER…"},
            404: {"description": "NOT_FOUND: no such place"},
            429: {"description": "RATE_LIMITED for this user (see Retry-After)"},
        },
    )
    def post_review(
        place_id: str, response: Response, body: dict[str, Any] = Body(..., examples=[_EXAMPLE])
    ) -> dict[str, Any]:
        policy = ReviewPolicy.from_settings()
        try:
            user_id, rating, text = check_body(body, policy)
        except ReviewError as exc:
            raise ApiError(400, exc.code, exc.message) from None
        decision = limits.check(user_id)
        if not decision.allowed:
            raise errors.RateLimited(
                f"too many reviews from this user; retry in {decision.retry_after_s} s",
                code="RATE_LIMITED",
                headers=decision.headers(),
            )
        try:
            review, replaced, row = store().put_review(place_id, user_id, rating, text, policy)
        except PlaceError as exc:
            status = 404 if exc.code == "NOT_FOUND" else 400
            raise ApiError(status, exc.code, exc.message) from None
        service.sync()  # this process's index at once; the others within their next poll
        if replaced:
            response.status_code = 200
        return {
            "review": review,
            "replaced": replaced,
            "place": {
                "id": row["id"],
                "rating": rating_of(row),
                "reviews": row["review_count"],
            },
        }

    @api.get(
        "/v1/places/{place_id}/reviews",
        tags=["places"],
        summary="A place's reviews, newest first, with its rating (paged by nextCursor)",
        dependencies=[Depends(known_query_only)],
        responses={
            400: {"description": "INVALID_CURSOR, a bad limit or an unknown parameter"},
            404: {"description": "NOT_FOUND: no such place"},
        },
    )
    def get_reviews(
        place_id: str,
        limit: int = Query(10, ge=1, le=MAX_REVIEWS_PAGE, description="reviews per page"),
        cursor: str | None = Query(None, max_length=400, description="nextCursor"),
    ) -> dict[str, Any]:
        places = store()
        row = places.get(place_id)
        if row is None:
            raise ApiError(404, "NOT_FOUND", f"no place with id {place_id!r}")
        key = service.cursor_key
        after = _decode_cursor(key, place_id, cursor) if cursor else None
        page = places.review_page(place_id, limit, after)
        totals = places.review_totals(place_id) or Totals(
            base_count=int(row.get("review_count") or 0),
            base_stars=int(row.get("review_stars") or 0),
        )
        weighted = totals.rating(ReviewPolicy.from_settings())
        return {
            "placeId": place_id,
            "rating": rating_of(row),
            "weightedRating": None if weighted is None else round(weighted, 3),
            "reviewCount": row["review_count"],
            "reviews": page.reviews,
            "nextCursor": (
                _encode_cursor(key, place_id, page.next_cursor) if page.next_cursor else None
            ),
        }
