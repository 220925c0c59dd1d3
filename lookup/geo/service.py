"""The places service: the live index over the database, kept fresh and swapped atomically.

It loads the index from the places database, tails the change stream into it (adds,
edits, moves, deletes become visible within a poll), hydrates result pages from the
database through a profile cache, and rebuilds a new index version from the whole
table on demand — the nightly rebuild that corrects anything an incremental update
missed. Readers always see one complete index: the swap is a single reference update.

The tailer is a :class:`~lookup.kit.background.BackgroundTask` (:meth:`PlacesService.start`):
a failed poll is logged and counted in :meth:`PlacesService.status`, and the next one retries.

The database is the data set's SQLite file in the data directory, or the store a URL names
(``LOOKUP_PLACES_STORE_URL``, e.g. ``postgresql://…``): then every API process loads its
index from that one database and tails its change stream, and no data directory is shared
for places. Such a worker holds every place's profile in memory too (up to the profile
cache's size; the change stream keeps them exact), so while that server is down searches
keep answering from memory, the tailer's polls fail and are retried, and writes answer 503.
With a read replica of it (``LOOKUP_PLACES_READ_URL``, :mod:`lookup.geo.replica`) the
index loads and the tailer polls from the replica, writes and the writer's own
read-back go to the primary, and the health report shows the replica's lag.
"""

from __future__ import annotations

import gc
import json
import logging
import math
import os
import threading
import time
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lookup.errors import Damaged, InvalidInput, NotBuilt, Unavailable
from lookup.geo.index import GeohashIndex, ScanIndex
from lookup.geo.learned import places_model_slot
from lookup.geo.places import BACKENDS, PlaceStore, open_place_store, row_dict
from lookup.geo.places.sqlite import check_database, damage_of
from lookup.geo.quadtree import QuadtreeIndex
from lookup.geo.search import ProximitySearch
from lookup.kit.background import BackgroundTask
from lookup.kit.engines.storeurl import parse_store_url, sqlite_url
from lookup.kit.integrity import DamageLog, file_signature
from lookup.kit.modelstore.file import FileModelStore
from lookup.kit.secrets.file import read_or_create_secret

if TYPE_CHECKING:
    from lookup.geo.replica import PlacesReplica

log = logging.getLogger("lookup.geo")
#: One line in the server log per damaged places database (as the file is now).
DAMAGE_LOG = DamageLog(log, "places")

#: The planners a search may name; ``postgis`` only with the places store on PostgreSQL.
PLANNERS = ("geohash", "quadtree", "scan", "postgis")
#: How the health report names each engine the places store runs on (``backend.name``).
BACKEND_NAMES = {"sqlite": "SQLite file", "postgresql": "PostgreSQL + PostGIS"}
#: How often the tailer applies the change stream to the live index (seconds).
SYNC_INTERVAL_S = 1.0
#: The cursor-signing key's file under ``<data-dir>/places/``.
CURSOR_KEY_FILE = "cursor.key"
#: How often a search re-reads which ranking model the store serves (seconds).
MODEL_RECHECK_S = 1.0
#: Profiles kept in memory; the oldest loaded go first beyond this.
PROFILE_CACHE_SIZE = 200_000
_PROFILE_COLUMNS = (
    "num",
    "id",
    "name",
    "category",
    "kind",
    "tags",
    "price",
    "review_count",
    "review_stars",
    "country",
    "timezone",
    "generated",
)


class NotInMemory(LookupError):
    """An answer needs a database read (:meth:`PlacesService.memory_profiles`)."""


