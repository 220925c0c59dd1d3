"""The real-time tier: pages fetched after the batch index was built, searchable in seconds.

The batch index is large, immutable and rebuilt now and then; making it accept
per-document updates would give up what makes it fast. So new pages go into a small
in-memory index per shard that every shard queries alongside its batch segments, and
the two are merged by score — with the **batch index's corpus statistics extended by
the tier's documents**, so the scores are comparable.

Two mechanisms make the handoff exact:

* **Watermark.** The batch manifest records the last event (``seq``) it covers; the
  tier keeps only events after it. When a new batch version is opened, the tier is
  rebuilt from its retained events past the *new* watermark and attached to that
  version *before* it goes live, so the swap itself moves documents from one tier to
  the other: no document is in both, none is in neither.
* **Tombstones.** A page changed or deleted after the watermark is still in the batch
  index; the tier hides it from batch results (a mask swapped copy-on-write). A
  deletion through the API is written to the index's deletions log, so the next batch
  build drops it too, and it stays hidden until that build is live.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from array import array
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from lookup.kit.background import BackgroundTask
from lookup.search.analysis import Analyzed, Phrase, analyze_document
from lookup.search.bm25 import QueryPlan, length_norm, phrase_mask, sloppy_freq, term_scores
from lookup.search.docfields import DocFields, analyze_page
from lookup.search.events import (
    EventLogReader,
    LogPosition,
    PageEvent,
    PageStore,
    page_from_payload,
)
from lookup.search.extract import ExtractedPage
from lookup.search.facets import FacetCounts
from lookup.search.indexer import shard_of
from lookup.search.manifest import DELETIONS_LOG
from lookup.search.matching import evaluate, expr_scores
from lookup.search.segment import url_key
from lookup.search.shard import REALTIME, Hit, IndexVersion, top_k

log = logging.getLogger("lookup.search")


@dataclass
class RtDoc:
    """A document held by the real-time tier."""

    url_hash: str
    urlkey: int
    seq: int
    crawled_at: float
    doclen: int
    terms: frozenset[str]
    stored: dict[str, Any]


class MemoryIndex:
    """An append-only inverted index for one shard's real-time documents."""

    def __init__(self) -> None:
        self.docs: list[RtDoc] = []
        self.post: dict[str, tuple[array, array]] = {}
        self.doclen = array("d")
        self.crawled = array("d")
        self.urlkey = array("q")

    def add(self, doc: RtDoc, analyzed: Analyzed) -> int:
        """Append a document; readers see it once a new state publishes the larger count."""
        doc_id = len(self.docs)
        tf = Counter(analyzed.terms)
        tf.update(t for t, _ in analyzed.stacked)  # stacked terms add nothing to the length
        for key in analyzed.fields:  # field terms count once and add nothing to the length
            tf.setdefault(key, 1)
        for term, count in tf.items():
            lists = self.post.get(term)
            if lists is None:
                lists = self.post[term] = (array("q"), array("q"))
            lists[0].append(doc_id)
            lists[1].append(count)
        self.docs.append(doc)
        self.doclen.append(float(doc.doclen))
        self.crawled.append(doc.crawled_at)
        self.urlkey.append(doc.urlkey)
        return doc_id


@dataclass(frozen=True)
class RtState:
    """An immutable published view of the tier: what readers may see."""

    counts: tuple[int, ...]
    dead: tuple[np.ndarray, ...]  # per shard: sorted ids of superseded/deleted docs
    docs: int
    length: int
    df: dict[str, int]


@dataclass
class ApiDeletion:
    """A deletion made through the API, pending until a batch build includes it."""

    url_hash: str
    deleted_at: float
    log_end: int  # deletions-log byte offset just past this entry


@dataclass
class _Retained:
    event: PageEvent
    page: ExtractedPage | None
    analyzed: Analyzed | None
    fields: DocFields | None = None


