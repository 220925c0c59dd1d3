"""The question bank: items in our own words, stored as TOML files, validated at load.

An item is one thing a learner can be asked. Its ``kind`` says how it is answered:

- ``estimate`` — a number; the answer is computed by :mod:`lookup.capacity` (or a block's
  own formula) from the item's assumptions, never stored (:mod:`.computed`);
- ``predict`` — a number predicted, then measured by running the real implementation
  (:mod:`.experiments`);
- ``drill`` — a choice and a reason, then a real failure is triggered and its outcome
  measured (:mod:`.drills`);
- ``concept`` and ``flashcard`` — free text, compared with the model answer's key points
  (:mod:`.keypoints`), then graded by the learner.

Files live in ``lookup/study/items/*.toml`` as ``[[item]]`` tables. The schema below is
the contract every file is held to when the bank loads (and in a test).
"""

from __future__ import annotations

import re
import tomllib
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

ITEMS_DIR = Path(__file__).resolve().parent / "items"

#: The systems and building blocks an item can belong to, in the order lists show them.
SYSTEMS: dict[str, str] = {
    "shortener": "URL shortener",
    "typeahead": "Typeahead",
    "proximity": "Proximity search",
    "crawler": "Web crawler",
    "search": "Search engine",
    "ids": "Unique ids",
    "ratelimit": "Rate limiter",
    "kv": "Key-value store",
    "cache": "Distributed cache",
    "shared": "Decide the answer in advance",
}
LEVELS = ("foundational", "interview", "staff")
KINDS = ("estimate", "predict", "drill", "concept", "flashcard")
COMPUTED_KINDS = ("estimate", "predict", "drill")
SEED_FILES = {"000", "003", "004"}

