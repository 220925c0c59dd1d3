"""Reviews of places: what a review may hold, who weighs how much, and the displayed rating.

Seed 000's write path: a review lands in the review store, and the rating aggregator turns
it into the place's count and average, which reach every serving index on the change
stream. This module is the domain half (no SQL, no HTTP): checking a review's fields,
the aggregate's integer totals, and the rating shown from them.

Spam resistance, in the spirit of the typeahead's brigade defences (a spike from new
identities is what a brigade looks like):

* one review per user per place — a second one replaces the first (as Google Maps does);
* a review written while its author's account is new (their first review anywhere is
  younger than ``places_review_new_account_s``) is a *new-account* review and counts
  ``places_review_new_weight`` of a vote; the flag is fixed when the review is written, so
  the aggregate never drifts with the clock, and a replacement is weighed again;
* the displayed rating is IMDb's weighted rating ``WR = (v·R + m·C) / (v + m)`` with
  ``v·R`` the weighted stars, ``v`` the weighted votes, ``m = places_review_prior_votes``
  and ``C`` the place's established rating (its imported totals plus the reviews of
  established accounts), else ``places_review_prior`` for a place without one. With no
  new-account reviews it is the plain mean of the established ones (``C`` is that mean); a
  burst of new accounts must outweigh ``m`` phantom votes at the old rating, each of them
  counting a fraction of a vote.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from lookup import settings

#: Characters refused in a review's text besides the C0/C1 controls: the bidirectional
#: embeddings, overrides and isolates, which can make a text display as something else.
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
#: The longest user id a relay may name.
MAX_USER_ID = 64
#: The fields a review body may carry.
REVIEW_FIELDS = ("userId", "rating", "text")


class ReviewError(ValueError):
    """A review that cannot be accepted; ``code`` is the API error code (HTTP 400)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class ReviewPolicy:
    """The knobs of the aggregate (the settings of the same names)."""

    new_account_s: float = 7 * 86_400.0
    new_weight: float = 0.25
    prior_votes: float = 5.0
    prior: float = 3.5
    text_max: int = 4000

    @classmethod
    def from_settings(cls) -> ReviewPolicy:
        """The policy the settings name now."""
        return cls(
            new_account_s=float(settings.get("places_review_new_account_s")),
            new_weight=float(settings.get("places_review_new_weight")),
            prior_votes=float(settings.get("places_review_prior_votes")),
            prior=float(settings.get("places_review_prior")),
            text_max=int(settings.get("places_review_text_max")),
        )


@dataclass(frozen=True)
class Totals:
    """A place's review aggregate as integers (so an incremental update is exact).

    ``base_*``: the totals the place had before its first review through the API (an
    imported data set's counts), taken as established votes; ``est_*`` the reviews of
    established accounts; ``new_*`` the new-account reviews.
    """

    base_count: int = 0
    base_stars: int = 0
    est_count: int = 0
    est_stars: int = 0
    new_count: int = 0
    new_stars: int = 0

    def add(self, stars: int, new_account: bool, sign: int = 1) -> Totals:
        """These totals with one review added (``sign=-1``: taken away)."""
        if new_account:
            return Totals(
                self.base_count,
                self.base_stars,
                self.est_count,
                self.est_stars,
                self.new_count + sign,
                self.new_stars + sign * stars,
            )
        return Totals(
            self.base_count,
            self.base_stars,
            self.est_count + sign,
            self.est_stars + sign * stars,
            self.new_count,
            self.new_stars,
        )

    @property
    def count(self) -> int:
        """How many reviews the place shows (every review counts once here)."""
        return self.base_count + self.est_count + self.new_count

    def rating(self, policy: ReviewPolicy) -> float | None:
        """The displayed rating (IMDb's weighted rating, see the module), or None."""
        est_n = self.base_count + self.est_count
        est_s = self.base_stars + self.est_stars
        if est_n + self.new_count == 0:
            return None
        prior = est_s / est_n if est_n else policy.prior
        w, m = policy.new_weight, policy.prior_votes
        return (est_s + w * self.new_stars + m * prior) / (est_n + w * self.new_count + m)

    def place_fields(self, policy: ReviewPolicy) -> dict[str, int]:
        """The place row's ``review_count`` and ``review_stars``: the count, and the stars the
        displayed rating stands for (rounded, within count..5 × count) — what the index ranks
        by, the profile shows and a minimum-rating filter reads, all from the change stream."""
        n = self.count
        rating = self.rating(policy)
        if rating is None:
            return {"review_count": 0, "review_stars": 0}
        stars = min(5 * n, max(n, round(rating * n)))
        return {"review_count": n, "review_stars": stars}


