"""Posting lists: compressed, block-structured, with skip pointers.

Layout of one term's postings (all terms of a segment share one byte buffer):

* postings are ``(doc_id, tf)`` pairs sorted by ``doc_id``;
* each ``doc_id`` is stored as the gap from the previous one (the first as itself), in
  one of two codecs:

  - **packed** (what segments are written with): the list's gaps, then its tfs, each
    at the narrowest byte width (1, 2 or 4) that holds the list's largest value —
    frame-of-reference packing at byte granularity. A list decodes as one typed numpy
    view and a cumulative sum, and block ``b`` starts at a computed offset. It costs
    about a fifth more bytes than varints and decodes several times faster, which is
    the inner loop of every query;
  - **varint** (segment format 1, still read): gap and tf interleaved, every number a
    LEB128 varint (7 bits per byte, high bit = "more bytes follow");

* postings are grouped into blocks of :data:`BLOCK` entries; the **skip table** holds,
  per block, the last ``doc_id`` in it and the block's byte offset. A reader looking
  for doc ``d`` binary-searches the skip table and decodes only the one block that
  can hold ``d`` — which is why intersecting a short list with a long one costs
  about the short one.

For dynamic pruning (:mod:`pruning`) the skip table of a format-3 segment also holds,
per block, the **largest tf** and the **shortest document** in it: BM25 grows with tf
and shrinks with length, so ``score(max tf, min length)`` bounds every posting of the
block for any ``k1``, ``b`` and corpus-wide average length — the bound survives the
statistics changing after the segment was written, which a stored score would not.

Positions live in a second buffer: per posting, ``tf`` position gaps as varints; the
skip table also records where each block's positions start, so a phrase query decodes
the positions of only the blocks that hold its candidate documents.

Encoding and whole-list decoding are vectorised with numpy (this is the write path
of a 50k-document index and the inner loop of every query); :class:`PostingCursor`
is the textbook one-posting-at-a-time reader with ``advance(target)``, used to show
and count what skip pointers save.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

#: Postings per block; one skip entry per block.
BLOCK = 128

_DTYPES: dict[int, np.dtype[Any]] = {1: np.dtype("u1"), 2: np.dtype("<u2"), 4: np.dtype("<u4")}


def varint_sizes(values: np.ndarray) -> np.ndarray:
    """Bytes each non-negative integer takes as a LEB128 varint."""
    v = np.asarray(values, dtype=np.uint64)
    sizes = np.ones(v.shape, dtype=np.int64)
    for k in range(1, 10):
        sizes += v >= np.uint64(1 << (7 * k))
    return sizes


def encode_varints(values: np.ndarray) -> np.ndarray:
    """LEB128-encode non-negative integers (< 2**63) into one ``uint8`` array."""
    v = np.asarray(values, dtype=np.uint64).ravel()
    if v.size == 0:
        return np.zeros(0, dtype=np.uint8)
    sizes = varint_sizes(v)
    starts = np.cumsum(sizes) - sizes
    out = np.empty(int(sizes.sum()), dtype=np.uint8)
    for k in range(int(sizes.max())):
        sel = sizes > k
        chunk = (v[sel] >> np.uint64(7 * k)) & np.uint64(0x7F)
        more = (sizes[sel] > k + 1).astype(np.uint64) << np.uint64(7)
        out[starts[sel] + k] = (chunk | more).astype(np.uint8)
    return out


def decode_varints(buf: np.ndarray) -> np.ndarray:
    """Decode a run of whole LEB128 varints (``uint8`` array) into ``int64`` values."""
    b = np.asarray(buf, dtype=np.uint8)
    if b.size == 0:
        return np.zeros(0, dtype=np.int64)
    last = b < 0x80
    if not last[-1]:
        raise ValueError("truncated varint: the buffer does not end on a final byte")
    ends = np.flatnonzero(last)
    if ends.size == b.size:  # every value fits one byte: the common case for gaps and tfs
        return b.astype(np.int64)
    starts = np.empty_like(ends)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    lens = ends - starts + 1
    longest = int(lens.max())
    if longest > 10:
        raise ValueError("varint longer than 10 bytes")
    payload = (b & 0x7F).astype(np.int64)
    values = payload[starts]
    # add the k-th byte of every value that has one (few values need more than two bytes)
    for k in range(1, longest):
        has = np.flatnonzero(lens > k)
        values[has] |= payload[starts[has] + k] << (7 * k)
    return values


def encode_varint(value: int) -> bytes:
    """One LEB128 varint, byte by byte (the scalar reference for the vectorised codec)."""
    if value < 0:
        raise ValueError("varints here are unsigned")
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def read_varint(buf: bytes | np.ndarray, pos: int) -> tuple[int, int]:
    """Decode the varint at ``buf[pos]``; returns ``(value, next_pos)``."""
    value = 0
    shift = 0
    while True:
        byte = int(buf[pos])
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def segmented_cumsum(values: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Cumulative sums that restart at every group (groups given by their lengths)."""
    total = np.cumsum(values)
    if total.size == 0:
        return total
    starts = np.cumsum(lengths) - lengths
    nonempty = lengths > 0
    base = np.zeros(lengths.shape, dtype=total.dtype)
    base[nonempty] = total[starts[nonempty]] - values[starts[nonempty]]
    return total - np.repeat(base, lengths)