class PlacesService:
    """Owns the store, the current index version and the searchers over it."""

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        *,
        cache_ttl: float = 30.0,
        store_url: str | None = None,
        read_url: str | None = None,
    ) -> None:
        from lookup.datasets.places import db_path  # the data set owns its location

        self.data_dir = Path(data_dir)
        self.path = db_path(self.data_dir)
        #: The places database's URL when it is not the data set's file (e.g. PostgreSQL).
        self.store_url = store_url or ""
        #: The read replica the index loads and tails from (``LOOKUP_PLACES_READ_URL``).
        self.replica: PlacesReplica | None = None
        if read_url:
            from lookup.geo.replica import PlacesReplica  # psycopg: only with a replica

            self.replica = PlacesReplica(read_url, self.store_url)
        self.reader: PlaceStore | None = None  # the replica's store, once opened
        self.cache_ttl = cache_ttl
        self.store: PlaceStore | None = None
        self.index: GeohashIndex | None = None
        self._searchers: dict[str, ProximitySearch] = {}
        self._load_lock = threading.Lock()
        self._write_lock = threading.Lock()
        # place number → display profile; a plain dict read lock-free on the hot path,
        # kept exact by the change stream (every change drops its place) and the swap
        self._profiles: dict[int, dict[str, Any]] = {}
        self._profiles_lock = threading.Lock()
        # the profiles a build read for a server-backed store, installed by the swap: a page
        # of such a worker needs no database read, so searches answer while it is down
        self._held: dict[int, dict[str, Any]] = {}
        self.last_build_seconds = 0.0
        # why the database could not be loaded, and the file's signature then: checked
        # again (not on every request) only once the file changes, e.g. restored from backup
        self._damage: tuple[object, Damaged] | None = None
        self._tailer = BackgroundTask("places-sync", self.tail, SYNC_INTERVAL_S, logger=log)
        # the learned ranking (lookup places train); hand-set constants without one
        self.models = places_model_slot(FileModelStore(self.data_dir / "models"))
        self._model_checked = 0.0  # when model() last read the store (monotonic)
        self._postgis: Any = None  # PostgisIndex for index=postgis, opened on first use

    # ------------------------------------------------------------ lifecycle

    def ready(self) -> bool:
        """Load the index if the data set exists; True when searches can be answered.

        A database SQLite finds damaged (or a directory it cannot write) raises
        :class:`~lookup.errors.Damaged` naming the file and the remedy — never "not built",
        since rebuilding would discard the places added through the API."""
        if self.index is not None:
            return True
        if self.store_url:
            with self._load_lock:
                return self.index is not None or self._load_url()
        if not self.path.exists():
            return False
        with self._load_lock:
            if self.index is None:
                return self._load()
        return True

    def _load_url(self) -> bool:
        """Open the store :attr:`store_url` names and build the first index version from it
        (the load lock is held); False while it holds no loaded data set. A server that
        cannot be reached raises :class:`~lookup.errors.Unavailable`."""
        if self.store is None:
            try:
                self.store = open_place_store(self.store_url)
            except FileNotFoundError:
                return False  # a sqlite:/// URL to a file not built yet
        if not self.store.loaded():
            return False
        if self.replica is not None:  # the snapshot comes from the replica, once it has it
            if self.reader is None:
                self.reader = self.replica.open()
            self.replica.require_loaded(self.reader)
        self._swap(self._build(version=1))
        return True

    def _load(self) -> bool:
        """Check the database and build the first index version (the load lock is held)."""
        signature = file_signature(self.path)
        if self._damage is not None and self._damage[0] == signature:
            raise self._damage[1]
        try:
            if not check_database(self.path):
                return False  # an unfinished build: not built yet
            self.store = open_place_store(sqlite_url(self.path))
            self._swap(self._build(version=1))
        except Exception as exc:
            damage = exc if isinstance(exc, Damaged) else damage_of(self.path, exc)
            if damage is None:
                raise
            if self.store is not None:
                self.store.close()
                self.store = None
            self._damage = (signature, damage)
            DAMAGE_LOG.report(damage)
            raise damage from None
        self._damage = None
        return True

    def require(self) -> GeohashIndex:
        """The current index, or ``NotBuilt``."""
        if not self.ready():
            if self.store_url:
                raise NotBuilt(
                    "the places database holds no data set yet; run: lookup places load "
                    "--store URL",
                    command="lookup places load --store URL",
                )
            raise NotBuilt(
                "the places data set is not built yet; run: lookup datasets build places",
                command="lookup datasets build places",
            )
        assert self.index is not None
        return self.index

    def start(self, interval: float = SYNC_INTERVAL_S) -> None:
        """Load the index if the data set is built, and tail the change stream into it.

        A damaged database does not stop the server: it is logged, reported by
        :meth:`status` and answered 503 ``DAMAGED`` until the file is restored."""
        try:
            self.ready()
        except Damaged:
            pass  # logged once by _load; the requests that need it say so
        except Unavailable as exc:  # its server is down: the tailer loads it once it is back
            log.warning("places: %s; loading the index once it answers", exc)
        if not self._tailer.running:
            self._tailer = BackgroundTask("places-sync", self.tail, interval, logger=log)
            self._tailer.start()

    def close(self) -> None:
        """Stop the tailer and close the store; safe to call twice."""
        self._tailer.stop()
        if self.store is not None:
            self.store.close()
        if self.reader is not None:
            self.reader.close()
        postgis, self._postgis = self._postgis, None
        if postgis is not None:
            postgis.close()

    def _build(self, version: int) -> GeohashIndex:
        assert self.store is not None
        reads = self.reader or self.store  # the read replica's, when there is one
        started = time.perf_counter()
        seq, rows = reads.snapshot()
        index = GeohashIndex.from_rows(rows, version=version, seq=seq)
        if self.store_url:  # a database across the network: hold the profiles too
            self._held = {
                int(row["num"]): _profile(row) for row in map(row_dict, rows[:PROFILE_CACHE_SIZE])
            }
        # changes committed while we were reading are applied before the swap
        for change in reads.changes_since(seq):
            index.apply(change)
        self.last_build_seconds = time.perf_counter() - started
        return index

    def _swap(self, index: GeohashIndex) -> None:
        searchers = {
            "geohash": ProximitySearch(
                index, profiles=self.profiles, cache_ttl=self.cache_ttl, cursor_key=self.cursor_key
            ),
        }
        # one assignment each: a reader holds either the old or the new version, never a mix
        self._searchers = searchers
        self.index = index
        self._profiles.clear()
        held, self._held = self._held, {}
        self._profiles.update(held)
        # The index, its vocabularies and text caches are long-lived objects by the
        # million: move them out of the collector's sight, so the full collections that
        # the per-request dicts trigger stop pausing every request for ~100 ms.
        gc.freeze()

    def rebuild(self) -> dict[str, Any]:
        """Build a new index version from the whole table and swap it in atomically."""
        old = self.require()
        with self._write_lock:
            # the nightly correction: rows from before zones were derived get theirs
            assigned = self.store.assign_zones() if self.store is not None else 0
            fresh = self._build(version=old.version + 1)
            self._swap(fresh)
        return {**self.index_status(), "zonesAssigned": assigned}

    def tail(self) -> int:
        """The tailer's poll: :meth:`sync` from the read replica when there is one (the
        other processes' writes reach this process there), else from the store."""
        return self.sync(from_replica=True) if self.replica is not None else self.sync()

    def sync(self, *, from_replica: bool = False) -> int:
        """Apply every change since the index's position in the stream; returns how many.

        From the primary unless ``from_replica``: a write route calls this right after its
        write, which the replica may not have replayed yet.

        A changed place's profile is taken from the change's row (the full row after it),
        so a page showing it needs no database read; a server-backed store not loaded yet
        (its server was down at start) is loaded here."""
        if self.index is None and self.store_url:
            self.ready()
        if self.index is None or self.store is None:
            return 0
        source = self.reader if from_replica and self.reader is not None else self.store
        applied = 0
        with self._write_lock:
            index = self.index
            while True:
                changes = source.changes_since(index.seq, limit=1000)
                if not changes:
                    break
                for change in changes:
                    if index.apply(change):
                        applied += 1
                    row = change.after or change.before or {}
                    if "num" in row:
                        self._profiles.pop(int(row["num"]), None)
                    if change.after and all(c in change.after for c in _PROFILE_COLUMNS):
                        with self._profiles_lock:
                            self._profiles[int(row["num"])] = _profile(change.after)
        return applied

    # ------------------------------------------------------------- reading

    @cached_property
    def cursor_key(self) -> bytes:
        """The key that signs cursors, kept in ``places/cursor.key`` so restarts honour them."""
        return read_or_create_secret(self.data_dir / "places" / CURSOR_KEY_FILE).encode("ascii")

    def searcher_in_memory(self, planner: str = "geohash") -> ProximitySearch | None:
        """The searcher over the loaded index if it is built already, else None: what a
        caller on an event loop may use without loading anything (:meth:`searcher` may
        read the whole database)."""
        index = self.index
        found = self._searchers.get(planner) if index is not None else None
        return found if found is not None and found.places is index else None

    def searcher(self, planner: str = "geohash") -> ProximitySearch:
        """The searcher over the current index with the given planner."""
        index = self.require()
        found = self._searchers.get(planner)
        if found is not None and found.places is index:
            return found
        key = self.cursor_key
        if planner == "geohash":
            search = ProximitySearch(
                index, profiles=self.profiles, cache_ttl=self.cache_ttl, cursor_key=key
            )
        elif planner == "quadtree":
            search = ProximitySearch(
                QuadtreeIndex(index),
                profiles=self.profiles,
                cache_ttl=self.cache_ttl,
                cursor_key=key,
            )
        elif planner == "scan":
            search = ProximitySearch(ScanIndex(index), profiles=self.profiles, cursor_key=key)
        elif planner == "postgis":
            from lookup.geo.postgis import PostgisPlanner  # psycopg: only when asked for

            search = ProximitySearch(
                PostgisPlanner(index, self.postgis()),
                profiles=self.profiles,
                cache_ttl=self.cache_ttl,
                cursor_key=key,
            )
        else:
            raise ValueError(f"unknown index {planner!r}; choose from {', '.join(PLANNERS)}")
        self._searchers = {**self._searchers, planner: search}
        return search

    def postgis(self) -> Any:
        """The :class:`~lookup.geo.postgis.PostgisIndex` over the places table, opened once;
        400 ``POSTGIS_UNAVAILABLE`` when the places store is not PostgreSQL (no PostGIS to
        ask: the embedded SQLite file has no geography column)."""
        url = self.store_url or str(getattr(self.store, "url", "") or "")
        if url.split(":", 1)[0] not in ("postgresql", "postgres"):
            kept = "SQLite (the data directory's places file)" if not url else url.split(":")[0]
            raise InvalidInput(
                "index=postgis asks PostGIS, which needs the places store on PostgreSQL "
                f"(LOOKUP_PLACES_STORE_URL=postgresql://…); this server keeps places in {kept}",
                code="POSTGIS_UNAVAILABLE",
            )
        found = self._postgis
        if found is None:
            from lookup.geo.postgis import PostgisIndex

            with self._load_lock:
                found = self._postgis
                if found is None:
                    found = self._postgis = PostgisIndex(url)
        return found

    def model_due(self) -> bool:
        """Whether the next :meth:`model` reads the model store (at most once a second):
        a caller on an event loop asks it in a worker thread then."""
        return time.monotonic() - self._model_checked > MODEL_RECHECK_S

    def model(self, ranking: str = "auto") -> Any:
        """The learned model (an :class:`~lookup.kit.modelstore.slot.ActiveModel`, None: the
        hand-set constants) for ``ranking`` = ``auto`` (the model if there is one), ``hand``
        or ``learned`` (LookupError without). One read, so a request ranks by and reports the
        same model even while the store swaps it; the store itself is read only when
        :meth:`model_due`."""
        if ranking == "hand":
            return None
        now = time.monotonic()
        if now - self._model_checked > MODEL_RECHECK_S:
            self._model_checked = now
            active = self.models.get(max_age=0.0)
        else:
            active = self.models.get(max_age=math.inf)  # the model held, no store read
        if ranking == "learned" and active is None:
            raise LookupError(f"no learned places model: {self.models.fallback}")
        return active

    def ranker(self, ranking: str = "auto") -> Any:
        """The learned ranker of :meth:`model` (None: the hand-set constants)."""
        active = self.model(ranking)
        return active.ranker if active is not None else None

    def profiles_in_memory(self, nums: Sequence[int]) -> dict[int, dict[str, Any]] | None:
        """The profiles of ``nums`` if every one is in memory, else None (then
        :meth:`profiles` reads the others from the database)."""
        cache = self._profiles
        out: dict[int, dict[str, Any]] = {}
        for num in nums:
            hit = cache.get(num)
            if hit is None:
                return None
            out[num] = hit
        return out

    def memory_profiles(self, nums: Sequence[int]) -> dict[int, dict[str, Any]]:
        """:meth:`profiles_in_memory`, or :class:`NotInMemory` when one must be read."""
        found = self.profiles_in_memory(nums)
        if found is None:
            raise NotInMemory("a profile must be read from the database")
        return found

    def profiles(self, nums: Sequence[int]) -> dict[int, dict[str, Any]]:
        """Profile fields for a page of place numbers (profile cache over the database)."""
        cache = self._profiles
        out: dict[int, dict[str, Any]] = {}
        missing = []
        for num in nums:
            hit = cache.get(num)
            if hit is None:
                missing.append(num)
            else:
                out[num] = hit
        if missing and self.store is not None:
            rows = self.store.profiles(missing, _PROFILE_COLUMNS)
            with self._profiles_lock:
                for row in rows:
                    prof = _profile(row)
                    cache[int(row["num"])] = prof
                    out[int(row["num"])] = prof
                while len(cache) > PROFILE_CACHE_SIZE:
                    del cache[next(iter(cache))]
        return out

    def status(self) -> dict[str, Any]:
        """The health probe: built or not, the live version, and the tailer's failures."""
        return self._report(with_memory=False)

    def index_status(self) -> dict[str, Any]:
        """:meth:`status` with the index's memory breakdown (the management API's answer)."""
        return self._report(with_memory=True)

    def backend(self) -> dict[str, str]:
        """Which database serves places (:func:`store_backend`), for the health report."""
        return store_backend(self.store_url, self.path)

    def _report(self, *, with_memory: bool) -> dict[str, Any]:
        try:
            built = self.ready()
        except Damaged as exc:
            if with_memory:
                raise  # the management API answers 503 DAMAGED
            return {**exc.report(), "sync": self._tailer.status(), "backend": self.backend()}
        except Unavailable as exc:  # a server-backed store down before the first load
            if with_memory:
                raise
            down = {"status": exc.code, "message": str(exc), "sync": self._tailer.status()}
            down["backend"] = self.backend()
            return {**down, "replica": self.replica.status()} if self.replica else down
        if not built:
            return {
                "status": "NOT_BUILT",
                "message": "run: lookup datasets build places",
                "sync": self._tailer.status(),
                "backend": self.backend(),
            }
        index = self.index
        assert index is not None
        memory = index.memory()
        out: dict[str, Any] = {
            "status": "ok",
            "places": len(index),
            "indexVersion": index.version,
            "builtAt": index.built_at,
            "buildSeconds": round(self.last_build_seconds, 3),
            "changeSeq": index.seq,
            "liveChanges": index.generation,
            "deltaPlaces": index.delta_size,
            "narrowBytesPerPlace": round(memory["narrowBytesPerPlace"], 2),
            "sync": self._tailer.status(),
            "model": self.models.status(),
            "store": self.store_url.split(":", 1)[0] if self.store_url else "sqlite",
            "backend": self.backend(),
        }
        if self.replica is not None:  # its lag in bytes and seconds (0 when caught up)
            out["replica"] = self.replica.status()
        if with_memory:
            out["memory"] = memory
        return out


