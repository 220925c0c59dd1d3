"""Crawl output: raw pages in WARC files (``warcio``) and ``PageFetched`` events.

- ``DIR/warc/crawl-NNNNN.warc.gz`` — one file per crawler run (a resumed crawl
  starts a new file, so a record torn by a kill never sits before a good one).
  Originals and near-duplicates are ``response`` records; an exact duplicate is a
  ``revisit`` record (WARC's identical-payload-digest profile) pointing at the
  original, so the same content is never stored twice. A page's ``storageKey`` is
  ``warc/<file>#<offset>``; :func:`read_record` reads it back. Each file starts with a
  ``warcinfo`` record (software, user agent, robots policy); each response is followed by
  the ``request`` record that asked for it (``WARC-Concurrent-To``); a 304 to a
  conditional recrawl is a ``revisit`` with the server-not-modified profile; robots.txt
  answers are archived as responses too (the Heritrix and StormCrawler layout).
- ``DIR/events.jsonl`` — one ``PageFetched`` event per new or changed page, written
  with a single ``write`` call per line; ``(urlHash, contentHash)`` is its
  idempotency key, so a page fetched again after a crash repeats harmlessly.
"""

from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from lookup.kit.crawlevents import SERVER_NOT_MODIFIED, check_event

__all__ = ["EventLogWriter", "SentRequest", "WarcStore", "read_record"]

_REASONS = {200: "OK", 301: "Moved Permanently", 302: "Found", 304: "Not Modified"}


@dataclass(frozen=True)
class SentRequest:
    """The HTTP request a response answered, as it went on the wire (for the request record)."""

    target: str  # path and query
    headers: list[tuple[str, str]]
    method: str = "GET"


