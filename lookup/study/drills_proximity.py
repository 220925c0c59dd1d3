"""Proximity drill: a business is added while searches flow, then the index is rebuilt.

Runs the real :class:`~lookup.geo.service.PlacesService` over a places database written
for the drill (seeded synthetic businesses around Koramangala, Bengaluru) in a scratch
directory. The new place goes in through a second :class:`~lookup.geo.store.
SqlitePlaceStore` on the same database — the owner's write path, which appends to the
change stream — while one thread keeps asking the service's current searcher for the
places within a radius. The service's tailer (its own background task) applies the
stream to the live index; its :meth:`~lookup.geo.service.PlacesService.rebuild` builds a
new index version from the whole table and swaps it in.
"""

from __future__ import annotations

import math
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from lookup.geo import geohash as gh
from lookup.geo.ranking import haversine_m
from lookup.geo.search import Filters
from lookup.geo.service import PlacesService
from lookup.geo.store import PlaceDatabaseWriter, SqlitePlaceStore
from lookup.study.drills_common import outcome, scratch_dir
from lookup.study.measure import Drill, DrillOutcome

__all__ = ["PROXIMITY_DRILLS", "place_added_while_serving"]

#: Koramangala, Bengaluru: the design text's worked example.
_LAT, _LNG = 12.9352, 77.6245


def _rows(count: int, half_side_m: float, seed: int) -> list[dict[str, Any]]:
    """``count`` businesses spread evenly over a square of ``2 × half_side_m``."""
    rng = np.random.default_rng(seed)
    d_lat = half_side_m / gh.METRES_PER_DEGREE
    d_lng = d_lat / math.cos(math.radians(_LAT))
    lats = _LAT + rng.uniform(-d_lat, d_lat, count)
    lngs = _LNG + rng.uniform(-d_lng, d_lng, count)
    return [
        {"id": f"biz:d{i}", "num": i, "name": f"Cafe {i}", "lat": float(a), "lng": float(b),
         "category": "restaurant", "kind": "business", "geohash": gh.encode(float(a), float(b)),
         "country": "IN", "timezone": "Asia/Kolkata", "tags": "[]", "review_count": 0,
         "review_stars": 0, "generated": 1, "updated_at": 0.0}
        for i, (a, b) in enumerate(zip(lats, lngs, strict=True))
    ]  # fmt: skip