def is_new_account(first_review_at: float, now: float, policy: ReviewPolicy) -> bool:
    """Whether an account whose first review was at ``first_review_at`` is new at ``now``."""
    return now - first_review_at < policy.new_account_s


def check_user_id(value: Any) -> str:
    """A relay-named user id: 1 to 64 printable ASCII characters without spaces."""
    if (
        not isinstance(value, str)
        or not 0 < len(value) <= MAX_USER_ID
        or not value.isascii()
        or not value.isprintable()
        or " " in value
    ):
        raise ReviewError(
            "INVALID_USER",
            f"userId must be 1 to {MAX_USER_ID} printable ASCII characters without spaces",
        )
    return value


def check_rating(value: Any) -> int:
    """A star rating: a whole number from 1 to 5 (``true`` and ``4.0`` are refused)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 5:
        raise ReviewError("INVALID_RATING", "rating must be a whole number from 1 to 5")
    return value


def clean_text(value: Any, limit: int) -> str:
    """A review's text, NFC-normalised with line ends as ``\\n`` and outer space trimmed.

    Refused: not a string, a lone surrogate (not UTF-8 at all), a control character other
    than tab and line breaks, a bidirectional override, more than ``limit`` characters
    (code points after normalisation: an emoji sequence counts its parts)."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ReviewError("INVALID_TEXT", "text must be a string")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ReviewError("INVALID_TEXT", "text is not valid Unicode (a lone surrogate)") from None
    text = unicodedata.normalize("NFC", value.replace("\r\n", "\n").replace("\r", "\n")).strip()
    for ch in text:
        if ch in BIDI_CONTROLS or (unicodedata.category(ch) == "Cc" and ch not in "\n\t"):
            raise ReviewError(
                "INVALID_TEXT",
                f"text may not hold control characters (U+{ord(ch):04X})",
            )
    if len(text) > limit:
        raise ReviewError("TEXT_TOO_LONG", f"text is limited to {limit} characters")
    return text


def check_body(body: Any, policy: ReviewPolicy) -> tuple[str, int, str]:
    """``(userId, rating, text)`` from a review request body, or :class:`ReviewError`."""
    if not isinstance(body, dict):
        raise ReviewError("INVALID_REQUEST", "the body must be a JSON object")
    unknown = sorted(set(body) - set(REVIEW_FIELDS))
    if unknown:
        raise ReviewError(
            "INVALID_REQUEST",
            f"unknown field(s): {', '.join(unknown)}; accepted: {', '.join(REVIEW_FIELDS)}",
        )
    if "rating" not in body or "userId" not in body:
        raise ReviewError("INVALID_REQUEST", "userId and rating are required")
    return (
        check_user_id(body["userId"]),
        check_rating(body["rating"]),
        clean_text(body.get("text"), policy.text_max),
    )


def recompute(base: tuple[int, int], reviews: Iterable[dict[str, Any]]) -> Totals:
    """The totals from the base and every current review (the nightly-style correction)."""
    totals = Totals(base_count=base[0], base_stars=base[1])
    for review in reviews:
        totals = totals.add(int(review["rating"]), bool(review["newAccount"]))
    return totals


@dataclass(frozen=True)
class ReviewPage:
    """One page of a place's reviews, newest first."""

    reviews: list[dict[str, Any]]
    next_cursor: tuple[float, str] | None


@runtime_checkable
class ReviewStore(Protocol):
    """The reviews half of a place store: writes in the place's own transaction."""

    def put_review(
        self, place_id: str, user_id: str, rating: int, text: str, policy: ReviewPolicy
    ) -> tuple[dict[str, Any], bool, dict[str, Any]]:
        """Store (or replace) ``user_id``'s review of the place and update its totals in one
        transaction; ``(review, replaced, place row after)``."""
        ...

    def review_page(
        self, place_id: str, limit: int, after: tuple[float, str] | None = None
    ) -> ReviewPage:
        """Reviews of the place, newest first, after the ``(updatedAt, userId)`` key."""
        ...

    def review_totals(self, place_id: str) -> Totals | None:
        """The stored aggregate of the place (None before its first review)."""
        ...
