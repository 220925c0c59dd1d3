"""WARC records read back with warcio; the event log survives a torn last line."""

from __future__ import annotations

from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from lookup.crawler.output import EventLogWriter, WarcStore, read_events, read_record


def test_warc_response_and_revisit_round_trip(tmp_path: Path) -> None:
    warc = WarcStore(tmp_path)
    body = "<html><main>héllo</main></html>".encode()
    k1 = warc.write_response(
        "http://a.test/", 200,
        [("Content-Type", "text/html"), ("Content-Encoding", "gzip"), ("Content-Length", "9")],
        body, fetched_at=1_790_000_000.0, address="127.0.0.2",
    )  # fmt: skip
    k2 = warc.write_revisit(
        "http://b.test/", refers_to="http://a.test/", refers_to_date="2026-09-21T00:00:00Z",
        digest="sha256:abc", fetched_at=1_790_000_001.0,
    )  # fmt: skip
    warc.close()
    kind, headers, got = read_record(tmp_path, k1)
    assert kind == "response" and got == body
    assert headers["Content-Length"] == str(len(body)) and "Content-Encoding" not in headers
    assert read_record(tmp_path, k2)[0] == "revisit"
    with open(tmp_path / k1.split("#")[0], "rb") as f:
        records = [
            (r.rec_type, r.rec_headers.get_header("WARC-Target-URI")) for r in ArchiveIterator(f)
        ]
    assert records == [
        ("warcinfo", None),
        ("response", "http://a.test/"),
        ("revisit", "http://b.test/"),
    ]
    # A second run writes a new file, never after a possibly torn record.
    assert WarcStore(tmp_path).name != warc.name


def _event(url: str) -> dict[str, object]:
    """A removal event by the schema (``lookup/kit/crawlevents.py``)."""
    return {"type": "PageRemoved", "url": url, "urlHash": "ab12", "httpStatus": 410,
            "fetchedAt": "2026-10-09T08:15:22Z", "reason": "gone"}  # fmt: skip


def test_event_log_drops_a_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = EventLogWriter(path)
    log.append(_event("http://a.test/"))
    log.close()
    with open(path, "ab") as f:
        f.write(b'{"type": "PageFet')  # killed mid-write
    log = EventLogWriter(path)
    log.append(_event("http://b.test/"))
    log.close()
    assert [e["url"] for e in read_events(path)] == ["http://a.test/", "http://b.test/"]