@dataclass
class EncodedPostings:
    """A segment's posting and position buffers plus the per-term and per-block tables."""

    postings: np.ndarray  # uint8
    positions: np.ndarray  # uint8
    df: np.ndarray  # per term: number of postings
    post_off: np.ndarray  # per term: byte offset into ``postings``
    post_len: np.ndarray  # per term: byte length
    skip_start: np.ndarray  # per term: index of its first block in the skip table
    pos_off: np.ndarray  # per term: byte offset into ``positions``
    pos_len: np.ndarray  # per term: byte length
    block_last: np.ndarray  # per block: last doc id in the block
    block_off: np.ndarray  # per block: absolute byte offset into ``postings``
    widths: np.ndarray  # per term: packed byte widths (see :func:`pack_widths`), 0 = varint
    block_pos: np.ndarray  # per block: absolute byte offset of its positions in ``positions``
    block_maxtf: np.ndarray | None = None  # per block: largest tf (None: no lengths given)
    block_mindl: np.ndarray | None = None  # per block: shortest document length


#: The byte widths a packed list may use.
WIDTHS = (1, 2, 4)


def byte_width(largest: np.ndarray) -> np.ndarray:
    """The narrowest of 1, 2, 4 bytes that holds each value (values < 2**32)."""
    v = np.asarray(largest, dtype=np.int64)
    if v.size and (v.min() < 0 or v.max() >= 1 << 32):
        raise ValueError("packed postings hold values from 0 to 2**32 - 1")
    return np.where(v < 1 << 8, 1, np.where(v < 1 << 16, 2, 4)).astype(np.int64)


def pack_widths(gap_width: np.ndarray, tf_width: np.ndarray) -> np.ndarray:
    """One code per term: gap width in the low nibble, tf width in the high one."""
    return (np.asarray(gap_width) | (np.asarray(tf_width) << 4)).astype(np.int64)


def _put_le(out: np.ndarray, at: np.ndarray, values: np.ndarray, width: np.ndarray) -> None:
    """Write ``values`` little-endian into ``out`` at byte offsets ``at``, ``width`` bytes each."""
    v = values.astype(np.uint64)
    for k in range(4):
        sel = width > k
        if not sel.any():
            break
        out[at[sel] + k] = ((v[sel] >> np.uint64(8 * k)) & np.uint64(0xFF)).astype(np.uint8)


def _get_le(buf: np.ndarray, at: np.ndarray, width: np.ndarray) -> np.ndarray:
    """Read little-endian integers of per-value ``width`` bytes at byte offsets ``at``."""
    out = np.zeros(at.size, dtype=np.int64)
    for k in range(4):
        sel = np.flatnonzero(width > k)
        if sel.size == 0:
            break
        out[sel] |= buf[at[sel] + k].astype(np.int64) << (8 * k)
    return out


