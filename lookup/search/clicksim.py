"""Simulated searchers: known-item queries with a hidden relevance, and position-biased clicks.

There is no query log, so users are simulated the way LTR papers do (Joachims et al.
2017; Chuklin, Markov & de Rijke, "Click Models for Web Search"):

- **Queries** come from page titles, as a person looking for a page they know would
  type it: the whole title, or a few of its words in order (the harder, commoner case)
  — never only the words most titles share (a site's "— Python standard library").
- **Hidden relevance** is judged from the web's structure, never from the ranker's
  features: the page whose title made the query is grade 3; its *kin* — pages one level
  up or beside it under a path prefix few pages share (:class:`Families`: the sandbox
  docs' ``/lib/json`` and ``/lib/json.encoder`` for ``/lib/json.decoder``, the test web's
  ``/json/...``) — are grade 1; everything else 0.
- **Clicks** follow the position-based model: a user examines rank r with probability
  ``(1/r) ** eta`` and clicks an examined result with probability
  ``ε + (1 - ε) (2^g - 1) / (2^3 - 1)``. Only the ranker knows nothing of ``g``.
"""

from __future__ import annotations

import random
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from lookup.kit.ltr import ClickModel
from lookup.search.analysis import STOP_WORDS

MAX_GRADE = 3
__all__ = ["ClickModel", "Families", "JudgedQuery", "known_item_queries", "split_by_target"]
#: A word in more than this share of all titles is the site's boilerplate, not a page's name.
BOILERPLATE = 0.25
_WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class JudgedQuery:
    """A query, the page it looks for, and the hidden grade of every judged page."""

    text: str
    target: str
    grades: dict[str, int]

    def grade(self, url: str) -> int:
        """Hidden relevance of ``url`` for this query (0 when unjudged)."""
        return self.grades.get(url, 0)


def path_tokens(url: str) -> tuple[str, ...]:
    """A URL's place in the site: path segments and dotted names (``/lib/json.decoder.html``
    → ``lib, json, decoder``)."""
    path = urlsplit(url).path
    if path.endswith((".html", ".htm")):
        path = path.rsplit(".", 1)[0]
    return tuple(part for seg in path.split("/") if seg for part in seg.split(".") if part)


class Families:
    """Which pages are kin: they share a path prefix that few pages share, one level up.

    ``/lib/json.decoder`` is kin to ``/lib/json`` and ``/lib/json.encoder`` (prefix
    ``lib, json``), not to ``/lib/heapq``: ``lib`` alone holds most of the site.
    """

    def __init__(self, urls: Iterable[str]) -> None:
        self.tokens = {u: path_tokens(u) for u in urls}
        self.under: dict[tuple[str, ...], list[str]] = defaultdict(list)
        for u, t in self.tokens.items():
            for n in range(1, len(t) + 1):
                self.under[t[:n]].append(u)
        self.big = max(BOILERPLATE * len(self.tokens), 2.0)

    def kin(self, url: str) -> list[str]:
        """The other pages of ``url``'s family."""
        t = self.tokens[url]
        out: set[str] = set()
        for n in range(len(t), 0, -1):  # its own children, then siblings, then up
            prefix = t[:n]
            if len(self.under[prefix]) > self.big:
                break
            out.update(u for u in self.under[prefix] if n >= min(len(t), len(self.tokens[u])) - 1)
        out.discard(url)
        return sorted(out)


def known_item_queries(
    pages: Iterable[tuple[str, str]], *, seed: int, per_page: int = 2
) -> list[JudgedQuery]:
    """Queries from each (url, title): the title itself or an ordered subset of its words."""
    rng = random.Random(seed)
    pages = sorted({u: t for u, t in pages if t and t.strip()}.items())
    families = Families(u for u, _ in pages)
    title_words = {
        u: [w for w in _WORD.findall(t) if w.lower() not in STOP_WORDS] for u, t in pages
    }
    seen = Counter(w.lower() for words in title_words.values() for w in set(words))
    boilerplate = {w for w, n in seen.items() if n > BOILERPLATE * len(pages)}
    out: list[JudgedQuery] = []
    for url, _ in pages:
        words = title_words[url]
        if not words:
            continue
        grades = {u: 1 for u in families.kin(url)}
        grades[url] = MAX_GRADE
        texts = {" ".join(words)}
        for _ in range(per_page * 3):
            if len(texts) >= per_page or len(words) < 2:
                break
            n = rng.randint(1, len(words) - 1)
            keep = sorted(rng.sample(range(len(words)), n))
            if all(words[i].lower() in boilerplate for i in keep):
                continue
            texts.add(" ".join(words[i] for i in keep))
        out += [JudgedQuery(t, url, grades) for t in sorted(texts)]
    return out


def split_by_target(
    queries: list[JudgedQuery], *, seed: int, held_out: float = 0.3
) -> tuple[list[JudgedQuery], list[JudgedQuery]]:
    """Train and held-out queries, split by target page (no page is in both)."""
    targets = sorted({q.target for q in queries})
    random.Random(seed).shuffle(targets)
    test = set(targets[: max(1, int(round(len(targets) * held_out)))])
    return [q for q in queries if q.target not in test], [q for q in queries if q.target in test]
