"""Query-time synonyms: a hand-edited table, re-read when it changes, applied to queries.

The table is a text file in the data directory (``<data-dir>/search/synonyms.txt`` by
default, the ``search_synonyms`` setting), in Solr's and Elasticsearch's ``synonyms``
format, one rule a line::

    # a comment
    js, javascript          -- equivalent: a query for any of them finds every one
    k8s => kubernetes       -- one way: a query for k8s also finds kubernetes

Rules are applied **at query time** (Elasticsearch's ``synonym_graph`` in a search
analyzer): the index is not touched, so an edit serves within a second without a
rebuild. Each entry goes through the same analysis as a query (``JS`` is ``js``,
``running`` is ``run``); an entry of several words is a phrase on the alternative side
(``ml => machine learning``) but cannot be looked up itself: a rule is keyed by one
index term. A query term with synonyms becomes ``(term OR synonym …)``, and each
synonym's BM25 weight is multiplied by :data:`SYNONYM_WEIGHT`'s setting (0.5), so a page
with the word as typed ranks above one with only its synonym (the original weighs more).

The same rewrite gives a folded query word its exact spelling back: ``café`` is
searched as ``cafe`` (every spelling) **or** ``café`` (stacked in the index beside the
folded term, :mod:`.analysis`), at full weight, so a page with the accent as typed ranks
first (Elasticsearch's ``asciifolding`` with ``preserve_original``).

The table is read once and then looked at by modification time at most once a second
(:class:`SynonymTable`); a query pays a clock read and a dict lookup per term. A file
that cannot be read keeps the last good table; a missing file is the empty table (the
service writes the seed rules when it first starts, :func:`write_seed`).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lookup.search.analysis import Phrase, analyze, exact_terms, words_of
from lookup.search.query import And, Node, Or, PhraseNode, Term, map_nodes, positive_terms

#: A synonym's weight next to the word as typed (1.0): the default of ``search_synonym_weight``.
SYNONYM_WEIGHT = 0.5
#: At most this many alternatives per term (a query's terms stay bounded).
MAX_ALTERNATIVES = 8
#: Rules read from one file at most; a larger file is read up to here (and says so).
MAX_RULES = 10_000
#: Bytes of the file read at most.
MAX_BYTES = 1 << 20
#: How often the file's modification time is looked at.
RECHECK_SECONDS = 1.0

#: The rules a new data directory starts with (written once, then the user's to edit).
SEED = """\
# Search synonyms, applied when a query is searched (no rebuild needed; edits serve
# within a second). One rule a line:
#   a, b, c     equivalent: a query for any of them also finds the others
#   a => b, c   one way: a query for a also finds b and c
# A synonym weighs less than the word as typed, so exact matches rank first.
js, javascript
ts, typescript
k8s, kubernetes
"""


@dataclass(frozen=True)
class Alternative:
    """One synonym of a term: the entry as written and what it searches for."""

    text: str
    node: Node


@dataclass(frozen=True)
class Synonyms:
    """A parsed table: each index term's alternatives, and what was skipped while reading."""

    alternatives: dict[str, tuple[Alternative, ...]] = field(default_factory=dict)
    rules: int = 0
    skipped: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.alternatives)


EMPTY = Synonyms()


def _entry(text: str) -> Alternative | None:
    """An entry analysed as a query: one term, a phrase, or None (only stop words)."""
    a = analyze(text)
    if not a.terms:
        return None
    if len(a.terms) == 1:
        return Alternative(text, Term(a.terms[0]))
    first = a.positions[0]
    return Alternative(
        text, PhraseNode(Phrase(tuple(a.terms), tuple(p - first for p in a.positions)))
    )


def parse(text: str) -> Synonyms:
    """Parse a table (see the module docstring); bad lines are skipped and named."""
    table: dict[str, list[Alternative]] = {}
    skipped: list[str] = []
    rules = 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()  # comments take a whole line: "#" is also part of c# and f#
        if not line or line.startswith("#"):
            continue
        if rules >= MAX_RULES:
            skipped.append(f"line {number}: more than {MAX_RULES} rules")
            break
        left, arrow, right = line.partition("=>")
        sources = [w.strip() for w in left.split(",") if w.strip()]
        targets = [w.strip() for w in right.split(",") if w.strip()] if arrow else sources
        if not sources or (arrow and not targets) or (not arrow and len(sources) < 2):
            skipped.append(f"line {number}: {raw.strip()[:80]!r} needs two entries")
            continue
        parsed_targets = [(w, _entry(w)) for w in targets]
        if any(alt is None for _, alt in parsed_targets):
            bad = next(w for w, alt in parsed_targets if alt is None)
            skipped.append(f"line {number}: {bad!r} has only stop words")
            continue
        keyed = 0
        for source in sources:
            alt = _entry(source)
            if alt is None or not isinstance(alt.node, Term):
                continue  # a phrase is never a key; it may still be another's synonym
            keyed += 1
            have = table.setdefault(alt.node.term, [])
            for _, target in parsed_targets:
                assert target is not None
                if target.node != alt.node and all(h.node != target.node for h in have):
                    have.append(target)
        if not keyed:
            skipped.append(f"line {number}: no entry of {raw.strip()[:80]!r} is one word")
            continue
        rules += 1
    return Synonyms(
        {t: tuple(alts[:MAX_ALTERNATIVES]) for t, alts in table.items() if alts},
        rules,
        tuple(skipped),
    )


