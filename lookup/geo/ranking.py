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

import json
import re
import unicodedata
from collections.abc import Hashable, Iterable, Sequence
from functools import lru_cache
from typing import Any, overload

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
_SEPARATOR = "\x00"
_WORD_OR_SEPARATOR = re.compile(r"\w+|\x00")


@overload
def haversine_m(lat1: float, lng1: float, lat2: np.ndarray, lng2: np.ndarray) -> np.ndarray: ...
@overload
def haversine_m(lat1: float, lng1: float, lat2: float, lng2: float) -> float: ...
def haversine_m(
    lat1: float, lng1: float, lat2: np.ndarray | float, lng2: np.ndarray | float
) -> np.ndarray | float:
    """Great-circle distance in metres from one point to many (vectorised haversine)."""
    p1 = np.radians(lat1)
    p2 = np.radians(lat2)
    dp = p2 - p1
    dl = np.radians(lng2 - lng1)
    a = np.sin(dp * 0.5) ** 2 + np.cos(p1) * np.cos(p2) * np.sin(dl * 0.5) ** 2
    return 2.0 * EARTH_RADIUS_M * np.arcsin(np.sqrt(np.minimum(a, 1.0)))


@overload
def bayesian_rating(
    stars: np.ndarray, count: np.ndarray | float, prior_mean: float, prior_weight: float = ...
) -> np.ndarray: ...
@overload
def bayesian_rating(
    stars: float, count: np.ndarray, prior_mean: float, prior_weight: float = ...
) -> np.ndarray: ...
@overload
def bayesian_rating(
    stars: float, count: float, prior_mean: float, prior_weight: float = ...
) -> float: ...
def bayesian_rating(
    stars: np.ndarray | float,
    count: np.ndarray | float,
    prior_mean: float,
    prior_weight: float = PRIOR_WEIGHT,
) -> np.ndarray | float:
    """The rating score in 0..1: ``(C × m + stars) / (C + count) / 5``."""
    return (prior_weight * prior_mean + stars) / (prior_weight + count) / 5.0


