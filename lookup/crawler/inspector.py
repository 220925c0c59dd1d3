"""The dedup inspector: what a crawl found to be duplicated, and how alike two pages are.

- :func:`duplicate_clusters` groups every page the crawler marked as a duplicate
  with the original it points at (an original and all its copies, with the method
  that caught each: ``exact``, ``simhash`` or ``minhash``).
- :func:`page_text` reads a fetched page back from the crawl's WARC files and
  extracts the main text the crawler hashed (an exact duplicate is stored as a
  ``revisit`` record, so its text is its original's).
- :func:`soft_404_pages` lists the pages that answered 200 OK but meant "not
  found", with how the crawler saw it, and :func:`host_probes` what each host
  answered for the URL that cannot exist (the page soft 404s are compared with).
- :func:`compare_texts` measures a pair the three ways the crawler can:
  SimHash Hamming distance, exact Jaccard similarity of the word-shingle sets and
  the MinHash estimate of that Jaccard — and :func:`word_diff` lines the two texts
  up word by word (``difflib``) so the differences can be highlighted.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

from lookup.crawler.dedup import (
    SIMHASH_MAX_DISTANCE,
    content_hash,
    hamming,
    jaccard,
    minhash,
    shingles,
    simhash,
)
from lookup.crawler.output import read_record
from lookup.crawler.parse import parse_html, parse_pdf
from lookup.crawler.state import CrawlReader, crawl_state_url, open_crawl_reader
from lookup.kit.htmlcharset import decode_html
from lookup.kit.pdftext import is_pdf

__all__ = [
    "ClusterMember",
    "DiffSegment",
    "DuplicateCluster",
    "HostProbe",
    "PageText",
    "PairComparison",
    "Soft404Page",
    "compare_texts",
    "duplicate_clusters",
    "fetched_pages",
    "host_probes",
    "page_text",
    "soft_404_pages",
    "word_diff",
]


@dataclass(frozen=True)
class ClusterMember:
    """One page of a cluster: the original (``kind`` = ``original``) or a duplicate of it."""

    url: str
    host: str
    kind: str  # original | exact | simhash | minhash
    score: float | None  # Hamming distance (simhash), estimated Jaccard (minhash)
    storage_key: str | None


@dataclass(frozen=True)
class DuplicateCluster:
    """An original page and every page found to duplicate it."""

    original: ClusterMember
    duplicates: list[ClusterMember]

    @property
    def members(self) -> list[ClusterMember]:
        return [self.original, *self.duplicates]

    @property
    def kinds(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for d in self.duplicates:
            out[d.kind] = out.get(d.kind, 0) + 1
        return out

    @property
    def exact_only(self) -> bool:
        return all(d.kind == "exact" for d in self.duplicates)


def _reader(out_dir: Path | str) -> CrawlReader:
    """The crawl state of ``out_dir``, read-only (``FileNotFoundError`` when there is none)."""
    return open_crawl_reader(crawl_state_url(out_dir))


def duplicate_clusters(out_dir: Path | str) -> list[DuplicateCluster]:
    """Every duplicate the crawl recorded, grouped under its original; biggest first."""
    with _reader(out_dir) as reader:
        groups: dict[str, list[ClusterMember]] = {}
        for r in reader.duplicates():
            assert r.dup_of is not None and r.dup_kind is not None
            groups.setdefault(r.dup_of, []).append(
                ClusterMember(r.url, r.host, r.dup_kind, r.dup_score, r.storage_key)
            )
        clusters = []
        for original_url, members in groups.items():
            row = reader.url(original_url)
            host = row.host if row is not None else ""
            key = row.storage_key if row is not None else None
            original = ClusterMember(original_url, host, "original", None, key)
            clusters.append(DuplicateCluster(original, members))
    clusters.sort(key=lambda c: (-len(c.duplicates), c.original.url))
    return clusters


def fetched_pages(out_dir: Path | str) -> list[str]:
    """URLs of every page whose copy is in the crawl's WARC files, in crawl order."""
    with _reader(out_dir) as reader:
        return reader.stored_pages()


@dataclass(frozen=True)
class Soft404Page:
    """A page that answered 200 OK but meant "not found", and how that was seen."""

    url: str
    host: str
    method: str  # probe (it matched the host's answer to a URL that cannot exist) | wording
    reason: str
    title: str
    storage_key: str | None


