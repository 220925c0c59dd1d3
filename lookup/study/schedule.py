"""Spaced repetition with FSRS (the ``fsrs`` package): when each item comes back.

Every item a learner has answered is an FSRS card. Self-graded items (concepts,
flashcards) take the learner's Again / Hard / Good / Easy; computed items map their
verdict onto the same scale (exact → Good, close → Hard, off → Again), so a badly
missed estimate comes back soon and a well-known one drifts out to weeks.
"""

from __future__ import annotations

from datetime import UTC, datetime

from fsrs import Card, Rating, Scheduler

RATINGS = {"again": Rating.Again, "hard": Rating.Hard, "good": Rating.Good, "easy": Rating.Easy}
VERDICT_RATING = {"exact": "good", "close": "hard", "off": "again"}
#: How much a review counts towards accuracy, by verdict or self-grade.
SCORE = {
    "exact": 1.0,
    "close": 0.5,
    "off": 0.0,
    "again": 0.0,
    "hard": 0.5,
    "good": 1.0,
    "easy": 1.0,
}

# Fuzzing off: the same history always gives the same due dates (tests, reproducible runs).
_SCHEDULER = Scheduler(enable_fuzzing=False)


def rating_of(grade: str) -> Rating:
    """The FSRS rating for ``again``/``hard``/``good``/``easy`` (``ValueError`` otherwise)."""
    try:
        return RATINGS[grade]
    except KeyError:
        raise ValueError(f"grade must be one of {', '.join(RATINGS)}") from None


def review(card_json: str | None, grade: str, when: datetime | None = None) -> tuple[str, datetime]:
    """Review a card (a new one when ``card_json`` is None) and return it with its next due time."""
    when = when or datetime.now(UTC)
    card = Card.from_json(card_json) if card_json else Card(due=when)
    card, _ = _SCHEDULER.review_card(card, rating_of(grade), review_datetime=when)
    return card.to_json(), card.due
