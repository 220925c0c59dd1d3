"""The crawler's output as the indexer sees it: the event log and the page store.

The crawler appends one JSON object per line to ``events.jsonl``, by the schema both
sides declare in :mod:`lookup.kit.crawlevents` (a line off it is skipped and counted as
malformed): a ``PageFetched`` event names the page (``url``, ``urlHash``), when it was
fetched (``fetchedAt``), what it contained (``contentHash``, ``simhash``), where the raw
page is (``storageKey``, a WARC record) and how many links it had (``outLinks``); a
``PageRemoved`` event takes a page out of the index, with its ``reason``.
An event's position in the log (its line number, ``seq``) is its ingest order: the
batch index's watermark and the real-time tier both count in it.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from warcio.archiveiterator import ArchiveIterator

from lookup.kit.crawlevents import event_errors
from lookup.kit.htmlcharset import decode_html
from lookup.kit.pdftext import is_pdf
from lookup.search.extract import ExtractedPage, extract_page, extract_pdf

EVENTS_FILE = "events.jsonl"

#: Statuses that mean the page is gone and must leave the index.
GONE_STATUSES = frozenset({404, 410, 451})
#: Event types (besides a gone status) that remove a page.
DELETE_TYPES = frozenset({"PageDeleted", "PageGone", "PageRemoved"})


@dataclass(frozen=True)
class PageEvent:
    """One line of the crawl's event log, parsed."""

    seq: int
    kind: str
    url: str
    url_hash: str
    fetched_at: float
    http_status: int
    content_hash: str
    storage_key: str
    out_links: tuple[str, ...] | None

    @property
    def is_delete(self) -> bool:
        """The page is gone (a delete event, or a 404/410/451 fetch)."""
        return self.kind in DELETE_TYPES or (
            self.kind == "PageFetched" and self.http_status in GONE_STATUSES
        )

    @property
    def is_upsert(self) -> bool:
        """The page was fetched successfully and its content is stored."""
        return (
            self.kind == "PageFetched"
            and 200 <= self.http_status < 300
            and bool(self.storage_key)
            and bool(self.url)
        )


def parse_time(value: Any) -> float:
    """Epoch seconds from an ISO 8601 string (``Z`` allowed) or a number; 0.0 if absent."""
    if value is None or value == "":
        return 0.0
    if isinstance(value, int | float):
        return float(value)
    text = str(value).strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        stamp = datetime.fromisoformat(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return 0.0
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    return stamp.timestamp()


def iso_time(epoch: float) -> str:
    """``2026-07-29T04:11:05Z`` for an epoch time (whole seconds, rounded down).

    ``time.gmtime`` does it in half the time of ``datetime`` (this runs for every result
    of every query); years outside 1..9999 go the ``datetime`` way, which refuses them.
    """
    whole = math.floor(round(epoch, 6))  # datetime rounds to microseconds first
    if -62_135_596_800 <= whole < 253_402_300_800:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(whole))
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def url_hash_of(url: str) -> str:
    """A 64-bit hex digest of a URL, used when an event carries no ``urlHash``."""
    return hashlib.blake2b(url.encode("utf-8"), digest_size=8).hexdigest()


def parse_event(obj: dict[str, Any], seq: int) -> PageEvent | None:
    """A :class:`PageEvent` from one decoded log line, or None if it is off the schema
    (:mod:`lookup.kit.crawlevents`, the one the crawler writes by)."""
    if event_errors(obj):
        return None
    kind = str(obj.get("type") or obj.get("event") or "PageFetched")
    url = str(obj.get("url") or "")
    url_hash = str(obj.get("urlHash") or (url_hash_of(url) if url else ""))
    if not url_hash:
        return None
    try:
        status = int(obj.get("httpStatus") or obj.get("status") or 0)
    except (TypeError, ValueError):
        status = 0
    links = obj.get("outLinks")
    out_links = (
        tuple(str(x) for x in links if isinstance(x, str)) if isinstance(links, list) else None
    )
    return PageEvent(
        seq=seq,
        kind=kind,
        url=url,
        url_hash=url_hash,
        fetched_at=parse_time(obj.get("fetchedAt")),
        http_status=status,
        content_hash=str(obj.get("contentHash") or ""),
        storage_key=str(obj.get("storageKey") or ""),
        out_links=out_links,
    )


@dataclass
class LogPosition:
    """How far into the event log a reader has got."""

    offset: int = 0
    seq: int = 0