def iso(ts: float) -> str:
    """``2026-10-09T08:15:22Z`` for a wall-clock timestamp."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class WarcStore:
    """Appends WARC records to this run's file under ``DIR/warc``."""

    def __init__(self, out_dir: Path, key_prefix: str = "", agent: str = "") -> None:
        """``key_prefix``: where ``out_dir`` is, relative to the directory the storage keys
        are read from (a fleet worker's ``WORKER/`` under the fleet's ``OUT``); ``agent``
        goes into the file's ``warcinfo`` record."""
        self.key_prefix = key_prefix
        self.dir = out_dir / "warc"
        self.dir.mkdir(parents=True, exist_ok=True)
        n = 1 + max(
            (int(p.name.split("-")[1].split(".")[0]) for p in self.dir.glob("crawl-*.warc.gz")),
            default=0,
        )
        self.name = f"crawl-{n:05d}.warc.gz"
        self._file = open(self.dir / self.name, "ab")  # noqa: SIM115 - closed in close()
        self._writer = WARCWriter(self._file, gzip=True)
        self.records = 0
        info = {
            "software": "Lookup Workbench crawler",
            "format": "WARC File Format 1.0",
            "robots": "obey (RFC 9309; unreachable or unparseable files fail closed)",
        }
        if agent:
            info["http-header-user-agent"] = agent
        self._write(self._writer.create_warcinfo_record(self.name, info))

    def _key(self, offset: int) -> str:
        return f"{self.key_prefix}warc/{self.name}#{offset}"

    def write_response(
        self,
        url: str,
        status: int,
        headers: list[tuple[str, str]],
        body: bytes,
        *,
        fetched_at: float,
        address: str = "",
        request: SentRequest | None = None,
    ) -> str:
        """Store one HTTP response (and the request that asked for it); its storage key."""
        # The body is stored decoded, so drop the headers that described its encoding.
        kept = [
            (k, v)
            for k, v in headers
            if k.lower() not in ("content-encoding", "transfer-encoding", "content-length")
        ]
        kept.append(("Content-Length", str(len(body))))
        http_headers = StatusAndHeaders(
            f"{status} {_REASONS.get(status, 'Response')}", kept, protocol="HTTP/1.1"
        )
        warc_headers = {"WARC-Date": iso(fetched_at)}
        if address:
            warc_headers["WARC-IP-Address"] = address
        record = self._writer.create_warc_record(
            url,
            "response",
            payload=io.BytesIO(body),
            http_headers=http_headers,
            warc_headers_dict=warc_headers,
        )
        key = self._write(record)
        if request is not None:
            self._write_request(url, request, record, warc_headers)
        return key

    def _write_request(
        self, url: str, request: SentRequest, response: Any, warc_headers: dict[str, str]
    ) -> None:
        http_headers = StatusAndHeaders(
            f"{request.method} {request.target} HTTP/1.1",
            request.headers,
            protocol="HTTP/1.1",
            is_http_request=True,
        )
        record = self._writer.create_warc_record(
            url, "request", http_headers=http_headers, warc_headers_dict=dict(warc_headers)
        )
        record.rec_headers.add_header(
            "WARC-Concurrent-To", response.rec_headers.get_header("WARC-Record-ID")
        )
        self._write(record)

    def write_not_modified(
        self,
        url: str,
        headers: list[tuple[str, str]],
        *,
        refers_to_date: str | None,
        fetched_at: float,
        address: str = "",
        request: SentRequest | None = None,
    ) -> str:
        """Store a 304 to a conditional recrawl: a revisit of this URL's last stored copy
        with the server-not-modified profile (no payload)."""
        http_headers = StatusAndHeaders("304 Not Modified", headers, protocol="HTTP/1.1")
        warc_headers = {"WARC-Date": iso(fetched_at)}
        if address:
            warc_headers["WARC-IP-Address"] = address
        record = self._writer.create_warc_record(
            url, "revisit", http_headers=http_headers, warc_headers_dict=dict(warc_headers)
        )
        record.rec_headers.add_header("WARC-Profile", SERVER_NOT_MODIFIED)
        record.rec_headers.add_header("WARC-Refers-To-Target-URI", url)
        if refers_to_date:
            record.rec_headers.add_header("WARC-Refers-To-Date", refers_to_date)
        key = self._write(record)
        if request is not None:
            self._write_request(url, request, record, warc_headers)
        return key

    def write_revisit(
        self, url: str, *, refers_to: str, refers_to_date: str, digest: str, fetched_at: float
    ) -> str:
        """Store an exact duplicate as a revisit of ``refers_to`` (no payload)."""
        record = self._writer.create_revisit_record(
            url, digest=digest, refers_to_uri=refers_to, refers_to_date=refers_to_date
        )
        record.rec_headers.replace_header("WARC-Date", iso(fetched_at))
        return self._write(record)

    def write_resource(self, url: str, body: bytes, content_type: str, *, fetched_at: float) -> str:
        """Store content the crawler made from a response (a rendered page's DOM) as a
        ``resource`` record; its storage key."""
        record = self._writer.create_warc_record(
            url, "resource", payload=io.BytesIO(body), warc_content_type=content_type,
            warc_headers_dict={"WARC-Date": iso(fetched_at)},
        )  # fmt: skip
        return self._write(record)

    def _write(self, record: Any) -> str:
        offset = self._file.tell()
        self._writer.write_record(record)
        self._file.flush()
        self.records += 1
        return self._key(offset)

    def close(self) -> None:
        self._file.close()


def read_record(out_dir: Path | str, storage_key: str) -> tuple[str, dict[str, str], bytes]:
    """``(record type, HTTP headers, body)`` of the record at ``storage_key``."""
    rel, _, offset = storage_key.partition("#")
    path = Path(out_dir) / rel
    with open(path, "rb") as f:
        f.seek(int(offset))
        for record in ArchiveIterator(f):
            headers = dict(record.http_headers.headers) if record.http_headers else {}
            return record.rec_type, headers, record.content_stream().read()
    raise KeyError(storage_key)


class EventLogWriter:
    """``events.jsonl``: append-only, one JSON object per line, one ``write`` per line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._repair()
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.count = 0

    def _repair(self) -> None:
        """Drop a partial last line left by a killed writer."""
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            cut = data.rfind(b"\n") + 1
            with open(self.path, "r+b") as f:
                f.truncate(cut)

    def append(self, event: dict[str, Any]) -> None:
        """Write one event; one off the schema (:mod:`lookup.kit.crawlevents`) is refused."""
        check_event(event)
        line = (json.dumps(event, separators=(",", ":")) + "\n").encode("utf-8")
        os.write(self._fd, line)
        self.count += 1

    def close(self) -> None:
        os.close(self._fd)


def read_events(path: Path | str) -> list[dict[str, Any]]:
    """Every event in an ``events.jsonl`` file."""
    p = Path(path)
    if not p.exists():
        return []
    return [json.loads(line) for line in p.read_text("utf-8").splitlines() if line.strip()]