def score(
    distance_m: np.ndarray, radius_m: float, rating: np.ndarray, relevance: np.ndarray
) -> np.ndarray:
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
        for code in (
            self._field(category, _CATEGORY) + self._field(tags, _TAGS) + self._field(name, _NAME)
        ):
            codes[code >> 2] = code
        return sorted(codes.values())

    @classmethod
    def build(
        cls,
        nums: Sequence[int],
        names: Sequence[str | None],
        categories: Sequence[str | None],
        tags: Sequence[Sequence[str] | str | None],
    ) -> TextIndex:
        """Index places numbered ``0..max(nums)`` (absent numbers get no words).

        ``tags`` holds each place's tags, or their JSON list text as stored in the
        database. Built column-wise: each distinct text is tokenised once (a million
        places have a few hundred thousand distinct names and tag lists), and the
        per-place rows come from one sort of 64-bit (place, word, field) keys.
        """
        index = cls()
        nums_a = np.asarray(nums, dtype=np.int64).reshape(-1)
        size = int(nums_a.max()) + 1 if len(nums_a) else 0
        columns = [
            (_NAME, *factorize(names)),
            (_TAGS, *_factorize_tags(tags)),
            (_CATEGORY, *factorize(categories)),
        ]
        texts: list[str] = []
        offsets: list[int] = []
        for field, distinct, _ in columns:
            offsets.append(len(texts))
            if field == _TAGS:
                texts.extend(_tag_text(t) for t in distinct)
            else:
                texts.extend("" if t is None else str(t) for t in distinct)
        owner, tid = index._tokenize_texts(texts)
        text_len = np.bincount(owner, minlength=len(texts))
        text_start = np.cumsum(text_len) - text_len
        # key = place << shift | word << 2 | field: sorting groups a place's words, orders
        # them by word and, for a word in several fields, puts the best field first
        shift = max(4 * len(index.vocab) - 1, 1).bit_length()
        keys = []
        for (field, _, inverse), offset in zip(columns, offsets, strict=True):
            text = inverse + offset
            lengths = text_len[text]
            total = int(lengths.sum())
            if not total:
                continue
            first = np.repeat(text_start[text] - (np.cumsum(lengths) - lengths), lengths)
            first += np.arange(total, dtype=np.int64)
            key = np.repeat(nums_a, lengths)
            key <<= shift
            key |= (tid[first] << 2) | field
            keys.append(key)
        if keys:
            key = np.concatenate(keys) if len(keys) > 1 else keys[0]
            key.sort(kind="stable")  # timsort: rows arrive in place order, so nearly sorted
            pair = key >> 2
            first_of_pair = np.ones(len(key), dtype=bool)
            np.not_equal(pair[1:], pair[:-1], out=first_of_pair[1:])
            key = key[first_of_pair]
            index.data = (key & ((1 << shift) - 1)).astype(np.int32)
            counts = np.bincount(key >> shift, minlength=size)
        else:
            counts = np.zeros(size, dtype=np.int64)
        index.indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        return index

    def _tokenize_texts(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Every word of many texts: (text number, vocabulary id) per word, in text order.

        One regular-expression pass over all texts joined by NUL (not a word character,
        so it never changes a text's words) rather than a list per text; each distinct
        raw word is normalised once, and new words join the vocabulary in order of
        first appearance.
        """
        if not texts:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        joined = _SEPARATOR.join(texts)
        if joined.count(_SEPARATOR) != len(texts) - 1:
            joined = _SEPARATOR.join(t.replace(_SEPARATOR, " ") for t in texts)
        raw, raw_id = factorize(_WORD_OR_SEPARATOR.findall(joined))
        vocab = self.vocab
        setdefault = vocab.setdefault
        ids = np.array(
            [-1 if w == _SEPARATOR else setdefault(normalize_word(w), len(vocab)) for w in raw],
            dtype=np.int64,
        )
        token = ids[raw_id]
        is_word = token >= 0
        owner = np.cumsum(~is_word)[is_word]
        return owner, token[is_word]

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


def factorize(values: Iterable[Hashable]) -> tuple[list[Any], np.ndarray]:
    """The distinct values in order of first appearance, and each value's number among them."""
    ids: dict[Hashable, int] = {}
    setdefault = ids.setdefault
    codes = [setdefault(v, len(ids)) for v in values]
    return list(ids), np.array(codes, dtype=np.int64)


def _factorize_tags(tags: Sequence[Sequence[str] | str | None]) -> tuple[list[Any], np.ndarray]:
    """:func:`factorize` for tag lists, which may be JSON texts, tuples or (unhashable) lists."""
    try:
        return factorize(tags)  # type: ignore[arg-type]
    except TypeError:
        return factorize(t if t is None or isinstance(t, str) else tuple(t) for t in tags)


def _tag_text(tags: Sequence[str] | str | None) -> str:
    """The words of a place's tags as one text (a ``str`` is the database's JSON list)."""
    if tags is None:
        return ""
    if isinstance(tags, str):
        value = json.loads(tags) if tags else []
        tags = [str(t) for t in value] if isinstance(value, list) else []
    return " ".join(tags)


#: What the learned places ranker sees of each candidate (columns only, so every
#: candidate is scored and cursors stay exact). Reviews count through the Bayesian rating.
PLACE_FEATURES = ("distanceScore", "logDistance", "rating", "relevance", "openNow", "price")


def place_features(
    distance_m: np.ndarray,
    radius_m: float,
    rating: np.ndarray,
    relevance: np.ndarray,
    open_now: np.ndarray,
    price: np.ndarray,
) -> np.ndarray:
    """The feature matrix (candidates × :data:`PLACE_FEATURES`)."""
    d = np.asarray(distance_m, dtype=np.float64)
    return np.column_stack(
        [
            np.clip(1.0 - d / radius_m, 0.0, 1.0),
            np.log1p(d / 100.0),
            np.asarray(rating, dtype=np.float64),
            np.asarray(relevance, dtype=np.float64),
            np.asarray(open_now, dtype=np.float64),
            np.asarray(price, dtype=np.float64),
        ]
    ).reshape(len(d), len(PLACE_FEATURES))


def blend(
    distance_m: np.ndarray,
    radius_m: float,
    rating: np.ndarray,
    relevance: np.ndarray,
    model: Any = None,
    open_now: np.ndarray | None = None,
    price: np.ndarray | None = None,
) -> np.ndarray:
    """The one place final scores are made: today's constants, or a learned
    :class:`~lookup.kit.ltr.LinearRanker` over :func:`place_features` when ``model`` is given."""
    if model is None:
        return score(distance_m, radius_m, rating, relevance)
    n = len(distance_m)
    x = place_features(
        distance_m,
        radius_m,
        rating,
        relevance,
        np.zeros(n) if open_now is None else open_now,
        np.zeros(n) if price is None else price,
    )
    return np.asarray(model.score(x), dtype=np.float64)
