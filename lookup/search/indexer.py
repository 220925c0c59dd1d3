"""The write path: crawl events in, immutable segments and a new manifest out.

``build_index`` reads ``PageFetched`` events after the live index's watermark,
collapses them to each URL's latest state, and applies that state:

* a page whose (``urlHash``, ``contentHash``) is already live is skipped — a
  resubmitted event never duplicates a document;
* a new or changed page is extracted from its WARC record, analysed and added to a
  new segment of its shard (shard = hash of ``urlHash``); the old version, if any,
  gets a tombstone;
* a gone page (404/410, a delete event, or the index's own deletions log) gets a
  tombstone.

Then small segments are merged (dropping deleted documents), tombstone files and a
new manifest are written, and the candidate is validated against the live version
(:mod:`lookup.search.canary`: no empty shard, the document count within bounds, the live
version's canary queries still answered). Only a candidate that passes gets its own
canary queries and the ``CURRENT`` swap; one that fails is kept aside with the reasons
(``rejected/``), its files are collected, and the live version keeps serving. Nothing is
modified in place.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lookup.errors import Damaged
from lookup.kit.integrity import checksum_file
from lookup.search.analysis import ANALYSIS_VERSION
from lookup.search.canary import ReleasePolicy, choose_canaries, validate
from lookup.search.docfields import DocFields, analyze_page
from lookup.search.events import (
    EventLogReader,
    LogPosition,
    PageEvent,
    PageStore,
    page_from_payload,
)
from lookup.search.extract import comparable_url
from lookup.search.location import IndexLocation, index_location
from lookup.search.manifest import (
    DELETIONS_LOG,
    Manifest,
    SegmentEntry,
    SourceState,
    damaged,
    next_free_segment,
    read_tombstones,
    shard_dir,
    write_tombstones,
)
from lookup.search.segment import (
    DocRecord,
    SegmentFileError,
    SegmentReader,
    SegmentWriter,
    merge_segments,
)
from lookup.search.shard import IndexVersion

#: Shards of a fresh index when ``--shards`` is not given.
DEFAULT_SHARDS = 4
#: A new segment is cut every this many documents per shard.
SEGMENT_DOCS = 20_000
#: More segments than this in a shard triggers a merge of the smallest ones.
MAX_SEGMENTS = 6
#: How many of the smallest segments one merge combines.
MERGE_FACTOR = 4
#: A segment with more than this fraction deleted is rewritten without them.
EXPUNGE_FRACTION = 0.3

Progress = Callable[[str, int, int], None]


def shard_of(url_hash: str, shards: int) -> int:
    """The shard that owns a URL: a stable hash of its ``urlHash``, modulo the shard count."""
    digest = hashlib.blake2b(url_hash.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little") % shards


@dataclass
class IndexReport:
    """What one ``build_index`` run did."""

    index_dir: str
    version: int
    shards: int
    incremental: bool
    events_read: int = 0
    added: int = 0
    updated: int = 0
    deleted: int = 0
    unchanged: int = 0
    skipped: int = 0
    failed: int = 0
    segments_written: int = 0
    merges: int = 0
    live_docs: int = 0
    watermark: int = 0
    bytes_on_disk: int = 0
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)
    #: False when validation refused the version (the live one, ``live_version``, serves on).
    published: bool = True
    live_version: int | None = None
    #: The validation report (:meth:`lookup.search.canary.ValidationReport.to_dict`).
    validation: dict[str, Any] = field(default_factory=dict)
    canaries: int = 0
    #: Of ``seconds``, the validation and the choice of canary queries (opening the version).
    validation_seconds: float = 0.0


@dataclass
class _Live:
    shard: int
    segment: str
    doc: int
    content_hash: str
    crawled_at: float


@dataclass
class _ShardState:
    entries: list[SegmentEntry]
    readers: dict[str, SegmentReader]
    deleted: dict[str, set[int]]
    changed: set[str] = field(default_factory=set)
    writer: SegmentWriter | None = None


def _quiet(_: str, __: int, ___: int) -> None:
    return None


def read_deletions(index_dir: Path, offset: int) -> tuple[list[tuple[str, float]], int]:
    """``(urlHash, deletedAt)`` entries of the index's deletions log after ``offset``."""
    from lookup.search.events import parse_time

    path = Path(index_dir) / DELETIONS_LOG
    out: list[tuple[str, float]] = []
    try:
        with path.open("rb") as f:
            f.seek(offset)
            for line in f:
                if not line.endswith(b"\n"):
                    break
                offset += len(line)
                try:
                    obj = json.loads(line)
                    out.append((str(obj["urlHash"]), parse_time(obj.get("deletedAt"))))
                except (ValueError, KeyError, TypeError):
                    continue
    except OSError:
        pass
    return out, offset


