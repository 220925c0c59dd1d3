"""Which key points a free-text answer covered — a checklist, not a judge.

Each key point carries groups of terms; a point is covered when the answer holds at
least one synonym of every group. Words are compared case-folded, accents stripped and
stemmed (Snowball English, via PyStemmer), so "cached", "caching" and "caches" all
match "cache"; a phrase matches as consecutive words; a term such as ``302`` or
``R+W>N`` matches its own tokens. The learner sees the list and grades themselves.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import cache

import Stemmer

from lookup.study.bank import KeyPoint

_TOKEN = re.compile(r"[a-z0-9]+|[+<>=%#^]")


@cache
def _stemmer() -> Stemmer.Stemmer:
    return Stemmer.Stemmer("english")


def tokens(text: str) -> list[str]:
    """``text`` as stemmed, case-folded, accent-free tokens (symbols kept as tokens)."""
    folded = unicodedata.normalize("NFKD", text.casefold())
    folded = "".join(ch for ch in folded if not unicodedata.combining(ch))
    return _stemmer().stemWords(_TOKEN.findall(folded))


def _contains(haystack: list[str], needle: list[str]) -> bool:
    if not needle:
        return False
    n = len(needle)
    first = needle[0]
    return any(
        haystack[i] == first and haystack[i : i + n] == needle for i in range(len(haystack) - n + 1)
    )


@dataclass(frozen=True)
class PointResult:
    """One key point: covered or not, and the synonyms that showed it."""

    text: str
    covered: bool
    matched: tuple[str, ...]
    missing: tuple[tuple[str, ...], ...]

    def as_json(self) -> dict[str, object]:
        """The JSON the CLI prints."""
        return {
            "point": self.text,
            "covered": self.covered,
            "matched": list(self.matched),
            "missingAnyOf": [list(g) for g in self.missing],
        }


def coverage(answer: str, points: list[KeyPoint]) -> list[PointResult]:
    """Each key point of ``points`` with whether ``answer`` covered it."""
    words = tokens(answer or "")
    results = []
    for point in points:
        matched: list[str] = []
        missing: list[tuple[str, ...]] = []
        for group in point.terms:
            hit = next((t for t in group if _contains(words, tokens(t))), None)
            if hit is None:
                missing.append(tuple(group))
            else:
                matched.append(hit)
        results.append(PointResult(point.text, not missing, tuple(matched), tuple(missing)))
    return results


def suggested_grade(results: list[PointResult]) -> str:
    """A starting point for the self-grade: the share of points covered, in Anki's words."""
    if not results:
        return "again"
    share = sum(r.covered for r in results) / len(results)
    if share >= 0.999:
        return "good"
    if share >= 0.5:
        return "hard"
    return "again"
