"""Immutable on-disk index segments: the unit the write path produces and readers map.

A segment is a directory written once (to a temporary name, then renamed) and never
modified. It holds:

* the **term dictionary** — sorted terms (``terms.txt``) and, per term, its document
  frequency, where its postings, skip entries and positions are, and its packed byte
  widths (``termtab.npy``);
* **postings** with tf (``postings.bin``, packed; varints in format 1), their **skip
  table** (``skip_last.npy``, ``skip_off.npy``) and **positions** (``positions.bin``)
  — see :mod:`postings`;
* per-document arrays: length in terms, crawl time, ingest sequence number, a 64-bit
  key of the URL and the URLs it links to (for in-link counts);
* **stored fields** (url, title, text, crawledAt …), one JSON record per doc,
  compressed with LZ4 against a dictionary of the segment's first records
  (``stored_dict.bin``): records of a kilobyte are too small to compress well alone,
  and LZ4 unpacks one in about a microsecond — several times faster than zlib, at a
  smaller size here — which matters because every result on a page reads one;
* a **forward index** for snippets (``fwd_prints.bin``, ``fwd_starts.bin``,
  ``fwd_lengths.bin``, ``fwd_off.npy``): per word of the text's scanned prefix, a
  one-byte fingerprint of its term, where it starts and how long it is — so the read
  path makes a snippet without re-analysing the text (see :mod:`snippets`).

Deletions never touch a segment: they are tombstone files beside it, named in the
index manifest. :func:`merge_segments` writes a new segment from live documents only.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import zlib
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lz4.block
import numpy as np
import orjson

from lookup.kit.integrity import checksum_bytes, checksum_file
from lookup.search import manifest
from lookup.search.analysis import Analyzed
from lookup.search.docfields import (
    COLUMNS,
    DEFAULT_TYPE,
    UNDETERMINED,
    Column,
    ColumnBuilder,
    DocFields,
    columns_of,
    host_of,
)
from lookup.search.events import iso_time
from lookup.search.extract import comparable_url
from lookup.search.postings import (
    BLOCK,
    PostingList,
    decode_all,
    decode_varints,
    encode_postings,
    segmented_cumsum,
)
from lookup.search.snippets import forward_entries

#: Format written now: 2 added packed postings, the snippet forward index and LZ4 stored
#: fields; 3 added each block's largest tf and shortest document to the skip table
#: (``skip_maxtf.npy``, ``skip_mindl.npy``), the bounds of dynamic pruning; 4 added the
#: per-document columns of :mod:`.docfields` (``columns.npy``, ``columns.json``: site,
#: language, content type) and their field terms (``lang:``, ``type:``, ``filetype:``,
#: ``inurl:``).
FORMAT = 4
#: Formats this reader opens (format 1: zlib stored fields, snippets made at query time;
#: formats 1 and 2 have no block bounds, so their queries are scored exhaustively; before
#: format 4 the columns are read from the stored records when first asked for — the site
#: from the URL, language ``und`` — and the filters' field terms are missing until the
#: index is rebuilt).
READABLE_FORMATS = (1, 2, 3, 4)
#: Bytes of a segment's first stored records that become its compression dictionary
#: (LZ4 looks back at most 64 KiB).
STORED_DICT_BYTES = 65_536


class StoredPacker:
    """Compresses stored-field records with LZ4 against a dictionary sampled from them.

    Records are kept until :meth:`finish`, which builds the dictionary from records
    spread evenly over the segment (deterministic, and representative of all of it —
    a segment's first records may be a different kind of page from the rest).
    """

    def __init__(self) -> None:
        self._raw: list[bytes] = []
        self._bytes = 0

    def add(self, raw: bytes) -> None:
        """Append one record (uncompressed JSON bytes)."""
        self._raw.append(raw)
        self._bytes += len(raw)

    def finish(self) -> tuple[bytes, list[bytes]]:
        """The dictionary and every record's compressed bytes, in order."""
        raw = self._raw
        if not raw:
            return b"", []
        stride = max(1, self._bytes // STORED_DICT_BYTES)
        dictionary = b"".join(raw[::stride])[-STORED_DICT_BYTES:]
        blobs = [
            lz4.block.compress(r, mode="high_compression", compression=9, dict=dictionary)
            for r in raw
        ]
        self._raw = []
        return dictionary, blobs


@dataclass
class Forward:
    """A segment's snippet forward index: per doc a run of words (fingerprint, start, length)."""

    prints: np.ndarray  # uint8 per word: its term's fingerprint, 0 for no term
    starts: np.ndarray  # uint16 per word: its first character in the text
    lengths: np.ndarray  # uint8 per word: its length in characters, 0 if over 255
    off: np.ndarray  # int64 per doc + 1: the doc's first word


def url_key(url: str) -> int:
    """64-bit key of a URL after normalisation (links and pages meet on it)."""
    return normal_url_key(comparable_url(url))


def normal_url_key(normal_url: str) -> int:
    """64-bit key of an already normalised URL."""
    digest = hashlib.blake2b(normal_url.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little") & ((1 << 63) - 1)


@dataclass
class DocRecord:
    """Everything the index keeps about one page."""

    url: str
    url_hash: str
    content_hash: str
    title: str
    text: str
    crawled_at: float
    seq: int
    links: list[str] = field(default_factory=list)  # normalised outgoing URLs
    lang: str = UNDETERMINED  # ISO 639-1 code (lookup.search.docfields)
    content_type: str = DEFAULT_TYPE  # media type without parameters

    @property
    def fields(self) -> DocFields:
        """The page's columns (site, language, media type)."""
        return DocFields(self.lang, self.content_type, host_of(self.url))

    def stored(self) -> dict[str, Any]:
        """The stored-fields record (with the fetch time already formatted for results)."""
        record: dict[str, Any] = {
            "url": self.url,
            "urlHash": self.url_hash,
            "contentHash": self.content_hash,
            "title": self.title,
            "text": self.text,
            "crawledAt": self.crawled_at,
            "seq": self.seq,
            "lang": self.lang,
            "contentType": self.content_type,
        }
        try:
            record["crawledIso"] = iso_time(self.crawled_at)
        except (ValueError, OverflowError, OSError):  # a time no calendar shows: format later
            pass
        return record


@dataclass
class SegmentInfo:
    """What the manifest records about a written segment."""

    name: str
    docs: int
    terms: int
    postings: int
    bytes: int
    #: ``crc32:…`` of the segment's ``meta.json``, which lists every other file's checksum
    checksum: str | None = None


def _save(path: Path, arr: np.ndarray) -> None:
    np.save(path, np.ascontiguousarray(arr), allow_pickle=False)


def _write_atomic_dir(final: Path, fill) -> None:  # type: ignore[no-untyped-def]
    tmp = final.with_name(final.name + f".tmp-{os.getpid()}")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    fill(tmp)
    for f in tmp.iterdir():
        with f.open("rb") as fh:
            manifest.sync(fh.fileno())
    os.rename(tmp, final)


def _dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.iterdir() if f.is_file())


def write_segment(
    path: Path,
    terms: list[str],
    term_ids: np.ndarray,
    doc_ids: np.ndarray,
    tfs: np.ndarray,
    positions: np.ndarray,
    doclen: np.ndarray,
    crawled: np.ndarray,
    seq: np.ndarray,
    urlkey: np.ndarray,
    link_off: np.ndarray,
    link_targets: np.ndarray,
    keys: list[list[str]],
    stored: tuple[bytes, list[bytes]],
    forward: Forward,
    doc_columns: tuple[np.ndarray, dict[str, list[str]]],
) -> SegmentInfo:
    """Write one immutable segment directory from sorted (term, doc) postings."""
    if forward.off.size != len(doclen) + 1:
        raise ValueError("the forward index needs one entry per document")
    if len(doc_columns[0]) != len(doclen):
        raise ValueError("the columns need one row per document")
    enc = encode_postings(len(terms), term_ids, doc_ids, tfs, positions, doclen=doclen)
    assert enc.block_maxtf is not None and enc.block_mindl is not None
    block_maxtf, block_mindl = enc.block_maxtf, enc.block_mindl

    def fill(tmp: Path) -> None:
        (tmp / "postings.bin").write_bytes(enc.postings.tobytes())
        (tmp / "positions.bin").write_bytes(enc.positions.tobytes())
        (tmp / "terms.txt").write_text("\n".join(terms), encoding="utf-8")
        columns = [
            enc.df,
            enc.post_off,
            enc.post_len,
            enc.skip_start,
            enc.pos_off,
            enc.pos_len,
            enc.widths,
        ]
        table = np.stack(columns, axis=1) if terms else np.zeros((0, 7), dtype=np.int64)
        _save(tmp / "termtab.npy", table.astype(np.int64))
        _save(tmp / "skip_last.npy", enc.block_last.astype(np.int64))
        _save(tmp / "skip_off.npy", enc.block_off.astype(np.int64))
        _save(tmp / "skip_pos.npy", enc.block_pos.astype(np.int64))
        _save(tmp / "skip_maxtf.npy", block_maxtf.astype(np.int64))
        _save(tmp / "skip_mindl.npy", block_mindl.astype(np.int64))
        _save(tmp / "doclen.npy", np.asarray(doclen, dtype=np.int32))
        _save(tmp / "crawled.npy", np.asarray(crawled, dtype=np.float64))
        _save(tmp / "seq.npy", np.asarray(seq, dtype=np.int64))
        _save(tmp / "urlkey.npy", np.asarray(urlkey, dtype=np.int64))
        _save(tmp / "link_off.npy", np.asarray(link_off, dtype=np.int64))
        _save(tmp / "link_targets.npy", np.asarray(link_targets, dtype=np.int64))
        (tmp / "keys.json").write_text(json.dumps(keys), encoding="utf-8")
        stored_dict, stored_blobs = stored
        (tmp / "stored_dict.bin").write_bytes(stored_dict)
        offs = np.zeros(len(stored_blobs) + 1, dtype=np.int64)
        with (tmp / "stored.bin").open("wb") as f:
            for i, blob in enumerate(stored_blobs):
                f.write(blob)
                offs[i + 1] = offs[i] + len(blob)
        _save(tmp / "stored_off.npy", offs)
        (tmp / "fwd_prints.bin").write_bytes(np.ascontiguousarray(forward.prints, "u1").tobytes())
        (tmp / "fwd_starts.bin").write_bytes(np.ascontiguousarray(forward.starts, "<u2").tobytes())
        (tmp / "fwd_lengths.bin").write_bytes(np.ascontiguousarray(forward.lengths, "u1").tobytes())
        _save(tmp / "fwd_off.npy", np.asarray(forward.off, dtype=np.int64))
        _save(tmp / "columns.npy", np.asarray(doc_columns[0], dtype=np.int32))
        (tmp / "columns.json").write_text(json.dumps(doc_columns[1]), encoding="utf-8")
        meta: dict[str, object] = {
            "format": FORMAT,
            "docs": int(len(doclen)),
            "terms": len(terms),
            "postings": int(len(doc_ids)),
            "totalLength": int(np.asarray(doclen, dtype=np.int64).sum()),
            "block": BLOCK,
        }
        # every file's size and checksum, checked when a reader opens the segment
        meta["files"] = {
            f.name: [f.stat().st_size, checksum_file(f)] for f in sorted(tmp.iterdir())
        }
        (tmp / "meta.json").write_text(json.dumps(meta), encoding="utf-8")

    _write_atomic_dir(path, fill)
    return SegmentInfo(
        path.name,
        int(len(doclen)),
        len(terms),
        int(len(doc_ids)),
        _dir_bytes(path),
        checksum_file(path / "meta.json"),
    )


#: Segment files whose checksum matched, as (path, inode, size, mtime_ns, checksum): segments
#: are immutable, so each is read through once per process, not on every version swap.
_VERIFIED: set[tuple[str, int, int, int, str]] = set()


def verify_segment(path: Path, meta_checksum: str | None = None) -> dict[str, Any]:
    """Check a segment directory against the checksums its writer recorded and return its
    ``meta.json``: ``meta_checksum`` (the manifest's) covers ``meta.json``, which covers every
    other file. ValueError or OSError naming the file that does not match; a segment written
    before checksums were recorded is read as it is."""
    meta_path = path / "meta.json"
    raw = meta_path.read_bytes()
    if meta_checksum and checksum_bytes(raw) != meta_checksum:
        raise SegmentFileError(meta_path, "checksum mismatch")
    try:
        meta = json.loads(raw.decode("utf-8"))
    except ValueError as exc:
        raise SegmentFileError(meta_path, f"not valid JSON: {exc}") from None
    for name, (size, checksum) in (meta.get("files") or {}).items():
        f = path / name
        try:
            st = f.stat()
        except FileNotFoundError:
            raise SegmentFileError(f, "missing") from None
        key = (str(f), st.st_ino, st.st_size, st.st_mtime_ns, checksum)
        if key in _VERIFIED:
            continue
        if st.st_size != size:
            raise SegmentFileError(f, f"{st.st_size:,} bytes, {size:,} written")
        if checksum_file(f) != checksum:
            raise SegmentFileError(f, "checksum mismatch")
        _VERIFIED.add(key)
    return meta


class SegmentFileError(ValueError):
    """A file of a segment is missing, truncated or does not match its checksum."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


class SegmentWriter:
    """Accumulates analysed documents in memory and writes them as one new segment."""

    def __init__(self) -> None:
        self.vocab: dict[str, int] = {}
        self.p_term = array("q")
        self.p_doc = array("q")
        self.p_tf = array("q")
        self.p_pos = array("q")  # every posting's positions, postings in insertion order
        self.doclen = array("q")
        self.crawled = array("d")
        self.seq = array("q")
        self.urlkey = array("q")
        self.link_off = array("q", [0])
        self.link_targets = array("q")
        self.keys: list[list[str]] = []
        self.stored = StoredPacker()
        self.fwd_prints = array("B")
        self.fwd_starts = array("H")
        self.fwd_lengths = array("B")
        self.fwd_off = array("q", [0])
        self.columns = ColumnBuilder()

    def __len__(self) -> int:
        return len(self.doclen)

    def add(self, doc: DocRecord, analyzed: Analyzed) -> int:
        """Add one document; returns its doc id within the segment."""
        doc_id = len(self.doclen)
        by_term: dict[str, list[int]] = {}
        for term, pos in analyzed.positioned():  # stacked terms too, outside the length
            by_term.setdefault(term, []).append(pos)
        for term in {t for t, _ in analyzed.stacked}:  # a word's term may be stacked too
            by_term[term].sort()
        vocab = self.vocab
        for term, plist in by_term.items():
            tid = vocab.get(term)
            if tid is None:
                tid = vocab[term] = len(vocab)
            self.p_term.append(tid)
            self.p_doc.append(doc_id)
            self.p_tf.append(len(plist))
            self.p_pos.extend(plist)
        for key in analyzed.fields:  # field terms: tf 1 at position 0, outside the length
            if key in by_term:
                continue
            tid = vocab.get(key)
            if tid is None:
                tid = vocab[key] = len(vocab)
            self.p_term.append(tid)
            self.p_doc.append(doc_id)
            self.p_tf.append(1)
            self.p_pos.append(0)
        self.doclen.append(len(analyzed.terms))
        self.crawled.append(doc.crawled_at)
        self.seq.append(doc.seq)
        own = url_key(doc.url)
        self.urlkey.append(own)
        targets = sorted({normal_url_key(u) for u in doc.links} - {own})
        self.link_targets.extend(targets)
        self.link_off.append(len(self.link_targets))
        self.keys.append([doc.url_hash, doc.content_hash])
        self.stored.add(json.dumps(doc.stored()).encode("utf-8"))
        prints, starts, lengths = forward_entries(doc.text)
        self.fwd_prints.frombytes(prints.tobytes())
        self.fwd_starts.frombytes(starts.tobytes())
        self.fwd_lengths.frombytes(lengths.tobytes())
        self.fwd_off.append(len(self.fwd_prints))
        self.columns.add(doc.fields)
        return doc_id

    def write(self, path: Path) -> SegmentInfo:
        """Write everything added so far as the segment ``path``."""
        terms = sorted(self.vocab)
        remap = np.empty(len(terms), dtype=np.int64)
        for new_id, term in enumerate(terms):
            remap[self.vocab[term]] = new_id
        tids = (
            remap[np.frombuffer(self.p_term, dtype=np.int64)]
            if self.p_term
            else np.zeros(0, dtype=np.int64)
        )
        docs = np.frombuffer(self.p_doc, dtype=np.int64) if self.p_doc else np.zeros(0, np.int64)
        tfs = np.frombuffer(self.p_tf, dtype=np.int64) if self.p_tf else np.zeros(0, np.int64)
        order = np.argsort(tids, kind="stable")  # docs were added in order: (term, doc) sort
        flat = np.frombuffer(self.p_pos, dtype=np.int64) if self.p_pos else np.zeros(0, np.int64)
        positions = _gather_positions(flat, tfs, order)
        forward = Forward(
            _array(self.fwd_prints, np.uint8),
            _array(self.fwd_starts, np.uint16),
            _array(self.fwd_lengths, np.uint8),
            np.frombuffer(self.fwd_off, dtype=np.int64),
        )
        return write_segment(
            path,
            terms,
            tids[order],
            docs[order],
            tfs[order],
            positions,
            np.frombuffer(self.doclen, dtype=np.int64) if self.doclen else np.zeros(0, np.int64),
            np.frombuffer(self.crawled, dtype=np.float64) if self.crawled else np.zeros(0),
            np.frombuffer(self.seq, dtype=np.int64) if self.seq else np.zeros(0, np.int64),
            np.frombuffer(self.urlkey, dtype=np.int64) if self.urlkey else np.zeros(0, np.int64),
            np.frombuffer(self.link_off, dtype=np.int64),
            np.frombuffer(self.link_targets, dtype=np.int64)
            if self.link_targets
            else np.zeros(0, np.int64),
            self.keys,
            self.stored.finish(),
            forward,
            self.columns.finish(),
        )


def _array(values: array, dtype: type) -> np.ndarray:
    """A numpy view of an ``array.array`` (empty arrays have no buffer to view)."""
    return np.frombuffer(values, dtype=dtype) if len(values) else np.zeros(0, dtype=dtype)


def _gather_positions(flat: np.ndarray, tfs: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Reorder the per-posting position runs of ``flat`` into posting ``order``."""
    if flat.size == 0:
        return flat
    starts = np.cumsum(tfs) - tfs
    lens = tfs[order]
    out_starts = np.cumsum(lens) - lens
    idx = np.repeat(starts[order] - out_starts, lens) + np.arange(int(lens.sum()))
    return flat[idx]


class SegmentReader:
    """Read-only view of a segment; arrays are memory-mapped, so readers never lock."""

    def __init__(self, path: Path, meta_checksum: str | None = None) -> None:
        """Open a segment after checking its files (:func:`verify_segment`)."""
        self.path = Path(path)
        self.name = self.path.name
        meta = verify_segment(self.path, meta_checksum)
        if meta.get("format") not in READABLE_FORMATS:
            raise ValueError(f"{self.path}: unsupported segment format {meta.get('format')}")
        self.meta = meta
        self.n_docs = int(meta["docs"])
        text = (self.path / "terms.txt").read_text(encoding="utf-8")
        self.terms: list[str] = text.split("\n") if text else []
        self.term_index = {t: i for i, t in enumerate(self.terms)}

        def load(name: str, mmap: bool = True) -> np.ndarray:
            return np.load(self.path / name, mmap_mode="r" if mmap else None, allow_pickle=False)

        self.termtab = load("termtab.npy", mmap=False)
        self.skip_last = load("skip_last.npy", mmap=False)
        self.skip_off = load("skip_off.npy", mmap=False)
        # format 1 has no per-block position offsets: phrase checks decode whole lists
        self.skip_pos = load("skip_pos.npy", mmap=False) if meta["format"] >= 2 else None
        # formats 1 and 2 have no block bounds: their queries are scored exhaustively
        self.skip_maxtf: np.ndarray | None = None
        self.skip_mindl: np.ndarray | None = None
        if meta["format"] >= 3:
            self.skip_maxtf = load("skip_maxtf.npy", mmap=False)
            self.skip_mindl = load("skip_mindl.npy", mmap=False).astype(np.float64)
        self.postings_buf = _map_bytes(self.path / "postings.bin")
        self.positions_buf = _map_bytes(self.path / "positions.bin")
        self.doclen = load("doclen.npy", mmap=False).astype(np.float64)
        self.crawled = load("crawled.npy", mmap=False)
        self.seq = load("seq.npy", mmap=False)
        self.urlkey = load("urlkey.npy", mmap=False)
        self.link_off = load("link_off.npy", mmap=False)
        self.link_targets = load("link_targets.npy", mmap=False)
        keys = json.loads((self.path / "keys.json").read_text(encoding="utf-8"))
        self.url_hashes: list[str] = [k[0] for k in keys]
        self.content_hashes: list[str] = [k[1] for k in keys]
        self.stored_off = load("stored_off.npy", mmap=False)
        self._stored = _map_bytes(self.path / "stored.bin")
        dict_path = self.path / "stored_dict.bin"
        # format 1 compressed each record alone with zlib
        self.stored_dict: bytes | None = dict_path.read_bytes() if meta["format"] >= 2 else None
        self.total_length = int(meta["totalLength"])
        self.forward: Forward | None = None
        self._fwd_views: tuple[memoryview, memoryview, memoryview] | None = None
        if meta["format"] >= 2:
            self.forward = Forward(
                _map_bytes(self.path / "fwd_prints.bin"),
                _map_bytes(self.path / "fwd_starts.bin").view("<u2"),
                _map_bytes(self.path / "fwd_lengths.bin"),
                load("fwd_off.npy", mmap=False),
            )
        self._columns: dict[str, Column] | None = None
        if meta["format"] >= 4:
            codes = load("columns.npy", mmap=False)
            values = json.loads((self.path / "columns.json").read_text(encoding="utf-8"))
            self._columns = {
                name: Column(codes[:, i], list(values[name])) for i, name in enumerate(COLUMNS)
            }

    def column(self, name: str) -> Column:
        """A per-document column (``host``, ``lang``, ``type``; :mod:`.docfields`).

        Format 4 stores them; an older segment's are read from its stored records the
        first time one is asked for (the site from the URL, language ``und``).
        """
        if self._columns is None:
            records = [DocFields.from_stored(self.stored(d)) for d in range(self.n_docs)]
            self._columns = columns_of(records)
        return self._columns[name]

    def fields_of(self, doc: int) -> DocFields:
        """One document's site, language and media type."""
        return DocFields(
            self.column("lang").value(doc), self.column("type").value(doc),
            self.column("host").value(doc),
        )  # fmt: skip

    def forward_of(self, doc: int) -> tuple[bytes, memoryview, bytes] | None:
        """The snippet forward index of ``doc``: fingerprints, starts, lengths.

        None for a format-1 segment, which has no forward index.
        """
        fwd = self.forward
        if fwd is None:
            return None
        if self._fwd_views is None:
            # numpy's stubs declare the buffer protocol only for Python >= 3.12
            self._fwd_views = (
                memoryview(fwd.prints),  # type: ignore[arg-type]
                memoryview(fwd.starts),  # type: ignore[arg-type]
                memoryview(fwd.lengths),  # type: ignore[arg-type]
            )
        prints, starts, lengths = self._fwd_views
        a, b = int(fwd.off[doc]), int(fwd.off[doc + 1])
        return prints[a:b].tobytes(), starts[a:b], lengths[a:b].tobytes()

    def df(self, term: str) -> int:
        """Documents in this segment containing ``term`` (deleted ones included)."""
        row = self.term_index.get(term)
        return 0 if row is None else int(self.termtab[row, 0])

    def postings(self, term: str) -> PostingList | None:
        """The posting list of ``term``, or None if no document here has it."""
        row = self.term_index.get(term)
        if row is None:
            return None
        df, off, length, skip_start, pos_off, pos_len, *widths = self.termtab[row].tolist()
        nb = (df + BLOCK - 1) // BLOCK
        return PostingList(
            self.postings_buf,
            df,
            off,
            length,
            self.skip_last[skip_start : skip_start + nb],
            self.skip_off[skip_start : skip_start + nb],
            self.positions_buf,
            pos_off,
            pos_len,
            widths[0] if widths else 0,  # format 1 has no widths column: varints
            None if self.skip_pos is None else self.skip_pos[skip_start : skip_start + nb],
            None if self.skip_maxtf is None else self.skip_maxtf[skip_start : skip_start + nb],
            None if self.skip_mindl is None else self.skip_mindl[skip_start : skip_start + nb],
        )

    def stored_blob(self, doc: int) -> bytes:
        """The compressed stored-fields record of ``doc``."""
        return bytes(self._stored[int(self.stored_off[doc]) : int(self.stored_off[doc + 1])])

    def stored_raw(self, doc: int) -> bytes:
        """The stored-fields record of ``doc`` as uncompressed JSON bytes."""
        blob = self._stored[int(self.stored_off[doc]) : int(self.stored_off[doc + 1])]
        if self.stored_dict is None:
            # numpy's stubs declare the buffer protocol only for Python >= 3.12
            return zlib.decompress(blob)  # type: ignore[arg-type]
        return lz4.block.decompress(blob, dict=self.stored_dict)

    def stored(self, doc: int) -> dict[str, Any]:
        """The stored fields (url, title, text, crawledAt, …) of ``doc``."""
        raw = self.stored_raw(doc)
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:  # e.g. NaN, which json writes and orjson refuses
            return json.loads(raw)

    def links_of(self, doc: int) -> np.ndarray:
        """URL keys that ``doc`` links to."""
        return self.link_targets[int(self.link_off[doc]) : int(self.link_off[doc + 1])]

    def live_links(self, live: np.ndarray) -> np.ndarray:
        """URL keys the documents where ``live`` is set link to (the in-link counts' input)."""
        starts = self.link_off[:-1][live]
        lens = (self.link_off[1:] - self.link_off[:-1])[live]
        if lens.sum() == 0:
            return np.zeros(0, dtype=np.int64)
        out_starts = np.cumsum(lens) - lens
        rows = np.repeat(starts - out_starts, lens) + np.arange(int(lens.sum()))
        return self.link_targets[rows]

    def deleted_df(self, live: np.ndarray) -> dict[str, int]:
        """Per term, how many of this segment's documents not ``live`` contain it."""
        tids, docs, _, _ = self.all_postings(with_positions=False)
        dead = ~live[docs]
        counts = np.bincount(tids[dead], minlength=len(self.terms))
        return {self.terms[i]: int(counts[i]) for i in np.flatnonzero(counts)}

    def all_postings(
        self, with_positions: bool = True
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every posting at once: ``(term_ids, doc_ids, tfs, positions)`` sorted by term, doc.

        ``positions`` is empty unless ``with_positions``.
        """
        df = self.termtab[:, 0].astype(np.int64) if len(self.terms) else np.zeros(0, np.int64)
        widths = self.termtab[:, 6] if self.termtab.shape[1] > 6 else None
        docs, tfs = decode_all(self.postings_buf, df, self.termtab[:, 1], widths)
        tids = np.repeat(np.arange(df.size, dtype=np.int64), df)
        if not with_positions:
            return tids, docs, tfs, np.zeros(0, dtype=np.int64)
        pos = segmented_cumsum(decode_varints(np.asarray(self.positions_buf)), tfs)
        return tids, docs, tfs, pos


def _map_bytes(path: Path) -> np.ndarray:
    if path.stat().st_size == 0:
        return np.zeros(0, dtype=np.uint8)
    # a plain ndarray view of the mapping: slicing a np.memmap subclass costs microseconds
    return np.asarray(np.memmap(path, dtype=np.uint8, mode="r"))


def merge_segments(inputs: list[tuple[SegmentReader, np.ndarray]], path: Path) -> SegmentInfo:
    """Merge segments into one new segment, keeping only documents whose live flag is set.

    Postings are merged directly (decoded, renumbered, re-encoded), not rebuilt from
    text; stored records are recompressed against the new segment's dictionary and the
    forward index is copied byte for byte (built from the stored text for a format-1
    input).
    """
    vocab_set: set[str] = set()
    for reader, _ in inputs:
        vocab_set.update(reader.terms)
    parts_t, parts_d, parts_tf, parts_pos = [], [], [], []
    doclen, crawled, seq, urlkey, link_off, targets = [], [], [], [], [0], []
    keys: list[list[str]] = []
    packer = StoredPacker()
    fwd_prints: list[np.ndarray] = []
    fwd_starts: list[np.ndarray] = []
    fwd_lengths: list[np.ndarray] = []
    fwd_off = [0]
    columns = ColumnBuilder()
    merged_terms = sorted(vocab_set)
    merged_index = {t: i for i, t in enumerate(merged_terms)}
    base = 0
    for reader, live in inputs:
        live = np.asarray(live, dtype=bool)
        remap = np.full(reader.n_docs, -1, dtype=np.int64)
        kept_docs = np.flatnonzero(live)
        remap[kept_docs] = base + np.arange(kept_docs.size)
        tids, docs, tfs, pos = reader.all_postings()
        keep = live[docs] if docs.size else np.zeros(0, dtype=bool)
        term_map = np.array([merged_index[t] for t in reader.terms], dtype=np.int64)
        parts_t.append(term_map[tids[keep]] if tids.size else tids)
        parts_d.append(remap[docs[keep]])
        parts_tf.append(tfs[keep])
        parts_pos.append(pos[np.repeat(keep, tfs)])
        fwd = reader.forward
        for kept_doc in kept_docs:
            d = int(kept_doc)
            doclen.append(int(reader.doclen[d]))
            crawled.append(float(reader.crawled[d]))
            seq.append(int(reader.seq[d]))
            urlkey.append(int(reader.urlkey[d]))
            t = reader.links_of(d)
            targets.append(t)
            link_off.append(link_off[-1] + t.size)
            keys.append([reader.url_hashes[d], reader.content_hashes[d]])
            packer.add(reader.stored_raw(d))
            if fwd is not None:
                a, b = int(fwd.off[d]), int(fwd.off[d + 1])
                prints, starts, lengths = fwd.prints[a:b], fwd.starts[a:b], fwd.lengths[a:b]
            else:
                prints, starts, lengths = forward_entries(reader.stored(d)["text"])
            fwd_prints.append(prints)
            fwd_starts.append(starts)
            fwd_lengths.append(lengths)
            fwd_off.append(fwd_off[-1] + prints.size)
            columns.add(reader.fields_of(d))
        base += kept_docs.size
    tids = np.concatenate(parts_t) if parts_t else np.zeros(0, np.int64)
    docs = np.concatenate(parts_d) if parts_d else np.zeros(0, np.int64)
    tfs = np.concatenate(parts_tf) if parts_tf else np.zeros(0, np.int64)
    flat = np.concatenate(parts_pos) if parts_pos else np.zeros(0, np.int64)
    # drop terms whose every document was deleted
    present = np.unique(tids)
    compact = np.full(len(merged_terms), -1, dtype=np.int64)
    compact[present] = np.arange(present.size)
    terms = [merged_terms[i] for i in present]
    tids = compact[tids]
    order = np.lexsort((docs, tids))
    positions = _gather_positions(flat, tfs, order)
    forward = Forward(
        np.concatenate(fwd_prints) if fwd_prints else np.zeros(0, np.uint8),
        np.concatenate(fwd_starts) if fwd_starts else np.zeros(0, np.uint16),
        np.concatenate(fwd_lengths) if fwd_lengths else np.zeros(0, np.uint8),
        np.asarray(fwd_off, dtype=np.int64),
    )
    return write_segment(
        path,
        terms,
        tids[order],
        docs[order],
        tfs[order],
        positions,
        np.asarray(doclen, dtype=np.int64),
        np.asarray(crawled, dtype=np.float64),
        np.asarray(seq, dtype=np.int64),
        np.asarray(urlkey, dtype=np.int64),
        np.asarray(link_off, dtype=np.int64),
        np.concatenate(targets) if targets else np.zeros(0, np.int64),
        keys,
        packer.finish(),
        forward,
        columns.finish(),
    )
