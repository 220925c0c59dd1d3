"""The places hot path ranks on the event loop and takes a worker thread only to read.

A search is memory and CPU work once its places' profiles are in memory: handing it to
a worker thread (as every search did for a while) only added the GIL's hand-offs between
that thread and the event loop — about twice the CPU per search, a third less
throughput and a tail of hundreds of milliseconds under load (issue 24, item 19). What
must stay off the loop is a database read: the profiles a page needs and does not hold,
loading the index, and the brute-force scan. ``tests/test_slow_stores.py`` checks that no
route reads a store on the loop; these tests check that the loop is not left for less.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from lookup.geo import http as geo_http
from lookup.server import create_app

KORAMANGALA = {"lat": 12.9352, "lng": 77.6245, "radius": 3000}
NEARBY = {"lat": 12.9361, "lng": 77.6230, "radius": 3000}  # another user in the same area
AREA = {"south": 12.85, "west": 77.5, "north": 13.05, "east": 77.75}


@pytest.fixture()
def lane_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the functions handed to the places lane (still run there), but for
    ``rank``: once a second a search ranks in the lane, as it reads which model the model
    store serves (``test_the_model_store_is_read_once_a_second`` counts those)."""
    calls: list[str] = []
    run = geo_http.SEARCH_LANE.run

    async def counting(fn: Any, *args: Any, **kwargs: Any) -> Any:
        name = getattr(fn, "__name__", repr(fn))
        if name != "rank":
            calls.append(name)
        return await run(fn, *args, **kwargs)

    monkeypatch.setattr(geo_http.SEARCH_LANE, "run", counting)
    return calls


@pytest.fixture()
def client(built_data_dir: Path, tmp_path: Path) -> Iterator[TestClient]:
    data = tmp_path / "data"
    shutil.copytree(built_data_dir, data)
    with TestClient(create_app(data, subsystems=["lookup.geo.http:mount"])) as c:
        yield c


def _ids(body: dict[str, Any]) -> list[str]:
    return [r["id"] for r in body["results"]]


def test_a_search_whose_places_are_in_memory_takes_no_thread(
    client: TestClient, lane_calls: list[str]
) -> None:
    first = client.get("/v1/search", params=KORAMANGALA)
    assert first.status_code == 200 and first.json()["results"]
    assert lane_calls == ["profiles"]  # ranked on the loop; the page's profiles read off it
    lane_calls.clear()
    again = client.get("/v1/search", params=KORAMANGALA)
    assert _ids(again.json()) == _ids(first.json())
    assert lane_calls == []
    page_two = client.get(
        "/v1/search", params={**KORAMANGALA, "cursor": again.json()["nextCursor"]}
    )
    assert page_two.status_code == 200
    assert not set(_ids(page_two.json())) & set(_ids(first.json()))
    assert lane_calls == ["profiles"]  # the second page's places were not in memory yet
    lane_calls.clear()
    for _ in range(3):
        assert client.get("/v1/search", params=KORAMANGALA).status_code == 200
    assert lane_calls == []


def test_the_answer_is_the_same_on_the_loop_and_in_the_lane(
    client: TestClient, lane_calls: list[str]
) -> None:
    """The scan goes to the lane whole (a brute force is not for the loop); its page
    equals the geohash index's, served from memory on the loop."""
    cold = client.get("/v1/search", params=NEARBY).json()
    warm = client.get("/v1/search", params=NEARBY).json()
    lane_calls.clear()
    scanned = client.get("/v1/search", params={**NEARBY, "index": "scan"}).json()
    assert lane_calls == ["search_answer"]
    assert _ids(cold) == _ids(warm) == _ids(scanned)
    assert cold["results"] == warm["results"] == scanned["results"]


def test_an_area_whose_pins_are_in_memory_takes_no_thread(
    client: TestClient, lane_calls: list[str]
) -> None:
    first = client.get("/v1/places/area", params=AREA)
    assert first.status_code == 200 and first.json()["mode"] == "pins"
    assert first.json()["results"]
    assert lane_calls == ["area_answer"]  # a pin not in memory: the whole area in the lane
    lane_calls.clear()
    again = client.get("/v1/places/area", params=AREA)
    assert again.json()["results"] == first.json()["results"]
    assert lane_calls == []


def test_the_model_store_is_read_once_a_second(
    built_data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Which learned model to rank by is a file read: at most once a second, and a caller
    on the event loop is told beforehand (``model_due``) so it reads in the lane."""
    from lookup.geo import service as service_module
    from lookup.geo.service import PlacesService
    from lookup.kit.models import ModelSlot

    clock = [1000.0]
    monkeypatch.setattr(service_module.time, "monotonic", lambda: clock[0])
    reads: list[float] = []
    real_get = ModelSlot.get

    def counting_get(self: ModelSlot, max_age: float = 1.0) -> Any:
        reads.append(max_age)
        return real_get(self, max_age)

    monkeypatch.setattr(ModelSlot, "get", counting_get)
    service = PlacesService(built_data_dir)
    assert service.model_due()
    assert service.model("auto") is None  # no model trained: the hand-set constants
    assert reads == [0.0]  # read the store
    assert not service.model_due()
    for _ in range(5):
        service.model("auto")
    assert reads == [0.0] + [float("inf")] * 5  # the model held, no store read
    assert service.model("hand") is None and len(reads) == 6  # hand: no model at all
    clock[0] += 1.5
    assert service.model_due()
    service.model("auto")
    assert reads[-1] == 0.0 and not service.model_due()