def build_index(
    crawl_dir: str | Path,
    index_dir: str | Path,
    shards: int | None = None,
    *,
    rebuild: bool = False,
    optimize: bool = False,
    segment_docs: int = SEGMENT_DOCS,
    max_segments: int = MAX_SEGMENTS,
    progress: Progress | None = None,
    force: bool = False,
    policy: ReleasePolicy | None = None,
    index_store: str | None = None,
) -> IndexReport:
    """Bring the index in ``index_dir`` up to date with the crawl in ``crawl_dir``.

    Incremental when the live index was built from the same crawl log with the same
    shard count and text analysis (:data:`~.analysis.ANALYSIS_VERSION`); otherwise (or
    with ``rebuild``) a full build into a new version.
    ``optimize`` merges each shard down to one segment. The new version goes live only
    if it passes validation (``policy``, default the settings; ``force`` skips the
    comparisons with the live version): see ``report.published``. ``index_store``: a
    shared index store (``postgresql://…``, :func:`~.location.index_location`) the new version is
    published to, ``index_dir`` then being this machine's work copy.
    """
    started = time.perf_counter()
    crawl = Path(crawl_dir).resolve()
    out = Path(index_dir).resolve()
    location = index_location(out, index_store)  # segments are written in out, then published
    say = progress or _quiet
    log = EventLogReader(crawl)
    if not log.exists():
        raise FileNotFoundError(f"{crawl} has no {log.path.name}: run `lookup crawl` first")
    with location.writer():
        try:
            prev = location.current()
        except Damaged:
            if not rebuild:
                raise  # its remedy says: --rebuild
            prev = None  # a rebuild reads nothing of the damaged version
        n_shards = shards or (prev.shards if prev else DEFAULT_SHARDS)
        if n_shards < 1:
            raise ValueError("--shards must be at least 1")
        fingerprint = log.fingerprint()
        incremental = (
            prev is not None
            and not rebuild
            and prev.shards == n_shards
            and prev.source.crawl_dir == str(crawl)
            and prev.source.fingerprint == fingerprint
            and prev.source.offset <= log.size()
            and prev.analysis == ANALYSIS_VERSION  # another analysis: every page again
        )
        # a rejected version's number is never reused (its record names it)
        version = max([prev.version if prev else 0, *location.versions(), *location.rejected()]) + 1
        next_segment = max(prev.next_segment if prev else 1, next_free_segment(out))
        report = IndexReport(str(out), version, n_shards, incremental)

        states = [_ShardState([], {}, {}) for _ in range(n_shards)]
        live: dict[str, _Live] = {}
        start = LogPosition()
        deletions_offset = 0
        if incremental and prev is not None:
            start = LogPosition(prev.source.offset, prev.source.seq)
            deletions_offset = prev.source.deletions_offset
            for s, entries in enumerate(prev.segments):
                st = states[s]
                for e in entries:
                    reader = _open_segment(out, s, e, prev.source.crawl_dir)
                    st.entries.append(e)
                    st.readers[e.name] = reader
                    dead = set(read_tombstones(out, s, e).tolist())
                    st.deleted[e.name] = dead
                    for d in range(reader.n_docs):
                        if d not in dead:
                            live[reader.url_hashes[d]] = _Live(
                                s, e.name, d, reader.content_hashes[d], float(reader.crawled[d])
                            )

        # 1. read the log past the watermark; keep each URL's latest event
        total_bytes = max(log.size() - start.offset, 1)
        latest: dict[str, PageEvent] = {}
        pos = start
        max_fetched = prev.source.max_fetched_at if (incremental and prev) else 0.0
        say("reading events", 0, total_bytes)
        for event, pos in log.read(start):
            report.events_read += 1
            if event.is_delete or event.is_upsert:
                latest[event.url_hash] = event
                max_fetched = max(max_fetched, event.fetched_at)
            else:
                report.skipped += 1
            if report.events_read % 5000 == 0:
                say("reading events", pos.offset - start.offset, total_bytes)
        say("reading events", total_bytes, total_bytes)
        deletions, deletions_offset = read_deletions(out, deletions_offset)

        # 2. deletions first (log deletions lose to a later fetch of the same URL)
        gone: set[str] = set()
        for url_hash, deleted_at in deletions:
            ev = latest.get(url_hash)
            if ev is not None and ev.is_upsert and ev.fetched_at > deleted_at:
                continue
            cur = live.get(url_hash)
            if ev is not None and ev.is_upsert:
                latest.pop(url_hash)
            if cur is not None and cur.crawled_at <= deleted_at:
                gone.add(url_hash)
        for url_hash, ev in latest.items():
            if ev.is_delete and url_hash in live:
                gone.add(url_hash)

        def tombstone(url_hash: str) -> None:
            cur = live.pop(url_hash)
            st = states[cur.shard]
            st.deleted[cur.segment].add(cur.doc)
            st.changed.add(cur.segment)

        for url_hash in gone:
            if url_hash in live:
                tombstone(url_hash)
                report.deleted += 1

        # 3. new and changed pages → new segments
        store = PageStore(crawl)
        upserts = sorted((e for e in latest.values() if e.is_upsert), key=lambda e: e.seq)
        say("indexing pages", 0, len(upserts))
        last_report = time.monotonic()

        def flush(s: int) -> None:
            nonlocal next_segment
            st = states[s]
            if st.writer is None or len(st.writer) == 0:
                return
            name = f"seg-{next_segment:06d}"
            next_segment += 1
            info = st.writer.write(shard_dir(out, s) / name)
            st.entries.append(
                SegmentEntry(name, info.docs, 0, None, info.bytes, meta_checksum=info.checksum)
            )
            st.readers[name] = SegmentReader(shard_dir(out, s) / name)
            st.deleted[name] = set()
            pending = [h for h, lv in live.items() if lv.shard == s and lv.segment == "*pending*"]
            for h in pending:
                live[h].segment = name
            st.writer = None
            report.segments_written += 1

        for i, ev in enumerate(upserts):
            cur = live.get(ev.url_hash)
            if cur is not None and cur.content_hash == ev.content_hash and ev.content_hash:
                report.unchanged += 1
                continue
            try:
                body, ctype = store.load(ev)
                # the crawler's event may list the links; otherwise take them from the page
                page = page_from_payload(body, ctype, ev.url, with_links=ev.out_links is None)
            except Exception as exc:  # a missing or corrupt record must not stop the build
                report.failed += 1
                if len(report.errors) < 20:
                    report.errors.append(f"{ev.url}: {exc}")
                continue
            if cur is not None:
                tombstone(ev.url_hash)
            if page is None or page.noindex:
                report.skipped += 1
                if cur is not None:
                    report.deleted += 1
                continue
            fields = DocFields.of(ev.url, page.title, page.text, ctype)
            record = DocRecord(
                url=ev.url,
                url_hash=ev.url_hash,
                content_hash=ev.content_hash,
                title=page.title,
                text=page.text,
                crawled_at=ev.fetched_at,
                seq=ev.seq,
                links=[comparable_url(u) for u in ev.out_links]
                if ev.out_links is not None
                else page.links,
                lang=fields.lang,
                content_type=fields.content_type,
            )
            s = shard_of(ev.url_hash, n_shards)
            st = states[s]
            if st.writer is None:
                st.writer = SegmentWriter()
            doc = st.writer.add(record, analyze_page(record.title, record.text, ev.url, fields))
            live[ev.url_hash] = _Live(s, "*pending*", doc, ev.content_hash, ev.fetched_at)
            if cur is None:
                report.added += 1
            else:
                report.updated += 1
            if len(st.writer) >= segment_docs:
                flush(s)
            now = time.monotonic()
            if now - last_report > 0.5:
                say("indexing pages", i + 1, len(upserts))
                last_report = now
        for s in range(n_shards):
            flush(s)
        say("indexing pages", len(upserts), len(upserts))

        # 4. merges: expunge heavily deleted segments, keep the segment count bounded
        for s, st in enumerate(states):
            while True:
                group = _pick_merge(st, max_segments, optimize)
                if not group:
                    break
                say(f"merging shard {s}", 0, len(group))
                name = f"seg-{next_segment:06d}"
                next_segment += 1
                inputs = []
                for e in group:
                    mask = np.ones(st.readers[e.name].n_docs, dtype=bool)
                    dead = st.deleted[e.name]
                    if dead:
                        mask[np.fromiter(dead, dtype=np.int64)] = False
                    inputs.append((st.readers[e.name], mask))
                info = merge_segments(inputs, shard_dir(out, s) / name)
                merged_names = {e.name for e in group}
                st.entries = [e for e in st.entries if e.name not in merged_names]
                if info.docs:
                    st.entries.append(
                        SegmentEntry(
                            name, info.docs, 0, None, info.bytes, meta_checksum=info.checksum
                        )
                    )
                    st.readers[name] = SegmentReader(shard_dir(out, s) / name)
                    st.deleted[name] = set()
                report.merges += 1
                say(f"merging shard {s}", len(group), len(group))

        # 5. tombstone files for segments whose deletions changed, then the manifest
        for s, st in enumerate(states):
            for e in st.entries:
                if e.name in st.changed:
                    dead = st.deleted[e.name]
                    e.deleted = len(dead)
                    e.tombstones = (
                        write_tombstones(out, s, e.name, version, np.fromiter(dead, np.int64))
                        if dead
                        else None
                    )
                    e.tombstones_checksum = (
                        checksum_file(shard_dir(out, s) / e.tombstones) if e.tombstones else None
                    )
        manifest = Manifest(
            version=version,
            shards=n_shards,
            created_at=time.time(),
            source=SourceState(
                crawl_dir=str(crawl),
                fingerprint=fingerprint,
                offset=pos.offset,
                seq=pos.seq,
                max_fetched_at=max_fetched,
                deletions_offset=deletions_offset,
            ),
            segments=[st.entries for st in states],
            next_segment=next_segment,
        )
        say("validating", 0, 1)
        checking = time.perf_counter()
        _release(location, manifest, prev, report, policy or ReleasePolicy.from_settings(), force)
        report.validation_seconds = time.perf_counter() - checking
        say("validating", 1, 1)
        location.collect_garbage()  # a rejected candidate's files go here
        report.live_docs = manifest.live_docs
        report.watermark = manifest.watermark
        report.bytes_on_disk = sum(
            f.stat().st_size for f in out.rglob("*") if f.is_file() and "shard-" in str(f)
        )
        report.seconds = time.perf_counter() - started
        return report