def encode_postings(
    n_terms: int,
    term_ids: np.ndarray,
    doc_ids: np.ndarray,
    tfs: np.ndarray,
    positions: np.ndarray,
    codec: str = "packed",
    doclen: np.ndarray | None = None,
) -> EncodedPostings:
    """Encode all postings of a segment at once (``codec``: ``packed`` or ``varint``).

    ``term_ids``/``doc_ids``/``tfs`` are parallel arrays sorted by (term, doc);
    ``positions`` holds each posting's ``tf`` positions, ascending, in the same order.
    With ``doclen`` (per document) the skip table also gets each block's largest tf
    and shortest document, the pruning bounds.
    """
    if codec not in ("packed", "varint"):
        raise ValueError("codec must be packed or varint")
    tids = np.asarray(term_ids, dtype=np.int64)
    docs = np.asarray(doc_ids, dtype=np.int64)
    tf = np.asarray(tfs, dtype=np.int64)
    pos = np.asarray(positions, dtype=np.int64)
    n = tids.size
    if n and (np.any(np.diff(tids) < 0) or tf.min() < 1):
        raise ValueError("postings must be sorted by term and have tf >= 1")
    if int(tf.sum()) != pos.size:
        raise ValueError("positions must hold exactly tf entries per posting")
    df = np.bincount(tids, minlength=n_terms).astype(np.int64)
    first = np.cumsum(df) - df
    rank = np.arange(n, dtype=np.int64) - np.repeat(first, df)
    gaps = np.empty(n, dtype=np.int64)
    if n:
        gaps[0] = docs[0]
        gaps[1:] = docs[1:] - docs[:-1]
        gaps[rank == 0] = docs[rank == 0]
        if np.any(gaps[rank > 0] <= 0):
            raise ValueError("doc ids must be strictly increasing within a term")
    if codec == "packed":
        starts_t = first[df > 0]
        gw = np.ones(n_terms, dtype=np.int64)
        tw = np.ones(n_terms, dtype=np.int64)
        if n:
            gw[df > 0] = byte_width(np.maximum.reduceat(gaps, starts_t))
            tw[df > 0] = byte_width(np.maximum.reduceat(tf, starts_t))
        post_len = df * (gw + tw)
        post_off = np.cumsum(post_len) - post_len
        g_w, t_w = gw[tids], tw[tids]
        gap_at = post_off[tids] + rank * g_w
        tf_at = post_off[tids] + df[tids] * g_w + rank * t_w
        packed = np.zeros(int(post_len.sum()), dtype=np.uint8)
        _put_le(packed, gap_at, gaps, g_w)
        _put_le(packed, tf_at, tf, t_w)
        posting_off = gap_at  # a block starts where its first gap is
        widths = pack_widths(gw, tw)
    else:
        pairs = np.empty(2 * n, dtype=np.int64)
        pairs[0::2] = gaps
        pairs[1::2] = tf
        pair_sizes = varint_sizes(pairs)
        posting_sizes = pair_sizes[0::2] + pair_sizes[1::2]
        posting_off = np.cumsum(posting_sizes) - posting_sizes
        post_len = np.bincount(tids, weights=posting_sizes, minlength=n_terms).astype(np.int64)
        post_off = np.cumsum(post_len) - post_len
        packed = encode_varints(pairs)
        widths = np.zeros(n_terms, dtype=np.int64)

    block_starts = np.flatnonzero(rank % BLOCK == 0)
    block_ends = np.empty_like(block_starts)
    block_ends[:-1] = block_starts[1:] - 1
    if block_ends.size:
        block_ends[-1] = n - 1
    nblocks = (df + BLOCK - 1) // BLOCK
    skip_start = np.cumsum(nblocks) - nblocks

    # positions: gap-encoded within each posting
    pos_gaps = pos.copy()
    if pos.size:
        pstart = np.cumsum(tf) - tf
        pos_gaps[1:] = pos[1:] - pos[:-1]
        pos_gaps[pstart] = pos[pstart]
        if np.any(pos_gaps < 0):
            raise ValueError("positions must ascend within a posting")
    pos_sizes = varint_sizes(pos_gaps)
    posting_pos_bytes = np.add.reduceat(pos_sizes, np.cumsum(tf) - tf) if n else np.zeros(0)
    pos_len = np.bincount(tids, weights=posting_pos_bytes, minlength=n_terms).astype(np.int64)
    pos_off = np.cumsum(pos_len) - pos_len

    maxtf = mindl = None
    if doclen is not None:
        lengths = np.asarray(doclen, dtype=np.int64)
        maxtf = np.maximum.reduceat(tf, block_starts) if n else np.zeros(0, np.int64)
        mindl = np.minimum.reduceat(lengths[docs], block_starts) if n else np.zeros(0, np.int64)
    return EncodedPostings(
        postings=packed,
        positions=encode_varints(pos_gaps),
        df=df,
        post_off=post_off,
        post_len=post_len,
        skip_start=skip_start.astype(np.int64),
        pos_off=pos_off,
        pos_len=pos_len,
        block_last=docs[block_ends].astype(np.int64),
        block_off=posting_off[block_starts].astype(np.int64),
        widths=widths,
        block_pos=(np.cumsum(posting_pos_bytes) - posting_pos_bytes)[block_starts].astype(np.int64),
        block_maxtf=maxtf,
        block_mindl=mindl,
    )


