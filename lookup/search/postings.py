"""Posting lists: compressed, block-structured, with skip pointers.

Layout of one term's postings (all terms of a segment share one byte buffer):

* postings are ``(doc_id, tf)`` pairs sorted by ``doc_id``;
* each ``doc_id`` is stored as the gap from the previous one (the first as itself),
  interleaved with its ``tf``, every number as a LEB128 varint (7 bits per byte,
  high bit = "more bytes follow");
* postings are grouped into blocks of :data:`BLOCK` entries; the **skip table** holds,
  per block, the last ``doc_id`` in it and the block's byte offset. A reader looking
  for doc ``d`` binary-searches the skip table and decodes only the one block that
  can hold ``d`` — which is why intersecting a short list with a long one costs
  about the short one.

Positions live in a second buffer: per posting, ``tf`` position gaps as varints.

Encoding and whole-list decoding are vectorised with numpy (this is the write path
of a 50k-document index and the inner loop of every query); :class:`PostingCursor`
is the textbook one-posting-at-a-time reader with ``advance(target)``, used to show
and count what skip pointers save.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Postings per block; one skip entry per block.
BLOCK = 128

_SHIFTS = np.arange(0, 70, 7, dtype=np.uint64)


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
    ends = np.flatnonzero(last)
    if ends.size == 0 or ends[-1] != b.size - 1:
        raise ValueError("truncated varint: the buffer does not end on a final byte")
    starts = np.empty_like(ends)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    if ends.size == b.size:  # every value fits one byte: the common case for gaps and tfs
        return b.astype(np.int64)
    value_of_byte = np.repeat(np.arange(ends.size), ends - starts + 1)
    shift = np.arange(b.size) - starts[value_of_byte]
    if shift.max() > 9:
        raise ValueError("varint longer than 10 bytes")
    parts = (b & 0x7F).astype(np.uint64) << _SHIFTS[shift]
    return np.add.reduceat(parts, starts).astype(np.int64)


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


def encode_postings(
    n_terms: int,
    term_ids: np.ndarray,
    doc_ids: np.ndarray,
    tfs: np.ndarray,
    positions: np.ndarray,
) -> EncodedPostings:
    """Encode all postings of a segment at once.

    ``term_ids``/``doc_ids``/``tfs`` are parallel arrays sorted by (term, doc);
    ``positions`` holds each posting's ``tf`` positions, ascending, in the same order.
    """
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
    pairs = np.empty(2 * n, dtype=np.int64)
    pairs[0::2] = gaps
    pairs[1::2] = tf
    pair_sizes = varint_sizes(pairs)
    posting_sizes = pair_sizes[0::2] + pair_sizes[1::2]
    posting_off = np.cumsum(posting_sizes) - posting_sizes
    post_len = np.bincount(tids, weights=posting_sizes, minlength=n_terms).astype(np.int64)
    post_off = np.cumsum(post_len) - post_len

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

    return EncodedPostings(
        postings=encode_varints(pairs),
        positions=encode_varints(pos_gaps),
        df=df,
        post_off=post_off,
        post_len=post_len,
        skip_start=skip_start.astype(np.int64),
        pos_off=pos_off,
        pos_len=pos_len,
        block_last=docs[block_ends].astype(np.int64),
        block_off=posting_off[block_starts].astype(np.int64),
    )


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

    @property
    def blocks(self) -> int:
        """Number of blocks (= skip entries)."""
        return int(self.block_last.size)

    def decode(self) -> tuple[np.ndarray, np.ndarray]:
        """All ``(doc_ids, tfs)`` of the list."""
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
        counts = np.full(blocks.size, BLOCK, dtype=np.int64)
        if blocks[-1] == self.blocks - 1:
            counts[-1] = self.df - BLOCK * (self.blocks - 1)
        bases = np.where(blocks > 0, self.block_last[np.maximum(blocks - 1, 0)], 0)
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
            needed = blk[np.r_[True, blk[1:] != blk[:-1]]] if blk.size else blk  # sorted: unique
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
        start, end = pl._block_range(b)
        doc = int(pl.block_last[b - 1]) if b > 0 else 0
        docs: list[int] = []
        tfs: list[int] = []
        pos = start
        while pos < end:
            gap, pos = read_varint(pl.buf, pos)
            tf, pos = read_varint(pl.buf, pos)
            doc += gap  # block 0 starts from 0, so its first gap is the doc id itself
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
