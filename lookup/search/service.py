"""The search engine as the server runs it: the live snapshot, the real-time tier, the coordinator.

It notices a newly published index version (``lookup index`` swapping ``CURRENT``),
opens it in the background, rebinds the real-time tier to it and only then makes it
live — one reference swap, so queries never lock and never see half a version.

The watcher that checks for new versions is a :class:`~lookup.kit.background.BackgroundTask`
(started by :meth:`SearchService.start`, or on the first query that finds a newer version):
a failed check is logged and counted in :meth:`SearchService.status`, and the next retries.
A location that can wait for a swap (a shared store: ``LISTEN``/``NOTIFY`` on PostgreSQL)
also gets a listener thread, so a new version is opened as soon as it is announced.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

from lookup import settings
from lookup.errors import Damaged, NotBuilt, Unavailable
from lookup.kit.background import BackgroundTask
from lookup.kit.integrity import DamageLog
from lookup.kit.modelstore import open_model_store
from lookup.search.coordinator import Coordinator, QueryError
from lookup.search.events import url_hash_of
from lookup.search.extract import comparable_url
from lookup.search.learned import search_model_slot
from lookup.search.location import IndexLocation, open_index_location
from lookup.search.realtime import RealtimeTier
from lookup.search.segment import url_key
from lookup.search.shard import IndexVersion
from lookup.search.synonyms import SynonymTable

log = logging.getLogger("lookup.search")
#: One line in the server log per damaged index file.
DAMAGE_LOG = DamageLog(log, "search")

#: How often the live index checks for a newer published version.
RELOAD_SECONDS = 1.0
#: The longest a shared store's listener waits before it looks again (and sees ``close``).
LISTEN_SECONDS = 2.0


class SearchService:
    """Live search over an index directory, reloading new versions as they are published."""

    def __init__(
        self,
        index_dir: str | Path | IndexLocation,
        *,
        coordinator: Coordinator | None = None,
        realtime: bool = True,
        poll_seconds: float = 0.5,
        models: str | Path | None = None,
        synonyms: str | Path | None = None,
    ) -> None:
        """``models``: a model store (``DATA_DIR/models``) whose current search model
        reorders results; None serves the hand-set weights only. ``synonyms``: the synonym
        table's file (:mod:`.synonyms`, re-read when it changes); None: no synonyms."""
        self.location = open_index_location(index_dir)
        self.index_dir = self.location.path
        self.coordinator = coordinator or Coordinator(
            deadline_ms=settings.get("search_deadline_ms"),
            track_total_hits=settings.get("search_track_total_hits"),
            typo_below=settings.get("search_typo_below") if settings.get("search_typos") else 0,
        )
        self.tier: RealtimeTier | None = (
            RealtimeTier(self.index_dir, poll_seconds) if realtime else None
        )
        self._snapshot: IndexVersion | None = None
        self._token: str | None = None
        self._checked = 0.0
        self._loading = threading.Lock()
        self.load_error: str | None = None
        #: Why the published version could not be opened (a damaged or missing file), and
        #: its token: not retried until another version is published.
        self.damage: Damaged | None = None
        self._damaged_token: str | None = None
        self._watcher = BackgroundTask("search-reload", self._check, RELOAD_SECONDS, logger=log)
        self._listener: threading.Thread | None = None
        self._stop_listening = threading.Event()
        self.models = search_model_slot(open_model_store(models) if models is not None else None)
        self.synonyms = (
            SynonymTable(synonyms, weight=settings.get("search_synonym_weight"))
            if synonyms is not None
            else None
        )
        if self.synonyms is not None:
            self.coordinator.synonyms = self.synonyms

    # --- versions ---------------------------------------------------------------------------
    def _open(self, token: str) -> None:
        try:
            snap = self.location.open()
            if snap is None:
                return
            if self.tier is not None:
                self.tier.rebase(snap)
            self.coordinator.ensure_shards(len(snap.shards))
            self._snapshot = snap  # the swap: one reference assignment
            self._token = token
            self.load_error = None
            self.damage = self._damaged_token = None
        except Damaged as exc:
            if self.location.current_token() != token:
                return  # replaced while we opened it (its files collected): the next check
            self.damage, self._damaged_token = exc, token
            DAMAGE_LOG.report(exc)
        except (OSError, ValueError, KeyError) as exc:
            # e.g. a version collected while we opened it; the next check retries
            self.load_error = str(exc)
            log.warning("could not open search index %s: %s", token, exc)

    def reload(self, wait: bool = True) -> IndexVersion | None:
        """Open the newest published version now if it differs from the live one.

        ``wait=False`` returns the live snapshot at once when there is one and leaves the
        opening to the background watcher (started here if it is not running yet).
        """
        token = self.location.current_token()
        self._checked = time.monotonic()
        if token is None or token in (self._token, self._damaged_token):
            return self._snapshot
        if wait or self._snapshot is None:
            self._open_newest(token)
            return self._snapshot
        self._watcher.start()
        return self._snapshot

    def _open_newest(self, token: str) -> None:
        with self._loading:
            if self.location.current_token() != self._token:
                self._open(token)

    def _check(self) -> None:
        """One round of the watcher: open a newly published version, if any."""
        token = self.location.current_token()
        self._checked = time.monotonic()
        if token is not None and token not in (self._token, self._damaged_token):
            self._open_newest(token)

    def snapshot(self) -> IndexVersion:
        """The live snapshot (checking for a newer one at most once a second)."""
        if self._snapshot is None or (
            not self._watcher.running and time.monotonic() - self._checked > RELOAD_SECONDS
        ):
            self.reload(wait=False)
        snap = self._snapshot
        if snap is None and self.damage is not None:
            raise self.damage
        if snap is None:
            raise NotBuilt(
                f"no search index in {self.index_dir}; build one with `lookup index CRAWL_DIR`",
                command="lookup index CRAWL_DIR",
            )
        return snap

    def live_version(self) -> IndexVersion | None:
        """The version served now (None before one is open): no reload, no error."""
        return self._snapshot

    # --- queries and writes ----------------------------------------------------------------
    def search(
        self, query: str, page: int = 1, limit: int = 10, ranking: str = "auto", **options: Any
    ) -> dict[str, Any]:
        """Run a query (see :meth:`Coordinator.search` for the options).

        ``ranking``: ``auto`` serves the active learned model if there is one, ``hand``
        the hand-set weights, ``learned`` the model or a ``NO_MODEL`` error.
        """
        if ranking not in ("auto", "hand", "learned"):
            raise QueryError("INVALID_RANKING", "ranking must be auto, hand or learned")
        model = None if ranking == "hand" else self.models.get()
        if ranking == "learned" and model is None:
            raise QueryError("NO_MODEL", f"no learned search model: {self.models.fallback}")
        body = self.coordinator.search(self.snapshot(), query, page, limit, model=model, **options)
        if options.get("explain") or options.get("trace"):  # the contract's keys stay as they are
            why = "asked for" if ranking == "hand" else self.models.fallback
            body["ranking"] = (
                {"model": model.version, "kind": "learned"}
                if model is not None
                else {"kind": "hand", "reason": why}
            )
        return body

    def delete(self, url: str = "", url_hash: str = "") -> dict[str, Any]:
        """Remove a page from results at once (and from the next batch build)."""
        snap = self.snapshot()
        if self.tier is None:
            raise RuntimeError("deletions need the real-time tier")
        candidates = [url_hash] if url_hash else []
        if url:
            candidates += [url_hash_of(url), url_hash_of(comparable_url(url))]
        key = next((c for c in candidates if c and c in snap.locations), None)
        if key is None and snap.realtime is not None:
            key = next((c for c in candidates if c in snap.realtime.latest), None)
        if key is None:
            key = self._find_by_url(snap, url)
        if key is None:
            return {"deleted": False, "urlHash": None}
        self.tier.delete(key, url)
        return {"deleted": True, "urlHash": key}

    @staticmethod
    def _find_by_url(snap: IndexVersion, url: str) -> str | None:
        if not url:
            return None
        key = url_key(url)
        found = snap.url_hash_for_key(key)
        if found is not None:
            return found
        build = snap.realtime
        if build is not None:
            for h, (s, doc_id) in build.latest.items():
                if build.indexes[s].docs[doc_id].urlkey == key:
                    return h
        return None

    # --- lifecycle --------------------------------------------------------------------------
    def start(self) -> None:
        """Open the index if there is one, watch for new versions and tail the crawl log."""
        self.reload(wait=True)
        self._watcher.start()
        if callable(getattr(self.location, "wait", None)) and self._listener is None:
            self._stop_listening.clear()
            self._listener = threading.Thread(
                target=self._listen, name="search-listen", daemon=True
            )
            self._listener.start()
        if self.tier is not None:
            self.tier.start()

    def _listen(self) -> None:
        """Open a new version as soon as the shared store announces it (the watcher's
        polling stays the fallback); a store out of reach is retried a second later."""
        wait = self.location.wait  # type: ignore[attr-defined]
        seen = self._token
        while not self._stop_listening.is_set():
            try:
                token = wait(seen, LISTEN_SECONDS)
            except (Unavailable, OSError, ValueError) as exc:
                log.warning("waiting for a new search index version: %s", exc)
                self._stop_listening.wait(RELOAD_SECONDS)
                continue
            seen = token
            if token is not None and token not in (self._token, self._damaged_token):
                self._open_newest(token)

    def close(self) -> None:
        """Stop background work and let go of the open index; safe to call twice.

        Each segment file is memory-mapped, and a mapping holds a file descriptor until it is
        freed: dropping the snapshot (and the tier, which holds it too) here closes them even if
        something keeps the app alive (FastAPI caches endpoint functions, and with them their
        closures).
        """
        self._watcher.stop()
        self._stop_listening.set()
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.join(LISTEN_SECONDS + 5.0)
        tier, self.tier = self.tier, None
        if tier is not None:
            tier.stop()
        self.coordinator.close()
        with self._loading:
            self._snapshot = None
            self._token = None

    def stop(self) -> None:
        """The same as :meth:`close` (the name the notebook and the benchmark use)."""
        self.close()

    def status(self) -> dict[str, Any]:
        """Health probe: built or not, what is live, and the background loops' failures."""
        try:
            snap = self.snapshot()
        except Damaged as exc:
            return {**exc.report(), "reloader": self._watcher.status()}
        except NotBuilt as exc:
            return {"status": "NOT_BUILT", "message": str(exc), "reloader": self._watcher.status()}
        out: dict[str, Any] = {"status": "ok", **snap.status()}
        if self.damage is not None:  # a newer version is damaged; the one before serves
            out["damaged"] = self.damage.report()
        if self.tier is not None:
            out["realtime"] = self.tier.status()
        if self.load_error:
            out["loadError"] = self.load_error
        out["reloader"] = self._watcher.status()
        out["model"] = self.models.status()
        if self.synonyms is not None:
            out["synonyms"] = self.synonyms.status()
        return out