def store_backend(store_url: str, path: Path) -> dict[str, str]:
    """The places database as the health report names it: ``engine`` (the URL scheme),
    ``name`` as a person reads it, and ``where``: the SQLite file's path, or the server as
    ``postgresql://host:port/db`` without user or password (so a page can show it)."""
    if not store_url:
        return {"engine": "sqlite", "name": BACKEND_NAMES["sqlite"], "where": str(path)}
    try:
        parsed = parse_store_url(store_url, tuple(BACKENDS))
    except ValueError:  # not a store this service opens: name the scheme alone
        scheme = store_url.split(":", 1)[0]
        return {"engine": scheme, "name": scheme, "where": ""}
    if parsed.path is not None:
        return {"engine": "sqlite", "name": BACKEND_NAMES["sqlite"], "where": str(parsed.path)}
    from lookup.kit.engines.postgres import describe_url  # psycopg: only for a server

    name = BACKEND_NAMES.get(parsed.scheme, parsed.scheme)
    return {"engine": parsed.scheme, "name": name, "where": describe_url(store_url)}


def _profile(row: dict[str, Any]) -> dict[str, Any]:
    count, stars = int(row["review_count"] or 0), int(row["review_stars"] or 0)
    return {
        "id": row["id"],
        "name": row["name"],
        "category": row["category"],
        "kind": row["kind"],
        "tags": json.loads(row["tags"] or "[]"),
        "price": row["price"],
        "rating": round(stars / count, 1) if count else None,
        "reviews": count,
        "country": row["country"],
        "timezone": row["timezone"],
        "generated": bool(row["generated"]),
    }
