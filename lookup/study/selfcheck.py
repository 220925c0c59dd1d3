"""Self-check questions for the notebooks: ask an item, check an answer, show the verdict.

Each system's notebook ends with three questions from the bank, judged by the same code
as ``lookup study check`` and the Study page (:func:`lookup.study.judge.answer_item`)::

    from lookup.study import selfcheck

    selfcheck.ask("shortener.peak-reads")              # the question, rendered as markdown
    selfcheck.check("shortener.peak-reads", "15k/s")   # verdict, computed figure and its chain

:func:`questions` picks a fixed set per system — an estimate, a concept question and a
flashcard (or a predict-then-run item when one is named) — the same every time, so a
notebook's questions do not move under the reader. Nothing here imports Jupyter: the
objects returned render themselves through ``_repr_markdown_``, and print as plain text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from lookup.study.answers import AnswerError
from lookup.study.bank import KINDS, LEVELS, SYSTEMS, Item, bank, get_item

#: The hand-picked questions of each system, estimate / concept / flashcard-or-predict,
#: chosen for what the system's notebook measures and for checks that answer at once
#: (every predict item here runs its real experiment embedded, in about a second or less).
#: :func:`questions` falls back on a fixed rule when an id here is not (yet) in the bank.
PICKS: dict[str, tuple[str, ...]] = {
    "shortener": (
        "shortener.peak-reads",
        "shortener.alias-race",
        "shortener.run-hot-link-cache",
    ),
    "typeahead": (
        "typeahead.trie-memory",
        "typeahead.topk-per-node",
        "typeahead.run-letter-shards",
    ),
    "proximity": (
        "proximity.quadtree-memory",
        "proximity.cell-edge",
        "proximity.run-radius-cells-p6",
    ),
    "crawler": (
        "crawler.bloom-bytes",
        "crawler.politeness-structural",
        "crawler.run-bloom-false-positives",
    ),
    "search": (
        "search.fanout-tail",
        "search.hedging",
        "search.index-writes-card",
    ),
    "ids": (
        "ids.per-worker-rate",
        "ids.structural-uniqueness",
        "ids.sequence-exhausted",
    ),
    "ratelimit": (
        "ratelimit.fixed-window-burst",
        "ratelimit.limit-over-n",
        "ratelimit.run-fixed-window-boundary",
    ),
    "kv": (
        "kv.quorum-overlap-wide",
        "kv.isolated-replica-w1",
        "kv.run-ring-growth",
    ),
    "cache": (
        "cache.cold-restart-ratio",
        "cache.single-flight-500",
        "cache.jittered-ttl",
    ),
    "shared": (
        "shared.practice-read-rate",
        "shared.write-path-off-read-path",
        "shared.rules-of-thumb",
    ),
}

#: The questions closing each notebook, in the order the notebook asks them.
NOTEBOOKS: dict[str, tuple[str, ...]] = {
    "01_capacity_math": (
        "shared.practice-read-rate",
        "typeahead.peak-requests",
        "shortener.storage",
    ),
    "02_url_shortener": PICKS["shortener"],
    "03_typeahead": PICKS["typeahead"],
    "04_proximity_search": PICKS["proximity"],
    "05_web_crawler": PICKS["crawler"],
    "06_search_engine": PICKS["search"],
    "07_ids_and_rate_limits": (
        "ids.per-worker-rate",
        "ratelimit.limit-over-n",
        "ratelimit.run-fixed-window-boundary",
    ),
    "08_kv_and_cache": (
        "cache.cold-restart-ratio",
        "kv.isolated-replica-w1",
        "kv.run-ring-growth",
    ),
}

#: The systems each notebook is about (what :func:`for_notebook` falls back on).
NOTEBOOK_SYSTEMS: dict[str, tuple[str, ...]] = {
    "01_capacity_math": (
        "shared",
        "typeahead",
        "shortener",
    ),
    "02_url_shortener": ("shortener",),
    "03_typeahead": ("typeahead",),
    "04_proximity_search": ("proximity",),
    "05_web_crawler": ("crawler",),
    "06_search_engine": ("search",),
    "07_ids_and_rate_limits": (
        "ids",
        "ratelimit",
    ),
    "08_kv_and_cache": (
        "cache",
        "kv",
    ),
}

Slot = str | tuple[str, ...]
#: One estimate, one concept question, one flashcard (or a named predict item).
DEFAULT_KINDS: tuple[Slot, ...] = ("estimate", "concept", ("flashcard", "predict"))
#: Kinds the fallback rule may pick without being asked: they answer at once.
_QUICK = ("estimate", "concept", "flashcard")
_LEVEL_ORDER = {"interview": 0, "foundational": 1, "staff": 2}


def _systems(system: str | Sequence[str]) -> tuple[str, ...]:
    names = (system,) if isinstance(system, str) else tuple(system)
    if not names:
        raise ValueError("name at least one system")
    for name in names:
        if name not in SYSTEMS:
            raise ValueError(f"unknown system {name!r}; choose from {', '.join(SYSTEMS)}")
    return names


def _slots(kinds: Sequence[Slot] | None, n: int) -> list[tuple[str, ...]]:
    pattern = [(k,) if isinstance(k, str) else tuple(k) for k in (kinds or DEFAULT_KINDS)]
    if not pattern or any(not group for group in pattern):
        raise ValueError("kinds must name at least one kind per slot")
    for group in pattern:
        for kind in group:
            if kind not in KINDS:
                raise ValueError(f"unknown kind {kind!r}; choose from {', '.join(KINDS)}")
    return [pattern[i % len(pattern)] for i in range(n)]


def _ranked(system: str, items: dict[str, Item]) -> list[Item]:
    """The system's items in pick order: its hand-picked ids, then a fixed rule."""
    picked = [items[i] for i in PICKS.get(system, ()) if i in items]
    rest = sorted(
        (it for it in items.values() if it.system == system and it not in picked),
        key=lambda it: (_LEVEL_ORDER.get(it.level, len(LEVELS)), it.id),
    )
    return picked + rest