class SynonymTable:
    """The table in a file, re-read when its modification time or size changes (checked at
    most once every ``recheck_s``); an unreadable file keeps the last good table."""

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        recheck_s: float = RECHECK_SECONDS,
        weight: float = SYNONYM_WEIGHT,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = Path(path) if path is not None else None
        self.recheck_s = recheck_s
        self.weight = weight
        self._clock = clock
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._checked = float("-inf")
        self._current = EMPTY
        self.error: str | None = None
        self.loads = 0

    def current(self) -> Synonyms:
        """The table as of the last check (looking at the file if a second has passed)."""
        if self.path is None:
            return EMPTY
        now = self._clock()
        if now - self._checked < self.recheck_s:
            return self._current
        with self._lock:
            if now - self._checked >= self.recheck_s:
                self._reload()
                self._checked = now
        return self._current

    def _reload(self) -> None:
        assert self.path is not None
        try:
            st = self.path.stat()
        except FileNotFoundError:
            self._stamp, self._current, self.error = None, EMPTY, None
            return
        except OSError as exc:
            self.error = f"{self.path}: {exc.strerror or exc}"
            return
        stamp = (st.st_mtime_ns, st.st_size)
        if stamp == self._stamp:
            return
        try:
            with self.path.open("rb") as f:
                raw = f.read(MAX_BYTES)
            self._current = parse(raw.decode("utf-8", "replace"))
            self._stamp = stamp
            self.error = None
            self.loads += 1
        except OSError as exc:
            self.error = f"{self.path}: {exc.strerror or exc}"

    def status(self) -> dict[str, Any]:
        """For ``/search/status``: the file, how many rules and terms, what was skipped."""
        table = self.current()
        out: dict[str, Any] = {
            "file": None if self.path is None else str(self.path),
            "rules": table.rules,
            "terms": len(table.alternatives),
            "weight": self.weight,
        }
        if table.skipped:
            out["skipped"] = list(table.skipped[:20])
        if self.error:
            out["error"] = self.error
        return out


def table_path(data_dir: str | os.PathLike[str]) -> tuple[Path | None, bool]:
    """The synonym file the server reads (the ``search_synonyms`` setting) and whether it is
    the default one, which the server seeds; ``(None, False)`` when the setting is ``off``."""
    from lookup import settings

    chosen = str(settings.get("search_synonyms") or "").strip()
    if chosen.lower() == "off":
        return None, False
    if chosen:
        return Path(chosen.removeprefix("file://")), False
    return Path(data_dir) / "search" / "synonyms.txt", True


def write_seed(path: str | os.PathLike[str]) -> bool:
    """Write :data:`SEED` to ``path`` if no file is there (never over one); True if written."""
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("x", encoding="utf-8") as f:
            f.write(SEED)
        return True
    except FileExistsError:
        return False


@dataclass(frozen=True)
class Expansion:
    """A query rewritten with synonyms and exact spellings.

    ``node`` matches; ``weights`` are the BM25 weights of terms below 1 (synonyms only);
    ``applied`` says which term found which synonyms, for the answer (``synonyms``).
    """

    node: Node
    weights: dict[str, float]
    applied: list[dict[str, Any]]


def expand(
    node: Node, table: Synonyms, exact: dict[str, str], weight: float = SYNONYM_WEIGHT
) -> Expansion | None:
    """``node`` with every term that has synonyms or an exact spelling made an OR of them.

    ``exact`` maps a folded term to its original spelling's term (``cafe`` → ``café``,
    :func:`~lookup.search.analysis.exact_terms`), searched at full weight. None when
    nothing applies (the query runs as it was).
    """
    applied: dict[str, list[str]] = {}
    typed: set[str] = set(positive_terms(node))
    added: set[str] = set()

    def leaf(x: Node) -> Node:
        if not isinstance(x, Term):
            return x
        alts: list[Node] = []
        if x.term in exact:
            alts.append(Term(exact[x.term]))
            typed.add(exact[x.term])
        for alt in table.alternatives.get(x.term, ()):
            alts.append(alt.node)
            names = applied.setdefault(x.term, [])
            if alt.text not in names:
                names.append(alt.text)
            if isinstance(alt.node, Term):
                added.add(alt.node.term)
            else:
                added.update(alt.node.phrase.terms)  # type: ignore[union-attr]
        if not alts:
            return x
        return Or((x, *alts))

    if not (table or exact):
        return None
    out = map_nodes(node, leaf)
    if out == node:
        return None
    weights = {t: weight for t in added - typed} if weight != 1.0 else {}
    return Expansion(out, weights, [{"term": t, "synonyms": names} for t, names in applied.items()])


def rewrite(
    source: SynonymTable | None,
    text: str,
    terms: list[str],
    phrases: tuple[Phrase, ...],
    expr: Node | None,
) -> Expansion | None:
    """A query (its text, and its terms and phrases or its AST) with the table's synonyms,
    at their lower weight, and the exact spellings of its folded words (``café`` or
    ``cafe``); None when neither applies: a plain query then costs a clock read and a
    dict lookup per term (an operator query is always looked at: an excluded term has
    synonyms too)."""
    table = source.current() if source is not None else EMPTY
    exact = {} if text.isascii() else exact_terms(words_of(text))
    if not terms and expr is None:
        return None
    wanted = expr is not None or any(t in table.alternatives for t in terms)
    if not exact and not (table and wanted):
        return None
    node = expr if expr is not None else plain_node(terms, phrases)
    return expand(node, table, exact, source.weight if source is not None else SYNONYM_WEIGHT)


def plain_node(terms: list[str], phrases: tuple[Phrase, ...]) -> Node:
    """The AST of a plain query (its terms, all required, and its phrases)."""
    parts: list[Node] = [Term(t) for t in terms]
    parts += [PhraseNode(p) for p in phrases]
    return parts[0] if len(parts) == 1 else And(tuple(parts))