class EventLogReader:
    """The crawl's ``events.jsonl``, read from any position, tolerant of a half-written tail."""

    def __init__(self, crawl_dir: str | Path) -> None:
        self.crawl_dir = Path(crawl_dir)
        self.path = self.crawl_dir / EVENTS_FILE
        self.malformed = 0

    def exists(self) -> bool:
        """Whether the log file is there."""
        return self.path.is_file()

    def size(self) -> int:
        """Current size of the log in bytes (0 if absent)."""
        try:
            return self.path.stat().st_size
        except OSError:
            return 0

    def fingerprint(self) -> str:
        """A digest of the log's first line: it changes when the log is replaced, not appended."""
        try:
            with self.path.open("rb") as f:
                return hashlib.sha256(f.readline()).hexdigest()[:16]
        except OSError:
            return ""

    def read(self, start: LogPosition | None = None) -> Iterator[tuple[PageEvent, LogPosition]]:
        """Page events after ``start``, each with the log position just past it.

        A final line without its newline is still being written and is left for later.
        """
        pos = LogPosition(start.offset, start.seq) if start else LogPosition()
        if not self.exists():
            return
        with self.path.open("rb") as f:
            f.seek(pos.offset)
            for line in f:
                if not line.endswith(b"\n"):
                    break
                pos = LogPosition(pos.offset + len(line), pos.seq + 1)
                text = line.strip()
                if not text:
                    continue
                try:
                    obj = json.loads(text)
                except (json.JSONDecodeError, UnicodeDecodeError):
                    self.malformed += 1
                    continue
                if not isinstance(obj, dict):
                    self.malformed += 1
                    continue
                event = parse_event(obj, pos.seq)
                if event is None:
                    self.malformed += 1
                    continue
                yield event, pos


_KEY_SUFFIX = re.compile(r"^(?P<path>.+?)(?:[#@]|:(?=\d)|\?offset=)(?P<offset>\d+)(?:[:/,]\d+)?$")


class PageStore:
    """Reads stored pages from the crawl's WARC files by ``storageKey``.

    A key is a WARC path relative to the crawl directory, optionally with the
    record's byte offset (``file.warc.gz#1234``, ``file.warc.gz:1234`` or
    ``file.warc.gz:1234:567`` with a length). Without an offset the file is scanned
    once and its records are looked up by target URI (and content hash when a URL
    was stored more than once).
    """

    def __init__(self, crawl_dir: str | Path) -> None:
        self.crawl_dir = Path(crawl_dir)
        self._scans: dict[Path, dict[str, list[int]]] = {}
        self._lock = threading.Lock()

    def _resolve(self, key: str) -> tuple[Path, int | None]:
        candidates: list[tuple[str, int | None]] = [(key, None)]
        m = _KEY_SUFFIX.match(key)
        if m:
            candidates.insert(0, (m.group("path"), int(m.group("offset"))))
        for path_text, offset in candidates:
            path = Path(path_text)
            if not path.is_absolute():
                path = self.crawl_dir / path
            if path.is_file():
                return path, offset
        raise FileNotFoundError(f"no WARC file for storage key {key!r} under {self.crawl_dir}")

    def _offsets(self, path: Path) -> dict[str, list[int]]:
        with self._lock:
            found = self._scans.get(path)
            if found is not None:
                return found
            found = {}
            with path.open("rb") as f:
                it = ArchiveIterator(f)
                for record in it:
                    if record.rec_type in ("response", "resource"):
                        uri = record.rec_headers.get_header("WARC-Target-URI") or ""
                        found.setdefault(uri, []).append(it.get_record_offset())
            self._scans[path] = found
            return found

    @staticmethod
    def _payload(path: Path, offset: int) -> tuple[bytes, str | None, str]:
        with path.open("rb") as f:
            f.seek(offset)
            for record in ArchiveIterator(f):
                if record.rec_type not in ("response", "resource"):
                    continue
                uri = record.rec_headers.get_header("WARC-Target-URI") or ""
                if record.http_headers is not None:
                    ctype = record.http_headers.get_header("Content-Type")
                else:
                    ctype = record.rec_headers.get_header("Content-Type")
                return record.content_stream().read(), ctype, uri
        raise ValueError(f"no response record at offset {offset} of {path}")

    def load(self, event: PageEvent) -> tuple[bytes, str | None]:
        """The stored body and content type of the page an event describes."""
        path, offset = self._resolve(event.storage_key)
        if offset is not None:
            body, ctype, _ = self._payload(path, offset)
            return body, ctype
        offsets = self._offsets(path).get(event.url) or []
        if not offsets:
            index = self._offsets(path)
            if len(index) == 1:  # one page per WARC file
                offsets = next(iter(index.values()))
        if not offsets:
            raise LookupError(f"{event.storage_key} holds no record for {event.url}")
        wanted = event.content_hash.partition(":")[2] if ":" in event.content_hash else ""
        chosen = None
        for off in reversed(offsets):
            body, ctype, _ = self._payload(path, off)
            if chosen is None:
                chosen = (body, ctype)
            if not wanted or len(offsets) == 1:
                break
            if hashlib.sha256(body).hexdigest() == wanted:
                return body, ctype
        assert chosen is not None
        return chosen


def page_from_payload(
    body: bytes, content_type: str | None, url: str, with_links: bool = True
) -> ExtractedPage | None:
    """Extract a stored page, or None for content that is not text."""
    if is_pdf(body, content_type):  # by its type, or its signature when none was sent
        return extract_pdf(body)
    ctype = (content_type or "text/html").split(";")[0].strip().lower()
    if ctype in ("text/html", "application/xhtml+xml", ""):
        return extract_page(decode_html(body, content_type).text, url, with_links)
    if ctype.startswith("text/"):
        text = decode_html(body, content_type).text
        return ExtractedPage(title="", text=" ".join(text.split())[:100_000])
    return None
