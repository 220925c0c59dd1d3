"""Exact distance, the Bayesian rating and text relevance: the precise half of a search.

The cells only narrow; everything here runs on the few thousand candidates they
return. The score is the seed's explainable blend::

    score = 0.5 × distanceScore + 0.35 × ratingScore + 0.15 × relevance
    distanceScore = 1 - distance / radius          (1 next door, 0 at the edge)
    ratingScore   = (C × m + sum of stars) / (C + number of reviews) / 5
    relevance     = how well the query words match name, category and tags (0..1)

The Bayesian average keeps one five-star review from beating 4.6 over a thousand.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from functools import lru_cache

import numpy as np

from lookup.geo.geohash import EARTH_RADIUS_M

W_DISTANCE, W_RATING, W_RELEVANCE = 0.5, 0.35, 0.15
#: Reviews it takes before a place's own average outweighs the prior (the C above).
PRIOR_WEIGHT = 25.0
#: Relevance weight of a query word found in each field of a place.
FIELD_WEIGHTS = {"name": 1.0, "tags": 1.0, "category": 0.8}
_FIELDS = ("name", "tags", "category")
_NAME, _TAGS, _CATEGORY = 0, 1, 2
_FIELD_WEIGHT_ARRAY = np.array([FIELD_WEIGHTS[f] for f in _FIELDS])
_WORD = re.compile(r"\w+")


def haversine_m(lat1: float, lng1: float, lat2: np.ndarray, lng2: np.ndarray) -> np.ndarray:
    """Great-circle distance in metres from one point to many (vectorised haversine)."""
    p1 = np.radians(lat1)
    p2 = np.radians(lat2)
    dp = p2 - p1
    dl = np.radians(lng2 - lng1)
    a = np.sin(dp * 0.5) ** 2 + np.cos(p1) * np.cos(p2) * np.sin(dl * 0.5) ** 2
    return 2.0 * EARTH_RADIUS_M * np.arcsin(np.sqrt(np.minimum(a, 1.0)))


def bayesian_rating(stars: np.ndarray | float, count: np.ndarray | float, prior_mean: float,
                    prior_weight: float = PRIOR_WEIGHT) -> np.ndarray | float:
    """The rating score in 0..1: ``(C × m + stars) / (C + count) / 5``."""
    return (prior_weight * prior_mean + stars) / (prior_weight + count) / 5.0


def score(distance_m: np.ndarray, radius_m: float, rating: np.ndarray,
          relevance: np.ndarray) -> np.ndarray:
    """The blended score of each candidate (higher is better)."""
    distance_score = np.clip(1.0 - distance_m / radius_m, 0.0, 1.0)
    return W_DISTANCE * distance_score + W_RATING * rating + W_RELEVANCE * relevance


@lru_cache(maxsize=500_000)
def normalize_word(word: str) -> str:
    """Fold case and accents and strip a plural ``s`` (``Cafés`` → ``cafe``)."""
    if word.isascii():
        plain = word.lower()
    else:
        decomposed = unicodedata.normalize("NFKD", word.casefold())
        plain = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    if len(plain) > 3 and plain.endswith("s") and not plain.endswith("ss"):
        plain = plain[:-1]
    return plain


def tokenize(text: str) -> list[str]:
    """The normalised words of a text, in order, without repeats."""
    return list(_tokens(text or ""))


@lru_cache(maxsize=200_000)
def _tokens(text: str) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for word in _WORD.findall(text):
        seen.setdefault(normalize_word(word), None)
    return tuple(seen)


class TextIndex:
    """Each place's words with the field they came from, for relevance on candidates.

    Stored per place number as compressed rows (``indptr``/``data``); a word is coded
    ``token_id × 4 + field``. Places edited after the build keep their words in
    ``overrides`` until the next rebuild.
    """

    def __init__(self) -> None:
        self.vocab: dict[str, int] = {}
        self.indptr = np.zeros(1, dtype=np.int64)
        self.data = np.zeros(0, dtype=np.int32)
        self.overrides: dict[int, np.ndarray] = {}
        self._override_nums = np.zeros(0, dtype=np.int64)
        self._memo: dict[tuple[str, int], tuple[int, ...]] = {}

    def encode_place(self, name: str, category: str, tags: Iterable[str]) -> np.ndarray:
        """The coded words of one place (new words join the vocabulary)."""
        return np.array(self._codes(name, category, " ".join(tags)), dtype=np.int32)

    def _field(self, text: str, field: int) -> tuple[int, ...]:
        """Coded words of one field's text (memoised: names, tags and categories repeat)."""
        key = (text, field)
        found = self._memo.get(key)
        if found is None:
            vocab = self.vocab
            out = []
            for word in _tokens(text):
                tid = vocab.get(word)
                if tid is None:
                    tid = vocab[word] = len(vocab)
                out.append(tid * 4 + field)
            found = self._memo[key] = tuple(out)
        return found

    def _codes(self, name: str, category: str, tags: str) -> list[int]:
        codes: dict[int, int] = {}
        # lowest weight first, so a word found in a better field keeps that field
        for code in self._field(category, _CATEGORY) + self._field(tags, _TAGS) + self._field(
            name, _NAME
        ):
            codes[code >> 2] = code
        return sorted(codes.values())

    @classmethod
    def build(cls, nums: Sequence[int], names: Sequence[str], categories: Sequence[str],
              tags: Sequence[Sequence[str]]) -> TextIndex:
        """Index places numbered ``0..max(nums)`` (absent numbers get no words)."""
        index = cls()
        size = (max(nums) + 1) if len(nums) else 0
        lengths = np.zeros(size, dtype=np.int64)
        per_place: dict[int, list[int]] = {}
        for num, name, cat, tg in zip(nums, names, categories, tags, strict=True):
            codes = index._codes(name, cat, " ".join(tg))
            per_place[num] = codes
            lengths[num] = len(codes)
        index.indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        flat = [c for num in sorted(per_place) for c in per_place[num]]
        index.data = np.array(flat, dtype=np.int32)
        index._memo.clear()
        return index

    def set_place(self, num: int, name: str, category: str, tags: Iterable[str]) -> None:
        """Replace a place's words (an edit after the build)."""
        self.overrides[num] = self.encode_place(name, category, tags)
        self._override_nums = np.array(sorted(self.overrides), dtype=np.int64)

    def query_ids(self, query: str) -> list[int]:
        """Vocabulary ids of the query's words (−1 for a word no place has)."""
        return [self.vocab.get(w, -1) for w in tokenize(query)]

    def relevance(self, nums: np.ndarray, query_ids: Sequence[int]) -> np.ndarray:
        """For each place in ``nums``: mean over query words of the best field weight matched."""
        out = np.zeros(len(nums), dtype=np.float64)
        if not len(query_ids) or not len(nums):
            return out
        wanted = np.array([q for q in query_ids if q >= 0], dtype=np.int64)
        if len(wanted):
            base_n = len(self.indptr) - 1
            in_base = nums < base_n
            safe = np.where(in_base, nums, 0)
            starts = np.where(in_base, self.indptr[safe], 0)
            ends = np.where(in_base, self.indptr[safe + 1], 0)
            lengths = ends - starts
            total = int(lengths.sum())
            if total:
                owner = np.repeat(np.arange(len(nums)), lengths)
                offsets = np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)
                words = self.data[np.repeat(starts, lengths) + offsets]
                hit = np.isin(words >> 2, wanted)
                # a place lists each word once, so summing weights sums over query words
                np.add.at(out, owner[hit], _FIELD_WEIGHT_ARRAY[words[hit] & 3])
            if self.overrides:
                edited = np.flatnonzero(np.isin(nums, self._override_nums))
                for i in edited.tolist():
                    words = self.overrides[int(nums[i])]
                    hit = np.isin(words >> 2, wanted)
                    out[i] = float(_FIELD_WEIGHT_ARRAY[words[hit] & 3].sum())
        return out / len(query_ids)

    def words_of(self, num: int) -> list[tuple[str, str]]:
        """(word, field) pairs of a place (for explanations and tests)."""
        words = self.overrides.get(num)
        if words is None:
            if num >= len(self.indptr) - 1:
                return []
            words = self.data[self.indptr[num] : self.indptr[num + 1]]
        names = {v: k for k, v in self.vocab.items()}
        return [(names[int(w) >> 2], _FIELDS[int(w) & 3]) for w in words]

    @property
    def nbytes(self) -> int:
        """Bytes held by the compressed rows (the vocabulary dict not counted)."""
        return int(self.indptr.nbytes + self.data.nbytes)