def soft_404_pages(out_dir: Path | str) -> list[Soft404Page]:
    """Every soft 404 the crawl found, in crawl order."""
    with _reader(out_dir) as reader:
        rows = reader.urls_with_outcome("soft-404")
    return [
        Soft404Page(
            r.url,
            r.host,
            "probe" if "cannot exist" in (r.reason or "") else "wording",
            r.reason or "",
            r.title or "",
            r.storage_key,
        )
        for r in rows
    ]


@dataclass(frozen=True)
class HostProbe:
    """What one host answered for the URL that cannot exist."""

    host: str
    url: str
    status: int | None  # None: no answer
    title: str
    text: str

    @property
    def soft(self) -> bool:
        """The host answers any unknown URL with a 200 page (its soft-404 page)."""
        return self.status == 200 and bool(self.text.strip())


def host_probes(out_dir: Path | str) -> dict[str, HostProbe]:
    """Each probed host's answer to its probe, by host (hosts not probed are absent)."""
    with _reader(out_dir) as reader:
        rows = reader.host_probes()
    return {
        r.host: HostProbe(
            r.host,
            r.probe_url or "",
            r.probe_status or None,
            r.probe_title or "",
            r.probe_text or "",
        )  # fmt: skip
        for r in rows
    }


@dataclass(frozen=True)
class PageText:
    """A fetched page's main text, as the crawler hashed it."""

    url: str
    title: str
    text: str
    storage_key: str
    record_type: str  # response | revisit (then the text is the original's)
    stored_as: str | None = None  # the URL whose record holds the text, for a revisit

    @property
    def words(self) -> int:
        return len(self.text.split())


def _decode(body: bytes, headers: dict[str, str]) -> str:
    ctype = next((v for k, v in headers.items() if k.lower() == "content-type"), None)
    return decode_html(body, ctype).text


def page_text(out_dir: Path | str, url: str) -> PageText:
    """Read ``url``'s stored copy back and extract its main text.

    Raises ``KeyError`` when the crawl holds no copy of that URL.
    """
    with _reader(out_dir) as reader:
        row = reader.url(url)
        if row is None or not row.storage_key:
            raise KeyError(f"the crawl holds no copy of {url}")
        key = row.storage_key
        rtype, headers, body = read_record(out_dir, key)
        stored_as = None
        source, hops = row, 0
        while rtype == "revisit":  # an exact duplicate: the payload is its original's
            # (a representative promoted by rel=canonical may itself be a revisit: follow it)
            original = reader.url(source.dup_of) if source.dup_of and hops < 5 else None
            if original is None or not original.storage_key:
                raise KeyError(f"the original of {url} is not in the crawl")
            rtype2, headers, body = read_record(out_dir, original.storage_key)
            source, hops, stored_as = original, hops + 1, original.url
            if rtype2 != "revisit":
                break
    ctype = next((v for k, v in headers.items() if k.lower() == "content-type"), None)
    parsed = parse_pdf(body) if is_pdf(body, ctype) else parse_html(_decode(body, headers))
    return PageText(url, parsed.title or row.title or "", parsed.text, key, rtype, stored_as)


@dataclass(frozen=True)
class DiffSegment:
    """A run of words on one side of a diff.

    ``op`` is ``equal`` (on both sides), ``delete`` (only on the left), ``insert``
    (only on the right) or ``replace`` (this side's words where the other side has
    different ones). ``collapsed`` marks a long unchanged run shown as a count.
    """

    op: str
    words: tuple[str, ...]
    collapsed: bool = False

    @property
    def text(self) -> str:
        return " ".join(self.words)


#: Above this many words on a side between the common head and tail, difflib's
#: "popular word" heuristic is switched on: exact alignment is quadratic on the
#: repetitive pages the web is full of, the heuristic is not.
EXACT_DIFF_WORDS = 4000