class _Searcher(threading.Thread):
    """Asks the service's current index for the places within a radius, in a loop."""

    def __init__(self, service: PlacesService, radius_m: float) -> None:
        super().__init__(name="drill-places-reader", daemon=True)
        self.service, self.radius_m = service, radius_m
        self.stop = threading.Event()
        self.target: int | None = None  # the new place's number, once it exists
        self.phase = "before"
        #: (phase, places found, new place among them, index version)
        self.answers: list[tuple[str, int, bool, int]] = []
        self.errors = 0

    def run(self) -> None:
        while not self.stop.is_set():
            phase, target = self.phase, self.target
            try:
                search = self.service.searcher()
                m, *_ = search.matches(_LAT, _LNG, self.radius_m, Filters(), time.time())
                nums = m.cols.num
                hit = target is not None and bool(np.any(nums == target))
                self.answers.append((phase, len(nums), hit, search.places.version))
            except Exception:  # any failed search is what the drill counts
                self.errors += 1
            time.sleep(0.001)  # leave the tailer and the writer some of the interpreter

    def count(self) -> int:
        return len(self.answers)

    def wait(self, until: Any, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for ``until()``; whether it came true."""
        end = time.monotonic() + timeout
        while time.monotonic() < end and self.is_alive():
            if until():
                return True
            time.sleep(0.005)
        return bool(until())


PLACE_CHOICES = {
    "stream": "It turns up in results within a poll or so of the change stream, without a "
    "rebuild, while searches keep being answered",
    "rebuild": "It stays invisible to searches until the index is rebuilt from the table",
    "broken": "Searches running while the index changes or is swapped fail or see a partial index",
    "lost": "It is not found even after the index is rebuilt",
}


def place_added_while_serving(places: int = 20000, radius_m: float = 1500.0, tail: bool = True,
                              poll_s: float = 0.25, wait_s: float = 8.0, seed: int = 5,
                              ) -> DrillOutcome:  # fmt: skip
    """A business is added ``radius_m / 5`` from the searched point while a thread searches
    that radius; the tailer (``tail``) applies the change stream every ``poll_s`` seconds.
    After ``wait_s`` seconds at most (or once it is found) the index is rebuilt and swapped."""
    places, seed, tail = int(places), int(seed), bool(tail)
    if places < 100 or not 50.0 <= radius_m <= 5_000.0 or poll_s <= 0 or wait_s <= 0:
        raise ValueError("need places >= 100, 50 <= radius_m <= 5000, poll_s > 0, wait_s > 0")
    rows = _rows(places, 2.5 * radius_m, seed)
    within = sum(haversine_m(_LAT, _LNG, r["lat"], r["lng"]) <= radius_m for r in rows)
    spot = (_LAT + radius_m / 5 / gh.METRES_PER_DEGREE, _LNG)
    with scratch_dir("places") as tmp:
        from lookup.datasets.places import db_path

        path = db_path(tmp)
        path.parent.mkdir(parents=True, exist_ok=True)
        with PlaceDatabaseWriter(path) as db:
            db.insert_dicts(rows)
            db.finish({"next_num": str(places)})
        service = PlacesService(Path(tmp), cache_ttl=0.0)
        owner = SqlitePlaceStore(path)
        reader = _Searcher(service, radius_m)
        try:
            t0 = time.perf_counter()
            service.ready()
            build_s = time.perf_counter() - t0
            if tail:
                service.start(interval=poll_s)
            reader.start()
            reader.wait(lambda: reader.count() >= 50, 30.0)
            added = owner.add({"name": "Dosa Corner", "lat": spot[0], "lng": spot[1],
                               "category": "restaurant", "timezone": "Asia/Kolkata"})  # fmt: skip
            added_at = time.perf_counter()
            reader.target, reader.phase = int(added["num"]), "after the add"
            seen = reader.wait(lambda: any(a[2] for a in reader.answers), wait_s)
            lag_s = time.perf_counter() - added_at
            before_rebuild = reader.count()
            reader.phase = "during the rebuild"
            t1 = time.perf_counter()
            service.rebuild()
            rebuild_s = time.perf_counter() - t1
            during = reader.count() - before_rebuild
            reader.phase = "after the rebuild"
            mark = reader.count()
            reader.wait(lambda: reader.count() >= mark + 30, 30.0)
        finally:
            reader.stop.set()
            reader.join(timeout=30)
            owner.close()
            service.close()
    answers = reader.answers
    torn = sum(n not in (within, within + 1) for _, n, _, _ in answers)
    after_add = [a for a in answers if a[0] == "after the add"]
    missed = 0
    for a in after_add:
        if a[2]:
            break
        missed += 1
    found_before = any(a[2] for a in after_add)
    found_after = any(a[2] for a in answers if a[0] == "after the rebuild")
    if reader.errors or torn:
        choice = "broken"
    elif found_before:
        choice = "stream"
    elif found_after:
        choice = "rebuild"
    else:
        choice = "lost"
    versions = sorted({a[3] for a in answers})
    figures = {
        "places": places, "radius (m)": radius_m, "places within the radius before": within,
        "tailer on": float(tail), "poll interval (s)": poll_s, "index build (s)": round(build_s, 3),
        "searches answered": len(answers), "failed searches": reader.errors,
        "answers with a count matching neither index": torn,
        "searches after the add that missed it": missed,
        "found before the rebuild": float(found_before),
        "seconds from the add to the first search finding it": round(lag_s, 3) if seen else -1.0,
        "searches answered during the rebuild": during, "rebuild (s)": round(rebuild_s, 3),
        "found after the rebuild": float(found_after), "index versions seen": len(versions),
    }  # fmt: skip
    summary = (
        f"A business added {radius_m / 5:.0f} m from the searched point "
        + (
            f"was found {lag_s:.2f} s later through the change stream"
            if found_before
            else "was not found until the rebuild"
            if found_after
            else "was never found"
        )
        + f"; {len(answers):,} searches answered, {reader.errors} failed, {torn} saw a count "
        f"matching neither index, {during} answered during the rebuild."
    )
    chain = (
        f"{places:,} businesses written to a places database; the service builds its "
        f"geohash index from the table ({within} within {radius_m:g} m of the point)",
        "one thread searches that radius in a loop; the tailer is "
        + (f"on, applying the change stream every {poll_s:g} s" if tail else "off"),
        f"the owner's store adds a business {radius_m / 5:.0f} m from the point (one row and "
        f"one change-stream entry); {missed} searches missed it "
        + (
            f"before one found it after {lag_s:.2f} s"
            if found_before
            else f"during the {wait_s:g} s waited"
        ),
        f"the index is rebuilt from the whole table and swapped in one assignment "
        f"({rebuild_s:.2f} s; {during} searches answered meanwhile; versions seen "
        f"{versions}); every answer counted {within} or {within + 1} places "
        f"except {torn}",
        "choice: a failed search or a count matching neither index → broken; found "
        "before the rebuild → stream; found only after it → rebuild; otherwise → lost",
    )
    return outcome(PLACE_CHOICES, choice, figures, summary, chain)


PROXIMITY_DRILLS: dict[str, Drill] = {
    "place_added_while_serving": Drill(
        "place_added_while_serving",
        "A business is added while searches flow",
        PLACE_CHOICES,
        place_added_while_serving,
        {
            "places": 20000,
            "radius_m": 1500.0,
            "tail": True,
            "poll_s": 0.25,
            "wait_s": 8.0,
            "seed": 5,
        },
    ),
}