def _release(
    location: IndexLocation,
    manifest: Manifest,
    live: Manifest | None,
    report: IndexReport,
    policy: ReleasePolicy,
    force: bool,
) -> None:
    """Validate the candidate against the live version; publish it with its own canary
    queries, or keep it aside with the reasons (``CURRENT`` untouched)."""
    report.live_version = live.version if live else None
    wants_canaries = policy.queries > 0
    checks_canaries = live is not None and bool(live.canaries) and not force
    opened = IndexVersion(location.path, manifest) if wants_canaries or checks_canaries else None
    outcome = validate(manifest, opened, live, policy, force=force)
    report.validation = outcome.to_dict()
    if not outcome.ok:
        location.reject(manifest, {"rejectedAt": time.time(), **outcome.to_dict()})
        report.published = False
        return
    if opened is not None and wants_canaries:
        manifest.canaries = choose_canaries(opened, policy.queries, policy.depth)
    report.canaries = len(manifest.canaries)
    location.publish(manifest)


def _open_segment(out: Path, shard: int, entry: SegmentEntry, crawl_dir: str) -> SegmentReader:
    """A segment of the live version, checked (:class:`~lookup.errors.Damaged` if not sound)."""
    path = shard_dir(out, shard) / entry.name
    try:
        return SegmentReader(path, entry.meta_checksum)
    except SegmentFileError as exc:
        raise damaged(exc.path, exc.problem, out, crawl_dir) from None
    except (OSError, ValueError, KeyError, IndexError) as exc:
        raise damaged(path, str(exc), out, crawl_dir) from None


def _pick_merge(st: _ShardState, max_segments: int, optimize: bool) -> list[SegmentEntry]:
    """The segments to merge next in one shard (empty when the shard is in shape)."""
    entries = st.entries
    if optimize:
        if len(entries) > 1 or any(st.deleted[e.name] for e in entries):
            return list(entries)
        return []
    for e in entries:
        if e.docs and len(st.deleted[e.name]) / e.docs > EXPUNGE_FRACTION:
            return [e]
    if len(entries) > max_segments:
        by_size = sorted(entries, key=lambda e: e.docs - len(st.deleted[e.name]))
        return by_size[:MERGE_FACTOR]
    return []