class RtShardView:
    """The part of the tier one shard of one snapshot queries (see ``ShardIndex.realtime``)."""

    def __init__(self, build: RtBuild, shard: int) -> None:
        self.build = build
        self.shard = shard

    @property
    def visible_count(self) -> int:
        """Visible real-time documents of this shard."""
        st = self.build.state
        return st.counts[self.shard] - int(st.dead[self.shard].size)

    def _term(self, term: str, n: int, dead: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        lists = self.build.indexes[self.shard].post.get(term)
        if lists is None:
            return None
        docs = np.array(lists[0][:], dtype=np.int64)
        tfs = np.array(lists[1][: docs.size], dtype=np.int64)
        keep = docs < n
        if dead.size:
            keep &= ~np.isin(docs, dead)
        return docs[keep], tfs[keep]

    @staticmethod
    def _phrases(plan: QueryPlan, mi: MemoryIndex, docs: np.ndarray) -> np.ndarray:
        """Mask over ``docs``: the documents that contain every phrase of the plan."""
        positions_of = RtShardView._positions(mi, docs)
        keep = np.ones(docs.size, dtype=bool)
        for phrase in plan.phrases:
            keep &= phrase_mask(phrase, int(docs.size), positions_of)
        return keep

    @staticmethod
    def _positions(
        mi: MemoryIndex, docs: np.ndarray
    ) -> Callable[[str], tuple[np.ndarray, np.ndarray]]:
        """``positions_of(term)`` over ``docs`` (the tier keeps no positions: re-analysed)."""
        owners: dict[str, list[int]] = {}
        places: dict[str, list[int]] = {}
        for k, d in enumerate(docs.tolist()):
            stored = mi.docs[d].stored
            a = analyze_document(stored.get("title") or "", stored.get("text") or "")
            for term, pos in a.positioned():
                owners.setdefault(term, []).append(k)
                places.setdefault(term, []).append(pos)

        def positions_of(term: str) -> tuple[np.ndarray, np.ndarray]:
            return (
                np.asarray(owners.get(term, []), dtype=np.int64),
                np.asarray(places.get(term, []), dtype=np.int64),
            )

        return positions_of

    def crawled_at(self, doc: int) -> float:
        """When a real-time document was fetched."""
        return float(self.build.indexes[self.shard].crawled[doc])

    def search(
        self, plan: QueryPlan, conjunctive: bool, counts: FacetCounts | None = None
    ) -> tuple[list[Hit], int]:
        """Top k of this shard's real-time documents under the plan's global statistics
        (the k newest for ``sort=date``); ``counts`` adds the matches' facets."""
        st = self.build.state
        n = st.counts[self.shard]
        if n == 0:
            return [], 0
        dead = st.dead[self.shard]
        mi = self.build.indexes[self.shard]
        doclen = np.array(mi.doclen[:n])
        per_term = [self._term(t, n, dead) for t in plan.terms]
        if plan.expr is not None:  # the query language: a mask over the shard's documents
            source = _RtSource(self, mi, n, dead)
            memo: dict[Any, np.ndarray] = {}
            mask = evaluate(plan.expr, source, memo)
            mask[dead[dead < n]] = False
            docs = np.flatnonzero(mask)
            if docs.size == 0:
                return [], 0
            norm = length_norm(doclen[docs], plan.avgdl, plan.k1, plan.b)
            bm = expr_scores(plan, source, docs, norm, memo)
            plan = replace(plan, phrases=())
        elif conjunctive:
            if any(p is None or p[0].size == 0 for p in per_term):
                return [], 0
            docs = per_term[0][0]  # type: ignore[index]
            for p in per_term[1:]:
                docs = np.intersect1d(docs, p[0], assume_unique=True)  # type: ignore[index]
            if docs.size == 0:
                return [], 0
            norm = length_norm(doclen[docs], plan.avgdl, plan.k1, plan.b)
            bm = np.zeros(docs.size)
            for p, term_idf in zip(per_term, plan.idfs, strict=True):
                d, tf = p  # type: ignore[misc]
                bm = bm + term_scores(tf[np.searchsorted(d, docs)], norm, term_idf)
        else:
            acc: dict[int, float] = {}
            for p, term_idf in zip(per_term, plan.idfs, strict=True):
                if p is None:
                    continue
                d, tf = p
                contrib = term_scores(
                    tf, length_norm(doclen[d], plan.avgdl, plan.k1, plan.b), term_idf
                )
                for doc, c in zip(d.tolist(), contrib.tolist(), strict=True):
                    acc[doc] = acc.get(doc, 0.0) + c
            if not acc:
                return [], 0
            docs = np.array(sorted(acc), dtype=np.int64)
            bm = np.array([acc[d] for d in docs.tolist()])
        if plan.phrases:  # the tier keeps no positions: its few candidates are re-analysed
            keep = self._phrases(plan, mi, docs)
            docs, bm = docs[keep], bm[keep]
            if docs.size == 0:
                return [], 0
        keys = np.array(mi.urlkey[:n], dtype=np.int64)[docs]
        crawled = np.array(mi.crawled[:n])[docs]
        if counts is not None:
            counts.add_fields((DocFields.from_stored(mi.docs[d].stored) for d in docs), crawled)
        sig = plan.signals
        final = sig.blend(
            bm,
            sig.link_boost(self.build.snapshot.inlinks_for(keys)),
            sig.fresh_boost(crawled, plan.now),
        )
        hits = [
            Hit(float(final[i]), int(keys[i]), float(bm[i]), self.shard, REALTIME, int(docs[i]))
            for i in top_k(final if plan.sort == "score" else crawled, keys, plan.k)
        ]
        return hits, int(docs.size)


class _RtSource:
    """A real-time shard as the query evaluator sees it (:class:`~matching.MatchSource`)."""

    def __init__(self, view: RtShardView, mi: MemoryIndex, n: int, dead: np.ndarray) -> None:
        self.view, self.mi, self.n_docs, self.dead = view, mi, n, dead
        self.crawled = np.array(mi.crawled[:n])

    def docs_with(self, term: str) -> np.ndarray:
        p = self.view._term(term, self.n_docs, self.dead)
        return np.zeros(0, np.int64) if p is None else p[0]

    def phrase_docs(self, phrase: Phrase, candidates: np.ndarray) -> np.ndarray:
        plan = QueryPlan((), (), (), 0, 1.0, 0, 0.0, phrases=(phrase,))
        return RtShardView._phrases(plan, self.mi, candidates)

    def phrase_freqs(self, phrase: Phrase, slop: int, candidates: np.ndarray) -> np.ndarray:
        positions_of = RtShardView._positions(self.mi, candidates)
        return sloppy_freq(phrase, slop, int(candidates.size), positions_of)

    def tfs(self, term: str, docs: np.ndarray) -> np.ndarray:
        out = np.zeros(docs.size, dtype=np.int64)
        p = self.view._term(term, self.n_docs, self.dead)
        if p is not None and p[0].size:
            d, tf = p
            i = np.minimum(np.searchsorted(d, docs), d.size - 1)
            has = d[i] == docs
            out[has] = tf[i[has]]
        return out


class RtBuild:
    """The tier's documents and tombstones relative to one batch snapshot (one writer)."""

    def __init__(self, snapshot: IndexVersion) -> None:
        self.snapshot = snapshot
        n = len(snapshot.shards)
        self.indexes = [MemoryIndex() for _ in range(n)]
        self.latest: dict[str, tuple[int, int]] = {}
        self.last_fetch: dict[str, float] = {}
        self.hides: set[str] = set()
        self._dead: list[set[int]] = [set() for _ in range(n)]
        self._df: Counter[str] = Counter()
        self._docs = 0
        self._length = 0
        self.state = RtState(
            tuple([0] * n), tuple(np.zeros(0, np.int64) for _ in range(n)), 0, 0, {}
        )

    def _kill(self, url_hash: str) -> None:
        loc = self.latest.pop(url_hash, None)
        if loc is None:
            return
        s, doc_id = loc
        self._dead[s].add(doc_id)
        doc = self.indexes[s].docs[doc_id]
        self._df.subtract(doc.terms)
        self._docs -= 1
        self._length -= doc.doclen

    def apply(self, items: list[_Retained], deletions: list[ApiDeletion]) -> None:
        """Apply events (in log order) and API deletions, then publish a new state."""
        snap = self.snapshot
        for item in items:
            ev = item.event
            if ev.seq <= snap.watermark:
                continue
            url = ev.url_hash
            self._kill(url)
            if ev.is_delete:
                self.hides.add(url)
                self.last_fetch.pop(url, None)
                continue
            self.last_fetch[url] = ev.fetched_at
            loc = snap.locations.get(url)
            if loc is not None:
                s, si, d = loc
                batch_hash = snap.shards[s].segments[si].reader.content_hashes[d]
                if ev.content_hash and batch_hash == ev.content_hash:
                    self.hides.discard(url)  # the batch already holds exactly this page
                    continue
            self.hides.add(url)
            if item.page is None or item.page.noindex or item.analyzed is None:
                continue
            s = shard_of(url, len(self.indexes))
            doc = RtDoc(
                url_hash=url,
                urlkey=url_key(ev.url),
                seq=ev.seq,
                crawled_at=ev.fetched_at,
                doclen=len(item.analyzed.terms),
                terms=item.analyzed.all_terms(),
                stored={
                    "url": ev.url,
                    "urlHash": url,
                    "contentHash": ev.content_hash,
                    "title": item.page.title,
                    "text": item.page.text,
                    "crawledAt": ev.fetched_at,
                    "seq": ev.seq,
                    **(
                        {"lang": item.fields.lang, "contentType": item.fields.content_type}
                        if item.fields is not None
                        else {}
                    ),
                },
            )
            doc_id = self.indexes[s].add(doc, item.analyzed)
            self.latest[url] = (s, doc_id)
            self._df.update(doc.terms)
            self._docs += 1
            self._length += doc.doclen
        for gone in deletions:
            if self.last_fetch.get(gone.url_hash, float("-inf")) > gone.deleted_at:
                continue  # fetched again after it was deleted
            self.hides.add(gone.url_hash)
            self._kill(gone.url_hash)
        snap.set_hidden(self.hides)
        self.state = RtState(
            counts=tuple(len(mi.docs) for mi in self.indexes),
            dead=tuple(np.array(sorted(d), dtype=np.int64) for d in self._dead),
            docs=self._docs,
            length=self._length,
            df={t: c for t, c in self._df.items() if c > 0},
        )

    def attach(self) -> None:
        """Make every shard of the snapshot query this build."""
        for s, shard in enumerate(self.snapshot.shards):
            shard.realtime = RtShardView(self, s)
        self.snapshot.realtime = self


class RealtimeTier:
    """Tails the crawl's event log into a :class:`RtBuild` bound to the live snapshot."""

    def __init__(self, index_dir: str | Path, poll_seconds: float = 0.5) -> None:
        self.index_dir = Path(index_dir)
        self.poll_seconds = poll_seconds
        self.build: RtBuild | None = None
        self._lock = threading.Lock()
        self._retained: list[_Retained] = []
        self._deletions: list[ApiDeletion] = []
        self._deletions_read = 0  # deletions-log offset read up to (see poll)
        self._position = LogPosition()
        self._source: tuple[str, str] | None = None
        self._log: EventLogReader | None = None
        self._store: PageStore | None = None
        self._poller: BackgroundTask | None = None
        self.ingested = 0
        self.failed = 0
        self.last_poll = 0.0

    # --- statistics merged with the batch's --------------------------------------------
    def stats(self) -> tuple[int, int, dict[str, int]]:
        """``(docs, total length, df)`` of the visible real-time documents."""
        build = self.build
        if build is None:
            return 0, 0, {}
        st = build.state
        return st.docs, st.length, st.df

    def rebase(self, snapshot: IndexVersion) -> None:
        """Bind the tier to a new batch snapshot (call before the snapshot goes live)."""
        with self._lock:
            src = snapshot.manifest.source
            key = (src.crawl_dir, src.fingerprint)
            # a rollback binds an older version of the same crawl: the events between its
            # watermark and the newer one's, and the API deletions after its own, were
            # dropped when the newer one went live — read them again
            back = self.build is not None and self.build.snapshot.watermark > src.seq
            if self._source != key or back:
                self._retained = []
                self._position = LogPosition(src.offset, src.seq)
                self._source = key
                self._log = EventLogReader(src.crawl_dir)
                self._store = PageStore(src.crawl_dir)
            elif self._position.seq < src.seq:
                self._position = LogPosition(src.offset, src.seq)
            self._retained = [r for r in self._retained if r.event.seq > src.seq]
            # the deletions log is the record of every API deletion, whichever process took
            # it: those after this version's own are pending (also in a process started
            # after them, and after a rollback, whose newer version had dropped them)
            self._deletions = self._logged_deletions(src.deletions_offset)
            self._deletions_read = (
                self._deletions[-1].log_end if self._deletions else src.deletions_offset
            )
            build = RtBuild(snapshot)
            build.apply(self._retained, self._deletions)
            build.attach()
            self.build = build

    def _logged_deletions(self, offset: int) -> list[ApiDeletion]:
        """The API deletions in the index's deletions log past ``offset``."""
        out: list[ApiDeletion] = []
        try:
            with (self.index_dir / DELETIONS_LOG).open("rb") as f:
                f.seek(offset)
                for line in f:
                    if not line.endswith(b"\n"):
                        break
                    offset += len(line)
                    try:
                        obj = json.loads(line)
                        url_hash, deleted_at = str(obj["urlHash"]), float(obj["deletedAt"])
                        out.append(ApiDeletion(url_hash, deleted_at, offset))
                    except (ValueError, KeyError, TypeError):
                        continue
        except OSError:
            pass
        return out

    def _load(self, ev: PageEvent) -> _Retained:
        if not ev.is_upsert or self._store is None:
            return _Retained(ev, None, None)
        try:
            body, ctype = self._store.load(ev)
            page = page_from_payload(body, ctype, ev.url, with_links=False)
        except Exception:  # a record the crawler has not finished writing, or a bad one
            self.failed += 1
            return _Retained(ev, None, None)
        if page is None or page.noindex:
            return _Retained(ev, page, None)
        fields = DocFields.of(ev.url, page.title, page.text, ctype)
        return _Retained(ev, page, analyze_page(page.title, page.text, ev.url, fields), fields)

    def poll(self, max_events: int = 5000) -> int:
        """Read new events from the crawl log into the tier, and API deletions other
        processes logged; returns how many crawl events were applied."""
        with self._lock:
            self.last_poll = time.time()
            if self.build is None or self._log is None:
                return 0
            fresh: list[_Retained] = []
            for ev, pos in self._log.read(self._position):
                self._position = pos
                if ev.is_upsert or ev.is_delete:
                    fresh.append(self._load(ev))
                if len(fresh) >= max_events:
                    break
            if fresh:
                self._retained.extend(fresh)
                self.build.apply(fresh, [])
                self.ingested += len(fresh)
            self._read_deletions()
            return len(fresh)

    def _read_deletions(self) -> None:
        """Apply the deletions other processes logged since the last read (their own
        deletions, already applied by :meth:`delete`, are recognised and skipped)."""
        logged = self._logged_deletions(self._deletions_read)
        if not logged or self.build is None:
            return
        self._deletions_read = logged[-1].log_end
        known = {(d.url_hash, d.deleted_at) for d in self._deletions}
        new = [d for d in logged if (d.url_hash, d.deleted_at) not in known]
        if new:
            self._deletions.extend(new)
            self.build.apply([], new)

    def delete(self, url_hash: str, url: str = "") -> None:
        """Delete a page now: hidden from every result at once, dropped by the next build."""
        with self._lock:
            now = time.time()
            path = self.index_dir / DELETIONS_LOG
            line = json.dumps({"urlHash": url_hash, "url": url, "deletedAt": now}) + "\n"
            with path.open("ab") as f:
                f.write(line.encode("utf-8"))
                end = f.tell()
            deletion = ApiDeletion(url_hash, now, end)
            self._deletions.append(deletion)
            if self.build is not None:
                self.build.apply([], [deletion])

    # --- background tailing ---------------------------------------------------------------
    def start(self) -> None:
        """Poll the crawl log every ``poll_seconds`` in the background (a failed poll is
        logged and counted, and the next one retries)."""
        if self._poller is not None and self._poller.running:
            return
        self._poller = BackgroundTask("search-realtime", self.poll, self.poll_seconds, logger=log)
        self._poller.start()

    def stop(self) -> None:
        """Stop the background polling."""
        if self._poller is not None:
            self._poller.stop()

    def status(self) -> dict[str, Any]:
        """Counters for the dashboard and health checks."""
        build = self.build
        return {
            "docs": build.state.docs if build else 0,
            "hiddenBatchDocs": len(build.hides) if build else 0,
            "retainedEvents": len(self._retained),
            "pendingDeletions": len(self._deletions),
            "logSeq": self._position.seq,
            "ingested": self.ingested,
            "failed": self.failed + (self._poller.failures if self._poller else 0),
            "poller": self._poller.status() if self._poller else None,
        }