def _opcodes(a: list[str], b: list[str]) -> list[tuple[str, int, int, int, int]]:
    """difflib opcodes for ``a`` → ``b``, after taking off the common head and tail."""
    n = min(len(a), len(b))
    head = 0
    while head < n and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < n - head and a[len(a) - 1 - tail] == b[len(b) - 1 - tail]:
        tail += 1
    mid_a, mid_b = a[head : len(a) - tail], b[head : len(b) - tail]
    out: list[tuple[str, int, int, int, int]] = []
    if head:
        out.append(("equal", 0, head, 0, head))
    if mid_a or mid_b:
        junk = max(len(mid_a), len(mid_b)) > EXACT_DIFF_WORDS
        matcher = difflib.SequenceMatcher(None, mid_a, mid_b, autojunk=junk)
        for op, i1, i2, j1, j2 in matcher.get_opcodes():
            out.append((op, i1 + head, i2 + head, j1 + head, j2 + head))
    if tail:
        out.append(("equal", len(a) - tail, len(a), len(b) - tail, len(b)))
    # Adjacent equal runs (head next to an equal opcode) read as one.
    merged: list[tuple[str, int, int, int, int]] = []
    for run in out:
        if merged and run[0] == "equal" == merged[-1][0]:
            prev = merged.pop()
            run = ("equal", prev[1], run[2], prev[3], run[4])
        merged.append(run)
    return merged


def word_diff(
    left: str, right: str, context: int = 12
) -> tuple[list[DiffSegment], list[DiffSegment]]:
    """The two texts aligned word by word: the segments of each side, in order.

    Unchanged runs longer than ``2 × context + 1`` words keep ``context`` words on
    either side and mark the middle ``collapsed`` (its words are still there, so
    each side's segments always add up to its whole text).
    """
    a, b = left.split(), right.split()
    opcodes = _opcodes(a, b)
    out_a: list[DiffSegment] = []
    out_b: list[DiffSegment] = []
    for n, (op, i1, i2, j1, j2) in enumerate(opcodes):
        if op == "equal":
            words = tuple(a[i1:i2])
            head = context if n > 0 else 0
            tail = context if n < len(opcodes) - 1 else 0
            if len(words) > head + tail + 1:
                parts = [
                    DiffSegment("equal", words[:head]),
                    DiffSegment("equal", words[head : len(words) - tail], collapsed=True),
                    DiffSegment("equal", words[len(words) - tail :]),
                ]
                parts = [p for p in parts if p.words]
            else:
                parts = [DiffSegment("equal", words)]
            out_a += parts
            out_b += parts
        elif op == "delete":
            out_a.append(DiffSegment("delete", tuple(a[i1:i2])))
        elif op == "insert":
            out_b.append(DiffSegment("insert", tuple(b[j1:j2])))
        else:
            out_a.append(DiffSegment("replace", tuple(a[i1:i2])))
            out_b.append(DiffSegment("replace", tuple(b[j1:j2])))
    return out_a, out_b


@dataclass(frozen=True)
class PairComparison:
    """How alike two texts are, measured the three ways the crawler can."""

    identical: bool  # same SHA-256 of the normalised text (an exact duplicate)
    simhash_left: int
    simhash_right: int
    hamming: int  # of 64 bits
    jaccard: float  # exact, over distinct word 3-shingles
    minhash_jaccard: float  # datasketch's estimate of it (128 permutations)
    shingles_left: int
    shingles_right: int
    words_changed_left: int
    words_changed_right: int
    left: list[DiffSegment]
    right: list[DiffSegment]

    @property
    def simhash_near(self) -> bool:
        """Within the crawler's near-duplicate distance (≤ 3 bits)."""
        return self.hamming <= SIMHASH_MAX_DISTANCE


def compare_texts(left: str, right: str, context: int = 12) -> PairComparison:
    """Measure two main texts: SimHash distance, shingle Jaccard, MinHash estimate, diff."""
    sl, sr = shingles(left), shingles(right)
    fl, fr = simhash(left), simhash(right)
    seg_l, seg_r = word_diff(left, right, context)
    return PairComparison(
        identical=content_hash(left) == content_hash(right),
        simhash_left=fl,
        simhash_right=fr,
        hamming=hamming(fl, fr),
        jaccard=jaccard(sl, sr),
        minhash_jaccard=(
            float(minhash(sl).jaccard(minhash(sr))) if sl and sr else float(not sl and not sr)
        ),
        shingles_left=len(set(sl)),
        shingles_right=len(set(sr)),
        words_changed_left=sum(len(s.words) for s in seg_l if s.op != "equal"),
        words_changed_right=sum(len(s.words) for s in seg_r if s.op != "equal"),
        left=seg_l,
        right=seg_r,
    )
