"""A learner's progress, in SQLite in the data directory: reviews, cards, mock interviews.

A learner is a name (no accounts). Every answer is a review row (what was asked, the
verdict or self-grade); every item answered is an FSRS card with its next due time
(:mod:`.schedule`); every mock interview keeps its notes, time per step, rubric ticks and
written decision. Accuracy per system and topic, weakest first, and the cards due today
and this week are read from these tables.
"""

from __future__ import annotations

import json
import threading
import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

from lookup.kit.engines.sqlite import connect
from lookup.study.schedule import SCORE, VERDICT_RATING, review

_SCHEMA = """
CREATE TABLE IF NOT EXISTS reviews (
    id INTEGER PRIMARY KEY,
    learner TEXT NOT NULL,
    item_id TEXT NOT NULL,
    variant INTEGER NOT NULL DEFAULT 0,
    kind TEXT NOT NULL,
    system TEXT NOT NULL,
    topic TEXT NOT NULL,
    level TEXT NOT NULL,
    verdict TEXT,
    grade TEXT NOT NULL,
    score REAL NOT NULL,
    answer TEXT,
    expected TEXT,
    at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS reviews_learner ON reviews (learner, at);
CREATE TABLE IF NOT EXISTS cards (
    learner TEXT NOT NULL,
    item_id TEXT NOT NULL,
    card TEXT NOT NULL,
    due TEXT NOT NULL,
    PRIMARY KEY (learner, item_id)
);
CREATE TABLE IF NOT EXISTS interviews (
    id INTEGER PRIMARY KEY,
    learner TEXT NOT NULL,
    design TEXT NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    steps TEXT NOT NULL,
    decision TEXT NOT NULL
);
"""

MAX_NAME = 40


def check_learner(name: str) -> str:
    """A learner's name, trimmed and NFC-normalised; ``ValueError`` with what is allowed."""
    if not isinstance(name, str):
        raise ValueError("the learner's name must be text")
    cleaned = unicodedata.normalize("NFC", name).strip()
    if not cleaned:
        raise ValueError("give a learner name (any name; there are no accounts)")
    if len(cleaned) > MAX_NAME:
        raise ValueError(f"a learner name is at most {MAX_NAME} characters")
    if any(unicodedata.category(ch).startswith("C") for ch in cleaned):
        raise ValueError("a learner name cannot hold control characters")
    return cleaned


