"""A study session: a mix of due cards, estimates, predict-then-run items and one drill.

Given the systems, levels and minutes a learner picks, :func:`plan_session` orders what
to ask: first the cards FSRS says are due, then new items from the learner's weakest
topics, keeping the mix the study mode is for — estimates checked by the planner,
predictions checked by experiments, one scenario drill — within the time available.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from lookup.study.bank import KINDS, LEVELS, SYSTEMS, Item, bank
from lookup.study.progress import ProgressStore

#: Minutes an item of each kind takes, for fitting a session into its time.
MINUTES = {"flashcard": 1.0, "concept": 3.0, "estimate": 3.0, "predict": 3.0, "drill": 5.0}
MAX_MINUTES = 180


@dataclass(frozen=True)
class Entry:
    """One question of a session: the item, the variant asked, and why it was chosen."""

    item_id: str
    variant: int
    reason: str  # "due" or "new"

    def as_json(self) -> dict[str, object]:
        """The JSON the CLI prints."""
        return {"id": self.item_id, "variant": self.variant, "reason": self.reason}


def check_choice(names: Iterable[str] | None, allowed: Iterable[str], what: str) -> list[str]:
    """``names`` (all when empty) checked against ``allowed``; ``ValueError`` for others."""
    allowed = list(allowed)
    chosen = list(names or []) or allowed
    unknown = [n for n in chosen if n not in allowed]
    if unknown:
        raise ValueError(f"unknown {what} {', '.join(unknown)}; choose from {', '.join(allowed)}")
    return chosen


def _runnable(item: Item) -> bool:
    from lookup.study.drills import DRILLS, available

    return item.checker is not None and available(DRILLS[item.checker.drill or ""])


def plan_session(
    store: ProgressStore,
    learner: str,
    *,
    systems: Iterable[str] | None = None,
    levels: Iterable[str] | None = None,
    minutes: float = 20,
    kinds: Iterable[str] | None = None,
    now: datetime | None = None,
    seed: int | None = None,
    drills: bool = True,
) -> list[Entry]:
    """The questions of one session for ``learner``, in the order to ask them.

    ``drills=False`` leaves scenario drills out (they start real processes). ``seed``
    fixes the draw (variants and the order among equals); by default it changes per call.
    """
    chosen_systems = check_choice(systems, SYSTEMS, "system")
    chosen_levels = check_choice(levels, LEVELS, "level")
    chosen_kinds = check_choice(kinds, KINDS, "kind")
    if not drills:
        chosen_kinds = [k for k in chosen_kinds if k != "drill"]
    if not 1 <= minutes <= MAX_MINUTES:
        raise ValueError(f"minutes must be between 1 and {MAX_MINUTES}")
    rng = random.Random(seed)
    pool = {
        i.id: i
        for i in bank().values()
        if i.system in chosen_systems and i.level in chosen_levels and i.kind in chosen_kinds
    }
    budget = float(minutes)
    entries: list[Entry] = []

    def take(item: Item, reason: str) -> bool:
        nonlocal budget
        cost = MINUTES[item.kind]
        if cost > budget + 0.01 and entries:
            return False
        budget -= cost
        variant = (
            rng.randint(1, 999) if item.checker and item.checker.vary and reason == "due" else 0
        )
        entries.append(Entry(item.id, variant, reason))
        return True

    for item_id, _ in store.due(learner, now):
        if item_id in pool and budget > 0:
            take(pool.pop(item_id), "due")

    seen = store.seen(learner)
    weakness = {(r["system"], r["topic"]): r["accuracy"] for r in store.accuracy(learner)}
    fresh = [i for i in pool.values() if i.id not in seen]
    rng.shuffle(fresh)
    # Weakest topics first; topics never tried sit between weak and strong ones.
    fresh.sort(key=lambda i: weakness.get((i.system, i.topic), 0.6))
    by_kind: dict[str, list[Item]] = {k: [i for i in fresh if i.kind == k] for k in KINDS}
    # One drill at most per session — one this machine can run (its servers installed) —
    # and at least one of each computed kind when there is time.
    runnable = [i for i in by_kind["drill"] if _runnable(i)]
    if runnable and budget >= MINUTES["drill"]:
        take(runnable[0], "new")
    for kind in ("estimate", "predict"):
        if by_kind[kind] and budget >= MINUTES[kind]:
            take(by_kind[kind].pop(0), "new")
    order = ["estimate", "concept", "flashcard", "predict", "concept", "flashcard"]
    while budget >= 1:
        progressed = False
        for kind in order:
            if by_kind[kind] and budget >= MINUTES[kind]:
                take(by_kind[kind].pop(0), "new")
                progressed = True
        if not progressed:
            break
    # The drill goes last: it is the session's finale and the slowest to run.
    entries.sort(key=lambda e: bank()[e.item_id].kind == "drill")
    return entries