def decode_all(
    buf: np.ndarray, df: np.ndarray, post_off: np.ndarray, widths: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """Every list of a segment at once: ``(doc_ids, tfs)`` in (term, doc) order.

    ``widths`` is None (or all 0) for a varint buffer.
    """
    df = np.asarray(df, dtype=np.int64)
    if widths is None or not np.any(widths):
        vals = decode_varints(np.asarray(buf))
        return segmented_cumsum(vals[0::2], df), vals[1::2]
    buf = np.asarray(buf)
    tids = np.repeat(np.arange(df.size, dtype=np.int64), df)
    rank = np.arange(tids.size, dtype=np.int64) - np.repeat(np.cumsum(df) - df, df)
    gw = (np.asarray(widths, dtype=np.int64) & 0xF)[tids]
    tw = (np.asarray(widths, dtype=np.int64) >> 4)[tids]
    base = np.asarray(post_off, dtype=np.int64)[tids]
    gaps = _get_le(buf, base + rank * gw, gw)
    tfs = _get_le(buf, base + df[tids] * gw + rank * tw, tw)
    return segmented_cumsum(gaps, df), tfs


def _distinct_sorted(values: np.ndarray) -> np.ndarray:
    """The distinct values of a sorted array (``np.unique`` without its sort and overhead)."""
    if values.size < 2:
        return values
    first = np.empty(values.size, dtype=bool)
    first[0] = True
    np.not_equal(values[1:], values[:-1], out=first[1:])
    return values[first]


class PostingList:
    """One term's postings in a segment: decode all of it, or only the blocks needed."""

    __slots__ = (
        "buf",
        "df",
        "off",
        "length",
        "block_last",
        "block_off",
        "pos_buf",
        "pos_off",
        "pos_len",
        "widths",
        "block_pos",
        "block_maxtf",
        "block_mindl",
    )

    def __init__(
        self,
        buf: np.ndarray,
        df: int,
        off: int,
        length: int,
        block_last: np.ndarray,
        block_off: np.ndarray,
        pos_buf: np.ndarray | None = None,
        pos_off: int = 0,
        pos_len: int = 0,
        widths: int = 0,
        block_pos: np.ndarray | None = None,
        block_maxtf: np.ndarray | None = None,
        block_mindl: np.ndarray | None = None,
    ) -> None:
        self.buf = buf
        self.df = df
        self.off = off
        self.length = length
        self.block_last = block_last  # this term's slice of the skip table
        self.block_off = block_off
        self.pos_buf = pos_buf
        self.pos_off = pos_off
        self.pos_len = pos_len
        self.widths = widths  # packed gap | tf << 4 byte widths; 0 = varint
        self.block_pos = block_pos  # per block: where its positions start (None: unknown)
        self.block_maxtf = block_maxtf  # per block: largest tf (None: format < 3, no bounds)
        self.block_mindl = block_mindl  # per block: shortest document length

    @property
    def blocks(self) -> int:
        """Number of blocks (= skip entries)."""
        return int(self.block_last.size)

    def _views(self) -> tuple[np.ndarray, np.ndarray]:
        """A packed list's gaps and tfs as typed views of the buffer (no copy)."""
        gw, tw = self.widths & 0xF, self.widths >> 4
        mid = self.off + self.df * gw
        gaps = self.buf[self.off : mid].view(_DTYPES[gw])
        tfs = self.buf[mid : mid + self.df * tw].view(_DTYPES[tw])
        return gaps, tfs

    def decode(self) -> tuple[np.ndarray, np.ndarray]:
        """All ``(doc_ids, tfs)`` of the list."""
        if self.widths:
            gaps, tfs = self._views()
            return np.cumsum(gaps, dtype=np.int64), tfs.astype(np.int64)
        vals = decode_varints(self.buf[self.off : self.off + self.length])
        return np.cumsum(vals[0::2]), vals[1::2]

    def _block_range(self, b: int) -> tuple[int, int]:
        start = int(self.block_off[b])
        end = int(self.block_off[b + 1]) if b + 1 < self.blocks else self.off + self.length
        return start, end

    def decode_blocks(self, blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(doc_ids, tfs)`` of the given blocks only (ascending block numbers)."""
        blocks = np.asarray(blocks, dtype=np.int64)
        if blocks.size == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        if blocks.size == self.blocks:
            return self.decode()
        counts = np.full(blocks.size, BLOCK, dtype=np.int64)
        if blocks[-1] == self.blocks - 1:
            counts[-1] = self.df - BLOCK * (self.blocks - 1)
        bases = np.where(blocks > 0, self.block_last[np.maximum(blocks - 1, 0)], 0)
        if self.widths:
            gaps_all, tfs_all = self._views()
            out_starts = np.cumsum(counts) - counts
            idx = np.repeat(blocks * BLOCK - out_starts, counts) + np.arange(int(counts.sum()))
            gaps = gaps_all[idx].astype(np.int64)
            docs = segmented_cumsum(gaps, counts) + np.repeat(bases, counts)
            return docs, tfs_all[idx].astype(np.int64)
        starts = self.block_off[blocks]
        nxt = blocks + 1
        ends = np.where(
            nxt < self.blocks,
            self.block_off[np.minimum(nxt, self.blocks - 1)],
            self.off + self.length,
        )
        lens = ends - starts
        out_starts = np.cumsum(lens) - lens
        gather = np.repeat(starts - out_starts, lens) + np.arange(int(lens.sum()))
        vals = decode_varints(self.buf[gather])
        gaps, tfs = vals[0::2], vals[1::2]
        docs = segmented_cumsum(gaps, counts) + np.repeat(bases, counts)
        return docs, tfs

    def lookup(self, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
        """Which sorted ``targets`` are in the list, and their tfs, decoding only needed blocks.

        The skip table says which blocks can hold a target; only those are decoded
        (when most blocks are needed anyway, the whole list is decoded in one pass).
        Returns ``(mask over targets, tfs of the found ones, postings decoded)``.
        """
        targets = np.asarray(targets, dtype=np.int64)
        if targets.size == 0 or self.df == 0:
            return np.zeros(targets.size, dtype=bool), np.zeros(0, dtype=np.int64), 0
        blk = np.searchsorted(self.block_last, targets)  # first block whose last doc >= target
        blk = blk[blk < self.blocks]
        if blk.size * 2 > self.blocks:
            docs, tfs = self.decode()
        else:
            needed = _distinct_sorted(blk)
            docs, tfs = self.decode_blocks(needed)
        if docs.size == 0:
            return np.zeros(targets.size, dtype=bool), np.zeros(0, dtype=np.int64), 0
        idx = np.searchsorted(docs, targets)
        idx_c = np.minimum(idx, docs.size - 1)
        found = (idx < docs.size) & (docs[idx_c] == targets)
        return found, tfs[idx_c[found]], int(docs.size)

    def positions(self) -> list[np.ndarray]:
        """Every posting's positions, in posting order."""
        if self.pos_buf is None:
            raise ValueError("this posting list was opened without positions")
        _, tfs = self.decode()
        vals = decode_varints(self.pos_buf[self.pos_off : self.pos_off + self.pos_len])
        absolute = segmented_cumsum(vals, tfs)
        return np.split(absolute, np.cumsum(tfs)[:-1])

    def positions_for(self, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Positions of the sorted ``targets`` that are in the list, decoding few blocks.

        Returns ``(found mask over targets, owner, positions)``: every position of every
        found target, ``owner`` being the target's index. Only the blocks that can hold
        a target are decoded (all of the list when the skip table has no position
        offsets, as in format-1 segments).
        """
        targets = np.asarray(targets, dtype=np.int64)
        none = np.zeros(0, dtype=np.int64)
        if targets.size == 0 or self.df == 0 or self.pos_buf is None:
            return np.zeros(targets.size, dtype=bool), none, none
        if self.block_pos is None:
            docs, tfs = self.decode()
            vals = decode_varints(self.pos_buf[self.pos_off : self.pos_off + self.pos_len])
        else:
            blk = np.searchsorted(self.block_last, targets)
            blk = blk[blk < self.blocks]
            if blk.size == 0:
                return np.zeros(targets.size, dtype=bool), none, none
            needed = _distinct_sorted(blk)
            docs, tfs = self.decode_blocks(needed)
            starts = self.block_pos[needed]
            nxt = needed + 1
            ends = np.where(
                nxt < self.blocks,
                self.block_pos[np.minimum(nxt, self.blocks - 1)],
                self.pos_off + self.pos_len,
            )
            lens = ends - starts
            out_starts = np.cumsum(lens) - lens
            gather = np.repeat(starts - out_starts, lens) + np.arange(int(lens.sum()))
            vals = decode_varints(self.pos_buf[gather])
        absolute = segmented_cumsum(vals, tfs)
        idx = np.searchsorted(docs, targets)
        idx_c = np.minimum(idx, docs.size - 1)
        found = (idx < docs.size) & (docs[idx_c] == targets)
        postings = idx_c[found]  # the found targets' posting numbers among the decoded ones
        first = (np.cumsum(tfs) - tfs)[postings]
        counts = tfs[postings]
        owner = np.repeat(np.flatnonzero(found), counts)
        out_starts = np.cumsum(counts) - counts
        pick = np.repeat(first - out_starts, counts) + np.arange(int(counts.sum()))
        return found, owner, absolute[pick]

    def cursor(self) -> PostingCursor:
        """A one-at-a-time reader over this list."""
        return PostingCursor(self)


class PostingCursor:
    """Doc-at-a-time iteration with ``advance(target)`` that jumps blocks via the skip table.

    ``decoded`` counts postings actually decoded, the cost that skip pointers cut.
    """

    END = 1 << 62

    def __init__(self, plist: PostingList) -> None:
        self.plist = plist
        self.block = -1
        self.docs: list[int] = []
        self.tfs: list[int] = []
        self.i = 0
        self.decoded = 0
        self.doc = -1
        self._load(0)

    def _load(self, b: int) -> None:
        pl = self.plist
        if b >= pl.blocks:
            self.doc = self.END
            return
        doc = int(pl.block_last[b - 1]) if b > 0 else 0
        docs: list[int] = []
        tfs: list[int] = []
        if pl.widths:  # packed: the block's gaps and tfs sit at computed offsets
            gaps_all, tfs_all = pl._views()
            lo, hi = b * BLOCK, min(pl.df, (b + 1) * BLOCK)
            for gap in gaps_all[lo:hi].tolist():
                doc += gap  # block 0 starts from 0, so its first gap is the doc id itself
                docs.append(doc)
            tfs = tfs_all[lo:hi].tolist()
        else:  # varints, read one number at a time
            pos, end = pl._block_range(b)
            while pos < end:
                gap, pos = read_varint(pl.buf, pos)
                tf, pos = read_varint(pl.buf, pos)
                doc += gap
                docs.append(doc)
                tfs.append(tf)
        self.block, self.docs, self.tfs, self.i = b, docs, tfs, 0
        self.decoded += len(docs)
        self.doc = docs[0]

    @property
    def tf(self) -> int:
        """Term frequency at the current posting."""
        return self.tfs[self.i]

    def next(self) -> int:
        """Move to the next posting; returns its doc id (``END`` when exhausted)."""
        if self.doc == self.END:
            return self.END
        self.i += 1
        if self.i >= len(self.docs):
            self._load(self.block + 1)
        else:
            self.doc = self.docs[self.i]
        return self.doc

    def advance(self, target: int, use_skips: bool = True) -> int:
        """Move to the first posting with doc id >= ``target``; returns its doc id."""
        if self.doc >= target:
            return self.doc
        pl = self.plist
        if use_skips and int(pl.block_last[self.block]) < target:
            b = int(np.searchsorted(pl.block_last, target))
            self._load(b)
            if self.doc == self.END:
                return self.END
        while self.doc < target:
            self.next()
        return self.doc


def intersect_cursors(lists: list[PostingList], use_skips: bool = True) -> tuple[list[int], int]:
    """Textbook doc-at-a-time AND of posting lists, rarest first.

    Returns the matching doc ids and how many postings were decoded to find them
    (with skips ≈ the shortest list × a block; without, every list in full).
    """
    if not lists:
        return [], 0
    cursors = [pl.cursor() for pl in sorted(lists, key=lambda p: p.df)]
    lead, others = cursors[0], cursors[1:]
    out: list[int] = []
    doc = lead.doc
    while doc != PostingCursor.END:
        match = True
        for c in others:
            d = c.advance(doc, use_skips)
            if d != doc:
                match = False
                if d == PostingCursor.END:
                    return out, sum(c.decoded for c in cursors)
                doc = lead.advance(d, use_skips)
                break
        if match:
            out.append(doc)
            doc = lead.next()
    return out, sum(c.decoded for c in cursors)
