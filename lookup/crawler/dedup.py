"""Content deduplication: exact (SHA-256 of the main text) and near (SimHash, MinHash LSH).

Three checks, cheapest first, after every fetch:

1. **Exact**: SHA-256 of the extracted main text, whitespace-normalised. Catches
   mirrors, print views and ``www.`` twins.
2. **SimHash**: a 64-bit fingerprint over word 3-shingles where similar documents
   differ in a few bits. Near-duplicate means Hamming distance ≤ 3 (Manku, Jain and
   Das Sarma, 2007). Lookups use the pigeonhole trick: split the 64 bits into 4
   blocks of 16; two fingerprints within distance 3 agree exactly on at least one
   block, so 4 hash tables keyed by one block each give every candidate.
3. **MinHash LSH** (``datasketch``): an estimate of shingle-set Jaccard similarity,
   banded so that pairs above the threshold collide in some band with high
   probability. The alternative view of "near", robust where SimHash's bit budget
   is tight (short pages, scattered edits).

Only originals are indexed, so every duplicate points at the page it duplicates.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from datasketch import MinHash, MinHashLSH

__all__ = [
    "DuplicateDetector",
    "MINHASH_PERMUTATIONS",
    "SimHashIndex",
    "Verdict",
    "content_hash",
    "hamming",
    "minhash",
    "shingle_hashes",
    "shingles",
    "simhash",
    "simhash_from_hashes",
]

_WORD = re.compile(r"\w+")
#: Shingle width in words.
SHINGLE_WORDS = 3
#: Near-duplicate threshold on SimHash Hamming distance (of 64 bits).
SIMHASH_MAX_DISTANCE = 3
#: Pages with fewer shingles than this are only checked for exact duplicates:
#: a handful of features gives a fingerprint that is mostly noise.
MIN_SHINGLES_FOR_NEAR = 24
MINHASH_PERMUTATIONS = 128
MINHASH_THRESHOLD = 0.8
#: datasketch's 32-bit affine permutations (its default); fixed so saved sketches reload.
MINHASH_SCHEME = "affine32"
_BLOCKS = 4
_BLOCK_BITS = 64 // _BLOCKS
_BIT_SHIFTS = np.arange(63, -1, -1, dtype=np.uint64)  # MSB first, as bytes read


def content_hash(text: str) -> str:
    """``sha256:<hex>`` of the whitespace-normalised main text."""
    norm = " ".join(text.split())
    return "sha256:" + hashlib.sha256(norm.encode("utf-8")).hexdigest()


def shingles(text: str, width: int = SHINGLE_WORDS) -> list[str]:
    """Overlapping runs of ``width`` lowercase words (the page's features, with repeats)."""
    words = _WORD.findall(text.lower())
    if len(words) < width:
        return [" ".join(words)] if words else []
    return [" ".join(words[i : i + width]) for i in range(len(words) - width + 1)]


def _hash64(feature: str) -> bytes:
    return hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()


def shingle_hashes(features: Iterable[str]) -> np.ndarray:
    """64-bit BLAKE2b hashes of the features as a ``uint64`` array."""
    data = b"".join(_hash64(f) for f in features)
    return np.frombuffer(data, dtype=">u8").astype(np.uint64)


def simhash_from_hashes(hashes: np.ndarray) -> int:
    """SimHash of feature hashes, each with weight 1 (repeats count again).

    For each bit i: v[i] = (#features with bit i set) − (#features without); the
    fingerprint's bit i is 1 when v[i] > 0.
    """
    if hashes.size == 0:
        return 0
    bits = (hashes[:, None] >> _BIT_SHIFTS[None, :]) & np.uint64(1)
    ones = bits.sum(axis=0, dtype=np.int64)
    v = 2 * ones - hashes.size
    out = 0
    for bit in v > 0:
        out = (out << 1) | int(bit)
    return out


def simhash(text: str) -> int:
    """The 64-bit SimHash of ``text`` over word 3-shingles."""
    return simhash_from_hashes(shingle_hashes(shingles(text)))


def hamming(a: int, b: int) -> int:
    """Number of differing bits."""
    return (a ^ b).bit_count()


def minhash(features: Iterable[str], num_perm: int = MINHASH_PERMUTATIONS) -> MinHash:
    """A ``datasketch`` MinHash over the distinct features (fixed seed, so comparable)."""
    mh = MinHash(num_perm=num_perm, seed=1, scheme=MINHASH_SCHEME)
    distinct = {f.encode("utf-8") for f in features}
    if distinct:
        mh.update_batch(list(distinct))
    return mh


class SimHashIndex:
    """Fingerprints indexed by 4 × 16-bit blocks; finds every one within distance ≤ 3."""

    def __init__(self, max_distance: int = SIMHASH_MAX_DISTANCE) -> None:
        if not 0 <= max_distance < _BLOCKS:
            raise ValueError(f"4 blocks find distances up to 3, not {max_distance}")
        self.max_distance = max_distance
        self._tables: list[dict[int, set[str]]] = [{} for _ in range(_BLOCKS)]
        self._fingerprints: dict[str, int] = {}

    @staticmethod
    def _blocks(fp: int) -> list[int]:
        mask = (1 << _BLOCK_BITS) - 1
        return [(fp >> (i * _BLOCK_BITS)) & mask for i in range(_BLOCKS)]

    def add(self, key: str, fp: int) -> None:
        """Index ``fp`` under ``key`` (replacing any fingerprint ``key`` had)."""
        self.remove(key)
        self._fingerprints[key] = fp
        for table, block in zip(self._tables, self._blocks(fp), strict=True):
            table.setdefault(block, set()).add(key)

    def remove(self, key: str) -> None:
        fp = self._fingerprints.pop(key, None)
        if fp is None:
            return
        for table, block in zip(self._tables, self._blocks(fp), strict=True):
            bucket = table.get(block)
            if bucket is not None:
                bucket.discard(key)
                if not bucket:
                    del table[block]

    def candidates(self, fp: int) -> set[str]:
        """Keys sharing at least one whole block with ``fp``."""
        found: set[str] = set()
        for table, block in zip(self._tables, self._blocks(fp), strict=True):
            found |= table.get(block, set())
        return found

    def near(self, fp: int) -> list[tuple[int, str]]:
        """``(distance, key)`` of every fingerprint within ``max_distance``, nearest first."""
        out = []
        for key in self.candidates(fp):
            d = hamming(fp, self._fingerprints[key])
            if d <= self.max_distance:
                out.append((d, key))
        out.sort()
        return out

    def __len__(self) -> int:
        return len(self._fingerprints)


@dataclass(frozen=True)
class Verdict:
    """The outcome of checking one page: ``kind`` is None for an original.

    ``kind`` is ``"exact"``, ``"simhash"`` or ``"minhash"``; ``of`` is the key of the
    page it duplicates; ``score`` is the Hamming distance (simhash) or the estimated
    Jaccard similarity (minhash).
    """

    kind: str | None
    of: str | None
    content_hash: str
    simhash: int
    minhash: MinHash | None
    score: float | None = None
    shingle_count: int = 0

    @property
    def near_eligible(self) -> bool:
        """Long enough for near-duplicate checks."""
        return self.shingle_count >= MIN_SHINGLES_FOR_NEAR

    @property
    def is_duplicate(self) -> bool:
        return self.kind is not None


class DuplicateDetector:
    """Exact, SimHash and MinHash-LSH duplicate detection over the originals seen so far."""

    def __init__(
        self,
        *,
        max_distance: int = SIMHASH_MAX_DISTANCE,
        minhash_threshold: float = MINHASH_THRESHOLD,
        num_perm: int = MINHASH_PERMUTATIONS,
        use_minhash: bool = True,
    ) -> None:
        self.num_perm = num_perm
        self.minhash_threshold = minhash_threshold
        self.use_minhash = use_minhash
        self._exact: dict[str, str] = {}
        self._key_hash: dict[str, str] = {}
        self._simhash = SimHashIndex(max_distance)
        self._lsh = MinHashLSH(threshold=minhash_threshold, num_perm=num_perm)
        self._minhashes: dict[str, MinHash] = {}

    def fingerprint(self, text: str) -> Verdict:
        """Hashes of ``text`` (an original's verdict), without consulting the index."""
        feats = shingles(text)
        near_ok = len(feats) >= MIN_SHINGLES_FOR_NEAR
        return Verdict(
            None,
            None,
            content_hash(text),
            simhash_from_hashes(shingle_hashes(feats)),
            minhash(feats, self.num_perm) if (self.use_minhash and near_ok) else None,
            shingle_count=len(feats),
        )

    def check(self, key: str, text: str, *, register: bool = True) -> Verdict:
        """Is ``text`` (the page ``key``) a duplicate of an indexed original?

        An original is indexed under ``key`` when ``register`` is set; a duplicate is
        not, so duplicates always point at an original. Matches against ``key``
        itself (an earlier version of the same page) are ignored.
        """
        mine = self.fingerprint(text)
        verdict = self.lookup(key, mine)
        if register and not verdict.is_duplicate:
            self.register(key, verdict)
        return verdict

    def lookup(self, key: str, mine: Verdict) -> Verdict:
        """The verdict for fingerprints ``mine`` of page ``key`` (nothing is indexed)."""
        fields = (mine.content_hash, mine.simhash, mine.minhash)
        n = mine.shingle_count
        other = self._exact.get(mine.content_hash)
        if other is not None and other != key:
            return Verdict("exact", other, *fields, 0.0, n)
        if mine.near_eligible:
            for dist, other in self._simhash.near(mine.simhash):
                if other != key:
                    return Verdict("simhash", other, *fields, float(dist), n)
            if mine.minhash is not None:
                best: tuple[float, str] | None = None
                for other in self._lsh.query(mine.minhash):
                    if other == key:
                        continue
                    j = mine.minhash.jaccard(self._minhashes[other])
                    if j >= self.minhash_threshold and (best is None or j > best[0]):
                        best = (j, other)
                if best is not None:
                    return Verdict("minhash", best[1], *fields, best[0], n)
        return mine

    def register(self, key: str, verdict: Verdict) -> None:
        """Index ``key`` as an original with the hashes in ``verdict``."""
        self.forget(key)
        self._exact.setdefault(verdict.content_hash, key)
        self._key_hash[key] = verdict.content_hash
        if verdict.near_eligible:  # only pages long enough for near checks
            self._simhash.add(key, verdict.simhash)
        if verdict.minhash is not None:
            self._lsh.insert(key, verdict.minhash)
            self._minhashes[key] = verdict.minhash

    def forget(self, key: str) -> None:
        """Drop ``key`` from every index (its content changed, or it went away)."""
        old = self._key_hash.pop(key, None)
        if old is not None and self._exact.get(old) == key:
            del self._exact[old]
        self._simhash.remove(key)
        if key in self._minhashes:
            self._lsh.remove(key)
            del self._minhashes[key]

    def __len__(self) -> int:
        return len(self._key_hash)


def minhash_from_bytes(data: bytes, num_perm: int = MINHASH_PERMUTATIONS) -> MinHash:
    """Rebuild a MinHash saved with ``minhash_to_bytes``."""
    values = np.frombuffer(data, dtype="<u4").astype(np.uint32)
    return MinHash(num_perm=num_perm, seed=1, hashvalues=values, scheme=MINHASH_SCHEME)


def minhash_to_bytes(mh: MinHash) -> bytes:
    """The MinHash's hash values as bytes (to keep in the crawl store)."""
    return np.asarray(mh.hashvalues, dtype="<u4").tobytes()


def jaccard(a: Sequence[str], b: Sequence[str]) -> float:
    """Exact Jaccard similarity of two feature collections (as sets)."""
    sa, sb = set(a), set(b)
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)