_ID = re.compile(r"^[a-z]+\.[a-z0-9][a-z0-9-]*$")
_SEE = re.compile(r"^(page:[a-z-]+|notebook:[0-9]{2}_[a-z_]+)(#.+)?$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class KeyPoint(_Strict):
    """One point a good answer makes, and the terms that show an answer made it.

    ``terms`` is a list of groups: the point counts as covered when the answer holds at
    least one synonym from every group (words are compared by stem, case-folded).
    """

    text: str = Field(min_length=3)
    terms: list[list[str]] = Field(min_length=1)

    @field_validator("terms")
    @classmethod
    def _groups_not_empty(cls, v: list[list[str]]) -> list[list[str]]:
        for group in v:
            if not group or any(not t.strip() for t in group):
                raise ValueError("every term group needs at least one non-empty synonym")
        return v


class Source(_Strict):
    """Where in the design texts the item's facts come from."""

    file: str
    section: str = Field(min_length=3)

    @field_validator("file")
    @classmethod
    def _known_file(cls, v: str) -> str:
        if v not in SEED_FILES:
            raise ValueError(f"source file must be one of {sorted(SEED_FILES)}")
        return v


Range = tuple[float, float]


class Checker(_Strict):
    """What answers a computed item. Exactly one of plan/function/experiment/drill is set.

    - ``plan`` + ``figure``: a :mod:`lookup.capacity` planner and the figure asked for;
      ``params`` overrides the planner's assumptions for variant 0 (omit to use the
      design text's own);
    - ``function``: a formula of :data:`lookup.study.computed.FUNCTIONS` with ``params``;
    - ``experiment``: a :data:`lookup.study.experiments.EXPERIMENTS` entry with ``params``;
    - ``drill``: a :data:`lookup.study.drills.DRILLS` entry with ``params``.

    ``vary`` maps a parameter to the ``[low, high]`` range seeded variants draw it from.
    """

    plan: str | None = None
    figure: str | None = None
    function: str | None = None
    experiment: str | None = None
    drill: str | None = None
    params: dict[str, float | int | str | bool] = Field(default_factory=dict)
    vary: dict[str, Range] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_source(self) -> Checker:
        chosen = [k for k in ("plan", "function", "experiment", "drill") if getattr(self, k)]
        if len(chosen) != 1:
            raise ValueError("a checker names exactly one of plan, function, experiment, drill")
        if (self.plan is None) != (self.figure is None):
            raise ValueError("plan and figure go together")
        for name, (low, high) in self.vary.items():
            if not low < high:
                raise ValueError(f"vary.{name}: low must be below high")
        return self

    @property
    def target(self) -> str:
        """``plan:shortener.reads_per_s``, ``experiment:ring_growth`` and the like."""
        if self.plan:
            return f"plan:{self.plan}.{self.figure}"
        for k in ("function", "experiment", "drill"):
            if getattr(self, k):
                return f"{k}:{getattr(self, k)}"
        raise AssertionError("validated above")


class Item(_Strict):
    """One question of the bank."""

    id: str
    system: Literal[tuple(SYSTEMS)]  # type: ignore[valid-type]
    topic: str = Field(min_length=2, max_length=40)
    level: Literal[LEVELS]  # type: ignore[valid-type]
    kind: Literal[KINDS]  # type: ignore[valid-type]
    prompt: str = Field(min_length=10)
    key_points: list[KeyPoint] = Field(min_length=1)
    source: Source
    see: list[str] = Field(default_factory=list)
    checker: Checker | None = None

    @field_validator("id")
    @classmethod
    def _id_shape(cls, v: str) -> str:
        if not _ID.match(v):
            raise ValueError("id must look like 'system.slug' (lower case, digits, hyphens)")
        return v

    @field_validator("topic")
    @classmethod
    def _topic_shape(cls, v: str) -> str:
        if v != v.strip().lower():
            raise ValueError("topic is lower case without surrounding spaces")
        return v

    @field_validator("see")
    @classmethod
    def _see_shape(cls, v: list[str]) -> list[str]:
        for link in v:
            if not _SEE.match(link):
                raise ValueError(f"see entry {link!r} must be page:<url_path> or notebook:<name>")
        return v

    @model_validator(mode="after")
    def _checker_fits_kind(self) -> Item:
        if not self.id.startswith(self.system + "."):
            raise ValueError(f"id {self.id!r} must start with its system {self.system!r}")
        needs = {"estimate": ("plan", "function"), "predict": ("experiment",), "drill": ("drill",)}
        if self.kind in needs:
            if self.checker is None:
                raise ValueError(f"a {self.kind} item needs a checker")
            kind_of = self.checker.target.split(":")[0]
            if kind_of not in needs[self.kind]:
                raise ValueError(
                    f"a {self.kind} item's checker must name {' or '.join(needs[self.kind])}"
                )
        elif self.checker is not None:
            raise ValueError(f"a {self.kind} item has no checker: its answer is its key points")
        return self

    @property
    def computed(self) -> bool:
        """Whether a checker, not the key points alone, answers this item."""
        return self.kind in COMPUTED_KINDS


class BankError(ValueError):
    """A bank file that does not meet the schema; the message names the file and item."""


def parse_file(path: Path) -> list[Item]:
    """The items of one TOML file, validated; :class:`BankError` names what is wrong."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise BankError(f"{path.name}: not valid TOML: {exc}") from exc
    extra = set(data) - {"item"}
    if extra:
        raise BankError(f"{path.name}: unknown top-level key(s) {sorted(extra)}; use [[item]]")
    items = []
    for number, raw in enumerate(data.get("item", []), start=1):
        try:
            items.append(Item.model_validate(raw))
        except ValidationError as exc:
            ident = raw.get("id", f"item #{number}") if isinstance(raw, dict) else f"item #{number}"
            raise BankError(f"{path.name}: {ident}: {exc}") from exc
    return items


def load_items(directory: Path = ITEMS_DIR) -> dict[str, Item]:
    """Every item of every ``*.toml`` file under ``directory``, by id (ids are unique)."""
    items: dict[str, Item] = {}
    for path in sorted(directory.glob("*.toml")):
        for item in parse_file(path):
            if item.id in items:
                raise BankError(f"{path.name}: duplicate id {item.id!r}")
            items[item.id] = item
    return items


@cache
def bank() -> dict[str, Item]:
    """The packaged bank, loaded once per process."""
    return load_items()


def get_item(item_id: str) -> Item:
    """One item by id; ``KeyError`` with the closest ids when there is none."""
    items = bank()
    if item_id in items:
        return items[item_id]
    import difflib

    close = difflib.get_close_matches(item_id, list(items), n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise KeyError(f"no study item {item_id!r}{hint}")


def as_row(item: Item) -> dict[str, Any]:
    """The listing row of an item (what ``lookup study list --json`` prints)."""
    return {
        "id": item.id,
        "system": item.system,
        "topic": item.topic,
        "kind": item.kind,
        "level": item.level,
        "prompt": item.prompt,
    }
