"""Hindi typed in Latin letters: romanisation and grouping of spelling variants.

Many Hindi speakers type Hindi in Latin letters with no agreed spelling — ``kya``,
``kyaa`` and ``kia`` are one word. The builder groups such variants so that every
spelling is a key leading to the same suggestion, shown in the script the user is
typing in. Two tools do it:

* :func:`romanize` turns Devanagari into the Latin spelling people type, using the
  ``indic-transliteration`` library (ITRANS scheme) and then the usual informal
  simplifications (long vowels doubled, inherent final ``a`` dropped);
* :func:`phonetic_key` maps every Latin spelling of a word to one key (``aa``→``a``,
  ``ee``→``i``, ``ai``→``e``, aspirates dropped, doubled letters collapsed ...), so
  variants seen in the query log fall into the same group.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from indic_transliteration import sanscript

from lookup.typeahead.normalize import script_of

# ITRANS tokens → informal Latin, longest first.
_ITRANS_TO_LATIN: tuple[tuple[str, str], ...] = (
    ("RRi", "ri"),
    ("RRI", "ri"),
    ("kSh", "ksh"),
    ("j~n", "gy"),
    ("Ch", "chh"),
    ("Sh", "sh"),
    ("Th", "th"),
    ("Dh", "dh"),
    ("~N", "n"),
    ("~n", "n"),
    (".N", "n"),
    (".h", ""),
    (".a", ""),
    ("AUM", "om"),
    ("A", "aa"),
    ("I", "ee"),
    ("U", "oo"),
    ("M", "n"),
    ("T", "t"),
    ("D", "d"),
    ("N", "n"),
    ("K", "kh"),
    ("G", "g"),
    ("H", "h"),
    ("R", "r"),
    ("L", "l"),
    ("Y", "y"),
    ("q", "k"),
    ("^", ""),
)
_ITRANS_RE = re.compile("|".join(re.escape(a) for a, _ in _ITRANS_TO_LATIN))
_ITRANS_MAP = dict(_ITRANS_TO_LATIN)
_VOWELS = set("aeiou")


@lru_cache(maxsize=65536)
def romanize(text: str) -> str:
    """Devanagari → the Latin spelling most people would type (``क्या है`` → ``kya hai``).

    Latin letters, digits and punctuation pass through unchanged.
    """
    if script_of(text) != "deva":
        return text
    itrans = sanscript.transliterate(text, sanscript.DEVANAGARI, sanscript.ITRANS)
    latin = _ITRANS_RE.sub(lambda m: _ITRANS_MAP[m.group(0)], itrans).lower()
    words = []
    for word in latin.split(" "):
        # the inherent vowel at the end of a word is silent in Hindi (मौसम → mausam)
        if len(word) > 2 and word.endswith("a") and word[-2] not in _VOWELS:
            word = word[:-1]
        # a long final vowel is usually typed single (क्या → kya, गाना → gana)
        if len(word) > 2 and word.endswith("aa"):
            word = word[:-1]
        elif len(word) > 2 and word.endswith("ee"):
            word = word[:-2] + "i"
        words.append(word)
    return " ".join(words)


_KEY_RULES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(a), b)
    for a, b in (
        (r"ph", "f"),
        (r"sh", "s"),
        (r"ch", "c"),
        (r"ck", "k"),
        (r"([bdgjkptc])h", r"\1"),
        (r"(?<=[bdfgjklmnprstv])ah(?=[aeiou])", "h"),
        (r"z", "j"),
        (r"w", "v"),
        (r"q", "k"),
        (r"x", "ks"),
        (r"ia", "ya"),
        (r"ee", "i"),
        (r"oo", "u"),
        (r"ai", "e"),
        (r"ei", "e"),
        (r"au", "o"),
        (r"(.)\1+", r"\1"),
        (r"n([bpm])", r"m\1"),
        (r"ey$", "e"),
    )
)


@lru_cache(maxsize=65536)
def _word_key(word: str) -> str:
    for pattern, repl in _KEY_RULES:
        word = pattern.sub(repl, word)
    if len(word) > 3 and word.endswith("a") and word[-2] not in _VOWELS:
        word = word[:-1]
    return word


def phonetic_key(text: str) -> str:
    """One key shared by every Latin spelling of a Hindi phrase (``kyaa`` and ``kia`` → ``kya``).

    Devanagari input is romanised first, so a Devanagari query and its Latin
    spellings share the key too.
    """
    latin = romanize(text) if script_of(text) == "deva" else text
    return " ".join(_word_key(w) for w in latin.split(" ") if w)


@dataclass(frozen=True)
class VariantGroup:
    """Queries that are one phrase spelt differently, with the spelling shown per script."""

    key: str
    members: tuple[str, ...]
    display: dict[str, str]  # script ("latn" | "deva") → the member shown to that script


def group_variants(queries: Sequence[str], scores: Sequence[float]) -> list[VariantGroup]:
    """Group the spellings of one phrase; only groups of two or more are returned.

    Latin queries group by :func:`phonetic_key` (``kya hai``, ``kyaa hai``, ``kia he``).
    A Devanagari query joins a group only when its romanisation is itself one of the
    Latin queries people typed — the transliteration proposes, the log confirms — so
    two different Hindi words whose keys merely collide (माता, मत) stay apart.
    The member shown for a script is the most popular member written in it (ties:
    the smaller string), so a Latin typist sees Latin and a Devanagari typist sees
    Devanagari.
    """
    by_key: dict[str, list[int]] = {}
    latin_key: dict[str, str] = {}
    for i, q in enumerate(queries):
        if script_of(q) == "latn":
            key = phonetic_key(q)
            if key:
                by_key.setdefault(key, []).append(i)
                latin_key[q] = key
    for i, q in enumerate(queries):
        if script_of(q) == "deva":
            known = latin_key.get(romanize(q))
            if known is not None:
                by_key[known].append(i)
    groups = []
    for key, idx in by_key.items():
        if len(idx) < 2:
            continue
        best: dict[str, tuple[float, str]] = {}
        for i in idx:
            s = script_of(queries[i])
            cand = (-float(scores[i]), queries[i])
            if s not in best or cand < best[s]:
                best[s] = cand
        display = {s: q for s, (_, q) in best.items()}
        groups.append(VariantGroup(key, tuple(sorted(queries[i] for i in idx)), display))
    return groups


__all__ = ["VariantGroup", "group_variants", "phonetic_key", "romanize"]