def questions(
    system: str | Sequence[str], n: int = 3, kinds: Sequence[Slot] | None = None
) -> list[Item]:
    """``n`` questions about ``system`` (or several systems, taken in turn), the same every call.

    ``kinds`` gives the kind of each slot (a kind, or a tuple of acceptable kinds), repeated
    to fill ``n``; by default an estimate, a concept question and a flashcard. Hand-picked
    items (:data:`PICKS`) come first; without them, interview-level items before
    foundational and staff ones, then by id. Predict and drill items are picked only when
    hand-picked or asked for by kind. A slot no item fits is filled with another quick item.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError("n must be a whole number of at least 1")
    names = _systems(system)
    slots = _slots(kinds, n)
    items = bank()
    ranked = {name: _ranked(name, items) for name in names}
    hand = {i for name in names for i in PICKS.get(name, ())}
    chosen: list[Item] = []
    unfilled = 0
    for index, allowed in enumerate(slots):
        order = names[index % len(names) :] + names[: index % len(names)]
        found = next(
            (
                it
                for name in order
                for it in ranked[name]
                if it.kind in allowed
                and it not in chosen
                and (it.kind in _QUICK or it.id in hand or kinds is not None)
            ),
            None,
        )
        if found is None:
            unfilled += 1
        else:
            chosen.append(found)
    spare = [
        it
        for name in names
        for it in ranked[name]
        if it not in chosen and (it.kind in _QUICK or it.id in hand)
    ]
    chosen.extend(spare[:unfilled])
    return chosen


def for_notebook(name: str) -> list[Item]:
    """The questions that close notebook ``name`` (``"02_url_shortener"``)."""
    if name not in NOTEBOOKS:
        raise KeyError(f"no self-check for notebook {name!r}; known: {', '.join(NOTEBOOKS)}")
    items = bank()
    chosen = [items[i] for i in NOTEBOOKS[name] if i in items]
    if len(chosen) < len(NOTEBOOKS[name]):
        extra = questions(NOTEBOOK_SYSTEMS[name], n=len(NOTEBOOKS[name]) + len(chosen))
        chosen += [it for it in extra if it not in chosen][: len(NOTEBOOKS[name]) - len(chosen)]
    return chosen


# --- rendering ----------------------------------------------------------------------

_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|#])")


def _md(text: str) -> str:
    """``text`` with the characters markdown would act on escaped."""
    return _MD_SPECIAL.sub(r"\\\1", text)


_UNIT_HINTS = {
    "B": "a size, such as `12 GB` or `500 MB`",
    "B/s": "a byte rate, such as `40 MB/s`",
    "bit": "a number of bits, such as `10 Gbit`",
    "bit/s": "a bit rate, such as `3 Gbit/s`",
    "/s": "a rate, such as `3.5k/s` or `2 million/s`",
    "/day": "a daily rate, such as `5B/day`",
    "fraction": "a fraction or a percentage, such as `0.05` or `5%`",
    "s": "a duration, such as `40 ms` or `2 h`",
    "m": "a distance, such as `600 m` or `5 km`",
    "years": "a number of years, such as `30`",
}


class Prompt(str):
    """A question as markdown: a ``str`` that renders itself in a notebook."""

    def _repr_markdown_(self) -> str:
        return str(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))


def _answer_hint(item: Item, variant: int) -> str:
    if item.kind == "estimate":
        from lookup.study.checking import compute

        unit = compute(item, variant).unit
        wanted = _UNIT_HINTS.get(unit, "a number, such as `4,000` or `1e9`")
        return f"Answer with {wanted}; the capacity model computes the figure to compare."
    if item.kind == "predict":
        return "Predict a number; the real implementation then runs and measures it."
    if item.kind == "drill":
        from lookup.study.checking import drill

        choices = drill(item.checker.drill if item.checker and item.checker.drill else "").choices
        listed = "; ".join(f"`{key}` {_md(text)}" for key, text in choices.items())
        return f"Answer with one choice ({listed}); a real failure is then triggered and measured."
    return "Answer in a few sentences; you will see which key points your answer covered."


def ask(item_id: str, variant: int = 0) -> Prompt:
    """The question ``item_id`` as markdown, with the variant's numbers filled in.

    Variant 0 asks with the design text's own numbers; any other variant draws new ones.
    """
    from lookup.study.checking import check_variant, prompt_for

    item = get_item(item_id)
    check_variant(variant)
    head = f"**{SYSTEMS[item.system]} · {item.kind} · {item.level}** — `{item.id}`" + (
        f" (variant {variant})" if variant else ""
    )
    body = "\n".join(
        f"> {_md(line)}" if line else ">" for line in prompt_for(item, variant).splitlines()
    )
    return Prompt(f"{head}\n\n{body}\n\n*{_answer_hint(item, variant)}*")


@dataclass(frozen=True, repr=False)
class SelfCheck:
    """The verdict on one answer: what :func:`check` returns and a notebook shows.

    ``result`` is what ``lookup study check --json`` prints for the same answer; ``error``
    is set instead when the answer could not be read (``"lots"``, ``"12 parsecs"``, empty).
    """

    item: Item
    answer: str
    variant: int = 0
    result: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    @property
    def verdict(self) -> str | None:
        """``exact``, ``close`` or ``off`` for a number or a drill; None for free text."""
        return self.result.get("verdict")

    @property
    def expected(self) -> str | None:
        """The computed or measured figure as people read it (``"19,300/s"``)."""
        return self.result.get("expectedText")

    @property
    def chain(self) -> list[str]:
        """The formula chain (or experiment steps) behind the figure."""
        return list(self.result.get("chain", []))

    @property
    def points(self) -> list[dict[str, Any]]:
        """Each key point with whether the answer covered it (free-text kinds)."""
        return list(self.result.get("keyPoints", []))

    @property
    def covered(self) -> int | None:
        """How many key points the answer covered (free-text kinds)."""
        return self.result.get("covered")

    @property
    def grade(self) -> str | None:
        """The suggested self-grade: again, hard, good or easy."""
        return self.result.get("grade")

    def as_json(self) -> dict[str, Any]:
        """The result as JSON, with the error when the answer could not be read."""
        return {**self.result, "error": self.error} if self.error else dict(self.result)

    # The two renderings share one outline: headline, details, where to read more.
    def _lines(self, markdown: bool) -> list[str]:
        esc = _md if markdown else (lambda s: s)
        bold = (lambda s: f"**{s}**") if markdown else (lambda s: s.upper())
        bullet = "- " if markdown else "  - "
        out: list[str] = []
        if self.error:
            out.append(f"{bold('Could not read the answer')}: {esc(self.error)}")
            return out
        kind = self.item.kind
        if kind in ("estimate", "predict"):
            source = (
                "the capacity model computes" if kind == "estimate" else "the real code measured"
            )
            ratio = self.result.get("ratio")
            away = f" ({ratio:.2f}× away)" if isinstance(ratio, int | float) and ratio != 1 else ""
            out.append(
                f"{bold(str(self.verdict).capitalize())} — you said {esc(self.answer.strip())}; "
                f"{source} {esc(str(self.expected))}{away}."
            )
            out.append("Within 1.25× counts as exact, within 3× as close, anything further as off.")
            if self.chain:
                out.append("")
                out.append(
                    "How the figure is worked out:" if kind == "estimate" else "What was run:"
                )
                out.extend(f"{bullet}{esc(line)}" for line in self.chain)
        elif kind == "drill":
            out.append(
                f"{bold(str(self.verdict).capitalize())} — you predicted "
                f"{esc(str(self.result.get('predictedText')))}; the drill measured "
                f"{esc(str(self.result.get('measuredText')))}."
            )
            summary = self.result.get("outcome", {}).get("summary")
            if summary:
                out.append(esc(summary))
        else:
            total = self.result.get("total", 0)
            out.append(
                f"{bold(f'You covered {self.covered} of {total} key points')} "
                f"(suggested grade: {self.grade}). This is a checklist, not a judge: "
                "read the points and grade yourself."
            )
            out.append("")
            for point in self.points:
                mark = "✓" if point["covered"] else "✗"
                line = f"{bullet}{mark} {esc(point['point'])}"
                if not point["covered"]:
                    missing = " and ".join(" / ".join(group) for group in point["missingAnyOf"])
                    star = "*" if markdown else ""
                    line += f" — {star}not found: {esc(missing)}{star}"
                out.append(line)
        src = self.item.source
        where = f"design notes, text {src.file}, “{src.section}”"
        see = ", ".join(f"`{s}`" if markdown else s for s in self.item.see)
        out.append("")
        note = f"Source: {esc(where)}" + (f" · see {see}" if see else "")
        out.append(f"*{note}*" if markdown else note)
        return out

    def _repr_markdown_(self) -> str:
        return "\n".join(self._lines(markdown=True))

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))

    def __str__(self) -> str:
        return "\n".join(self._lines(markdown=False))

    def __repr__(self) -> str:
        outcome = self.error and "unreadable" or self.verdict or f"{self.covered} points covered"
        return f"<SelfCheck {self.item.id}: {outcome}>"


def check(item_id: str, answer: str, variant: int = 0) -> SelfCheck:
    """Judge ``answer`` to ``item_id`` as the CLI and the Study page do.

    An estimate is scored by ratio against the planner's figure (its chain shown); a
    concept question or flashcard gets the checklist of key points. An answer that cannot
    be read comes back with :attr:`SelfCheck.error` set rather than raising; an unknown
    id raises ``KeyError``.
    """
    from lookup.study.checking import check_variant
    from lookup.study.judge import answer_item

    item = get_item(item_id)
    check_variant(variant)
    text = "" if answer is None else str(answer)
    try:
        result = answer_item(item, text, variant)
    except AnswerError as exc:
        return SelfCheck(item, text, variant, error=str(exc))
    return SelfCheck(item, text, variant, result=result)


def used_ids(names: Iterable[str] | None = None) -> list[str]:
    """Every item id the notebooks' self-checks name (to check the bank still has them)."""
    return [i for name in (names or NOTEBOOKS) for i in NOTEBOOKS[name]]