def _iso(when: datetime) -> str:
    return when.astimezone(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class Review:
    """One answer to record."""

    item_id: str
    kind: str
    system: str
    topic: str
    level: str
    grade: str
    verdict: str | None = None
    variant: int = 0
    answer: str | None = None
    expected: str | None = None


class ProgressStore(Protocol):
    """The seam: where a learner's reviews, FSRS cards and mock interviews are kept."""

    def record(self, learner: str, r: Review, when: datetime | None = None) -> datetime: ...
    def learners(self) -> list[str]: ...
    def seen(self, learner: str) -> set[str]: ...
    def due(self, learner: str, until: datetime | None = None) -> list[tuple[str, datetime]]: ...
    def due_counts(self, learner: str, now: datetime | None = None) -> dict[str, int]: ...
    def reviews(self, learner: str) -> list[dict[str, Any]]: ...
    def accuracy(self, learner: str) -> list[dict[str, Any]]: ...
    def accuracy_by_day(self, learner: str) -> list[dict[str, Any]]: ...
    def save_interview(self, learner: str, design: str, started_at: datetime,
                       steps: list[dict[str, Any]], decision: dict[str, str],
                       finished_at: datetime | None = None) -> int: ...  # fmt: skip
    def interviews(self, learner: str) -> list[dict[str, Any]]: ...
    def close(self) -> None: ...


def open_progress_store(url: str) -> ProgressStore:
    """The progress store at ``url``: ``sqlite:///path/progress.sqlite`` (the only backend:
    a learner's progress is their own, so it needs no shared engine)."""
    if not url.startswith("sqlite:///"):
        raise ValueError(f"a progress store URL is sqlite:///path, got {url!r}")
    return SqliteProgressStore(url.removeprefix("sqlite://"))


def progress_in(data_dir: str | Path) -> ProgressStore:
    """The progress store of a data directory: ``<data_dir>/study/progress.sqlite``."""
    return open_progress_store(
        f"sqlite://{(Path(data_dir) / 'study' / 'progress.sqlite').resolve()}"
    )


class SqliteProgressStore:
    """Reviews, FSRS cards and mock interviews of every learner in one SQLite file."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = connect(self.path)
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        """Close the file."""
        self._db.close()

    def _rows(self, sql: str, *args: Any) -> list[dict[str, Any]]:
        with self._lock:
            cur = self._db.execute(sql, args)
            cols = [c[0] for c in cur.description]
            return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]

    # -- reviews and cards ---------------------------------------------------------
    def record(self, learner: str, r: Review, when: datetime | None = None) -> datetime:
        """Record ``r`` and reschedule its card; returns when the item is due next."""
        learner = check_learner(learner)
        when = when or datetime.now(UTC)
        grade = r.grade if r.grade in SCORE and r.grade not in VERDICT_RATING else None
        if grade is None:
            raise ValueError("grade must be one of again, hard, good, easy")
        score = SCORE[r.verdict] if r.verdict in VERDICT_RATING else SCORE[grade]
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                row = self._db.execute(
                    "SELECT card FROM cards WHERE learner = ? AND item_id = ?", (learner, r.item_id)
                ).fetchone()
                card, due = review(row[0] if row else None, grade, when)
                self._db.execute(
                    "INSERT INTO reviews (learner, item_id, variant, kind, system, topic, level,"
                    " verdict, grade, score, answer, expected, at)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (learner, r.item_id, r.variant, r.kind, r.system, r.topic, r.level,
                     r.verdict, grade, score, r.answer, r.expected, _iso(when)),
                )  # fmt: skip
                self._db.execute(
                    "INSERT INTO cards (learner, item_id, card, due) VALUES (?, ?, ?, ?)"
                    " ON CONFLICT (learner, item_id) DO UPDATE SET card = excluded.card,"
                    " due = excluded.due",
                    (learner, r.item_id, card, _iso(due)),
                )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return due

    def learners(self) -> list[str]:
        """Every learner with a review or an interview, by name."""
        rows = self._rows(
            "SELECT learner FROM reviews UNION SELECT learner FROM interviews ORDER BY 1"
        )
        return [r["learner"] for r in rows]

    def seen(self, learner: str) -> set[str]:
        """Ids of the items ``learner`` has a card for."""
        rows = self._rows("SELECT item_id FROM cards WHERE learner = ?", check_learner(learner))
        return {r["item_id"] for r in rows}

    def due(self, learner: str, until: datetime | None = None) -> list[tuple[str, datetime]]:
        """Items due for ``learner`` by ``until`` (default now), most overdue first."""
        until = until or datetime.now(UTC)
        rows = self._rows(
            "SELECT item_id, due FROM cards WHERE learner = ? AND due <= ? ORDER BY due, item_id",
            check_learner(learner), _iso(until),
        )  # fmt: skip
        return [(r["item_id"], datetime.fromisoformat(r["due"])) for r in rows]

    def due_counts(self, learner: str, now: datetime | None = None) -> dict[str, int]:
        """Cards due now, by the end of today (UTC) and within the next seven days."""
        now = now or datetime.now(UTC)
        end_of_day = now.replace(hour=23, minute=59, second=59, microsecond=0)
        return {
            "now": len(self.due(learner, now)),
            "today": len(self.due(learner, end_of_day)),
            "week": len(self.due(learner, now + timedelta(days=7))),
        }

    def reviews(self, learner: str) -> list[dict[str, Any]]:
        """Every review of ``learner``, oldest first."""
        return self._rows(
            "SELECT item_id, variant, kind, system, topic, level, verdict, grade, score, answer,"
            " expected, at FROM reviews WHERE learner = ? ORDER BY at, id",
            check_learner(learner),
        )

    def accuracy(self, learner: str) -> list[dict[str, Any]]:
        """Accuracy per system and topic (mean score of its reviews), weakest first."""
        return self._rows(
            "SELECT system, topic, COUNT(*) AS reviews, ROUND(AVG(score), 4) AS accuracy"
            " FROM reviews WHERE learner = ? GROUP BY system, topic"
            " ORDER BY accuracy, reviews DESC, system, topic",
            check_learner(learner),
        )

    def accuracy_by_day(self, learner: str) -> list[dict[str, Any]]:
        """Accuracy per day and system, for the progress chart."""
        return self._rows(
            "SELECT substr(at, 1, 10) AS day, system, COUNT(*) AS reviews,"
            " ROUND(AVG(score), 4) AS accuracy FROM reviews WHERE learner = ?"
            " GROUP BY day, system ORDER BY day, system",
            check_learner(learner),
        )

    # -- mock interviews -------------------------------------------------------------
    def save_interview(self, learner: str, design: str, started_at: datetime,
                       steps: list[dict[str, Any]], decision: dict[str, str],
                       finished_at: datetime | None = None) -> int:  # fmt: skip
        """Keep one mock interview (notes, seconds and rubric ticks per step, the decision)."""
        learner = check_learner(learner)
        with self._lock:
            cur = self._db.execute(
                "INSERT INTO interviews (learner, design, started_at, finished_at, steps, decision)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (learner, design, _iso(started_at), _iso(finished_at) if finished_at else None,
                 json.dumps(steps, ensure_ascii=False), json.dumps(decision, ensure_ascii=False)),
            )  # fmt: skip
            return int(cur.lastrowid or 0)

    def interviews(self, learner: str) -> list[dict[str, Any]]:
        """Every mock interview of ``learner``, newest first, with its steps and decision."""
        rows = self._rows(
            "SELECT id, design, started_at, finished_at, steps, decision FROM interviews"
            " WHERE learner = ? ORDER BY id DESC",
            check_learner(learner),
        )
        for r in rows:
            r["steps"] = json.loads(r["steps"])
            r["decision"] = json.loads(r["decision"])
        return rows
