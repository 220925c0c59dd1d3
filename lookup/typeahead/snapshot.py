"""Write path, steps 5-6: the binary snapshot, its loader, its validation and its store.

A snapshot is one market's trie and string table in one immutable file:

    b"LKTRIE01" | u32 format | u32 header length | header JSON | payload sections

The header names the market, the version, the sections (offset, size, type) and a
BLAKE2b checksum of the payload. Sections are little-endian arrays aligned to eight
bytes, so loading is an ``mmap`` plus a ``memoryview`` per section: no parsing, no
copying, no pickled objects, and the operating system shares the pages between
processes. Two text sections (edge labels, suggestion strings) are decoded once into
Python strings so that comparisons and slices run at C speed, and the most popular
tenth of the suggestions is also kept as separate strings (most answers are there).

Before anything serves a snapshot, :func:`validate` compares it with the previous one:
structure and checksum sound, size within a tolerance, probe prefixes still giving
sensible answers, nothing from the blocklist (or private-looking) present. A snapshot
that fails is refused and the old one keeps serving.

Snapshots live behind :class:`lookup.kit.snapshots.SnapshotStore`; the embedded one is
:class:`TrieSnapshotStore` (a directory per market, ``open_snapshot_store(url)``), and
:func:`publish_validated` is how a build gets a file into any store.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import re
import struct
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, cast

import numpy as np

from lookup.errors import Damaged, NotFound
from lookup.kit.engines.storeurl import StoreUrl
from lookup.kit.registry import load_backend
from lookup.kit.snapshots import snapshot_directory
from lookup.typeahead import infix as infix_index
from lookup.typeahead.filters import TermBlocklist, private_ids
from lookup.typeahead.trie import FLAG_COMPLETE, TrieArrays, TrieReader

if TYPE_CHECKING:
    from lookup.kit.snapshots import SnapshotStore

#: The snapshot stores beyond the built-in directory of trie files, by URL scheme (imported
#: when a URL names one).
BACKENDS: dict[str, str] = {
    "postgresql": "lookup.typeahead.snapshot_shared:SharedSnapshotStore",
}

MAGIC = b"LKTRIE01"
FORMAT = 1
_HEAD = struct.Struct("<8sII")
_DTYPES: dict[str, tuple[str, Literal["I", "i", "B", "f"]]] = {
    "u4": ("<u4", "I"),
    "i4": ("<i4", "i"),
    "u1": ("<u1", "B"),
    "f4": ("<f4", "f"),
}
SUFFIX = ".trie"
# decoded head of the string table: n_strings // _HEAD_DIVISOR ids (at least _HEAD_MIN)
_HEAD_DIVISOR = 10
_HEAD_MIN = 1024
_VERSION_RE = re.compile(r"^[0-9]{8}T[0-9]{6}Z-[0-9a-f]{6}$")
#: The sections of the trie itself (what ``trieBytes`` counts beside ``infixBytes``).
_TRIE_SECTIONS = ("first_child", "first_cp", "label_off", "top_off", "top_ids", "terminal",
                  "flags", "labels")  # fmt: skip


class SnapshotError(ValueError):
    """A snapshot file is missing, truncated, corrupt or of an unknown format."""


def _align(n: int) -> int:
    return (n + 7) & ~7


def write_snapshot(
    path: str | os.PathLike[str],
    market: str,
    trie: TrieArrays,
    strings: Sequence[str],
    scores: Sequence[float] | np.ndarray,
    meta: dict[str, Any] | None = None,
    *,
    version: str | None = None,
    infix: bool = True,
) -> Path:
    """Write one market's snapshot atomically; returns the path (named by version if a dir).

    ``infix`` adds the word-anywhere index (:mod:`~lookup.typeahead.infix`) as extra
    sections; a snapshot without them loads the same, with that fallback off."""
    if any("\n" in s for s in strings):
        raise ValueError("suggestion strings may not contain newlines")
    joined = "".join(s + "\n" for s in strings)
    str_off = np.concatenate([[0], np.cumsum([len(s) + 1 for s in strings])]).astype(np.uint32)
    sections: list[tuple[str, str, bytes]] = [
        ("first_child", "u4", trie.first_child.astype("<u4").tobytes()),
        ("first_cp", "u4", trie.first_cp.astype("<u4").tobytes()),
        ("label_off", "u4", trie.label_off.astype("<u4").tobytes()),
        ("top_off", "u4", trie.top_off.astype("<u4").tobytes()),
        ("top_ids", "u4", trie.top_ids.astype("<u4").tobytes()),
        ("terminal", "i4", trie.terminal.astype("<i4").tobytes()),
        ("flags", "u1", trie.flags.astype("<u1").tobytes()),
        ("str_off", "u4", str_off.astype("<u4").tobytes()),
        ("scores", "f4", np.asarray(scores, dtype="<f4").tobytes()),
        ("labels", "utf8", trie.labels.encode()),
        ("strings", "utf8", joined.encode()),
    ]
    if infix:
        sections += infix_index.sections(infix_index.build(strings))
    index: dict[str, dict[str, Any]] = {}
    payload = bytearray()
    for name, kind, data in sections:
        payload += b"\0" * (_align(len(payload)) - len(payload))
        index[name] = {"offset": len(payload), "nbytes": len(data), "type": kind}
        payload += data
    checksum = hashlib.blake2b(payload, digest_size=32).hexdigest()
    built_at = time.time()
    if version is None:
        version = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(built_at)) + "-" + checksum[:6]
    header = {
        "market": market,
        "version": version,
        "built_at": built_at,
        "k": trie.k,
        "counts": {
            "strings": len(strings),
            "nodes": trie.n_nodes,
            "plain_trie_nodes": trie.plain_nodes,
            "top_entries": int(len(trie.top_ids)),
            "keys": int((trie.terminal >= 0).sum()),
        },
        "sections": index,
        "checksum": "blake2b-256:" + checksum,
        "meta": meta or {},
    }
    if infix:
        header["infix"] = {"k": infix_index.TREE_K}
    head = json.dumps(header, ensure_ascii=False).encode()
    head += b" " * (_align(_HEAD.size + len(head)) - _HEAD.size - len(head))
    path = Path(path)
    if path.is_dir():
        path = path / f"{version}{SUFFIX}"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(_HEAD.pack(MAGIC, FORMAT, len(head)))
        f.write(head)
        f.write(payload)
    os.replace(tmp, path)
    return path


class Suggestions(NamedTuple):
    """One answer from a snapshot: best first, with the node it came from."""

    ids: list[int]
    complete: bool
    node: int


class Snapshot:
    """A loaded, read-only snapshot: the trie walker plus the string table and scores."""

    def __init__(self, path: str | os.PathLike[str], *, verify: bool = True) -> None:
        self.path = Path(path)
        try:
            with open(self.path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                if size < _HEAD.size:
                    raise SnapshotError(f"{self.path.name}: truncated (no header)")
                self._mmap = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except FileNotFoundError:
            raise SnapshotError(f"no snapshot at {self.path}") from None
        except (OSError, ValueError) as exc:
            raise SnapshotError(f"{self.path.name}: cannot map: {exc}") from None
        mv = memoryview(self._mmap)
        magic, fmt, head_len = _HEAD.unpack_from(mv, 0)
        if magic != MAGIC:
            raise SnapshotError(f"{self.path.name}: not a typeahead snapshot (bad magic)")
        if fmt != FORMAT:
            raise SnapshotError(f"{self.path.name}: format {fmt}, this code reads {FORMAT}")
        start = _HEAD.size + head_len
        if start > size:
            raise SnapshotError(f"{self.path.name}: truncated header")
        try:
            self.header: dict[str, Any] = json.loads(bytes(mv[_HEAD.size : start]))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise SnapshotError(f"{self.path.name}: unreadable header: {exc}") from None
        payload = mv[start:]
        if verify:
            algo, _, want = str(self.header.get("checksum", "")).partition(":")
            got = hashlib.blake2b(payload, digest_size=32).hexdigest()
            if algo != "blake2b-256" or got != want:
                raise SnapshotError(f"{self.path.name}: checksum mismatch (corrupt file)")
        sections = self.header.get("sections", {})
        views: dict[str, Any] = {}
        for name, info in sections.items():
            a, n = int(info["offset"]), int(info["nbytes"])
            if a < 0 or a + n > len(payload):
                raise SnapshotError(f"{self.path.name}: section {name} out of bounds")
            raw = payload[a : a + n]
            if info["type"] == "utf8":
                views[name] = str(raw, "utf-8")
            else:
                np_type, fmt_char = _DTYPES[info["type"]]
                if sys.byteorder == "little":
                    views[name] = raw.cast(fmt_char)
                else:  # pragma: no cover - big-endian hosts copy once
                    # numpy's stubs declare the buffer protocol only for Python >= 3.12
                    array = np.frombuffer(raw, np_type).astype(np_type[1:])
                    views[name] = memoryview(array)  # type: ignore[arg-type]
        missing = {
            "first_child",
            "first_cp",
            "label_off",
            "top_off",
            "top_ids",
            "terminal",
            "flags",
            "str_off",
            "scores",
            "labels",
            "strings",
        } - views.keys()
        if missing:
            raise SnapshotError(f"{self.path.name}: missing sections {sorted(missing)}")
        self._v = views
        self.market: str = self.header["market"]
        self.version: str = self.header["version"]
        self.k: int = int(self.header.get("k", 10))
        self.meta: dict[str, Any] = self.header.get("meta", {})
        try:  # the reader derives its shortcuts by walking the top of the trie
            self.reader = TrieReader(
                views["first_child"], views["first_cp"], views["label_off"], views["labels"],
                views["top_off"], views["top_ids"], views["flags"], views["terminal"], self.k,
            )  # fmt: skip
        except (IndexError, ValueError, OverflowError) as exc:
            raise SnapshotError(f"{self.path.name}: malformed trie: {exc}") from None
        self._top_off = views["top_off"]
        self._top_ids = views["top_ids"]
        self._flags = views["flags"]
        self._strings: str = views["strings"]
        self._str_off = views["str_off"]
        self._scores = views["scores"]
        self.n_strings = len(self._str_off) - 1
        # the most popular suggestions (the smallest ids) decoded once, as separate
        # strings: most answers are among them, and a list index is cheaper than two
        # offset reads and a slice of the table (about 8 B per query of memory)
        n_head = min(self.n_strings, max(_HEAD_MIN, self.n_strings // _HEAD_DIVISOR))
        self._head: list[str] = (
            self._strings[: self._str_off[n_head] - 1].split("\n") if n_head > 0 else []
        )
        self.file_size = size
        self._blocked: tuple[object, frozenset[int]] | None = None
        try:  # None for a snapshot written before the word-anywhere index (fallback off)
            k = int(self.header.get("infix", {}).get("k", infix_index.TREE_K))
            self.infix = infix_index.InfixIndex.of(views, k)
        except (ValueError, TypeError, AttributeError) as exc:
            raise SnapshotError(f"{self.path.name}: malformed infix index: {exc}") from None

    # -- reading

    def string(self, i: int) -> str:
        """The suggestion string with id ``i``."""
        if 0 <= i < len(self._head):
            return self._head[i]
        return self._strings[self._str_off[i] : self._str_off[i + 1] - 1]

    def texts(self, ids: list[int]) -> list[str]:
        """The suggestion strings of several ids (decoded head, else one slice of the table)."""
        head, text, off = self._head, self._strings, self._str_off
        h = len(head)
        return [head[i] if i < h else text[off[i] : off[i + 1] - 1] for i in ids]

    def score(self, i: int) -> float:
        """The decayed popularity score of suggestion ``i``."""
        return float(self._scores[i])

    def scores_of(self, ids: list[int]) -> list[float]:
        """The scores of several suggestions (what ``/v1/suggest`` reports beside them)."""
        sc = self._scores
        return [sc[i] for i in ids]

    def strings(self) -> list[str]:
        """Every suggestion string, best first."""
        return self._strings.split("\n")[:-1]

    def find(
        self, prefix: str, limit: int | None = None, excluded: frozenset[int] = frozenset()
    ) -> Suggestions:
        """The best ``limit`` suggestion ids for a (normalised) prefix."""
        if limit is None:
            limit = self.k
        r = self.reader
        node = r.locate(prefix)
        if node < 0:
            return Suggestions([], True, -1)
        to = self._top_off
        a = to[node]
        b = to[node + 1]
        stored = b - a
        ids = self._top_ids[a : a + limit if stored > limit else b].tolist()
        # blocked ids refill from the children; a stored list none of whose first
        # ``limit`` is blocked is the answer as it is, unless a full list must be extended
        if excluded and (limit > stored >= r.k or not excluded.isdisjoint(ids)):
            ids = r.top_excluding(node, limit, excluded)
        return Suggestions(ids, stored <= limit and bool(self._flags[node] & FLAG_COMPLETE), node)

    def suggest(self, prefix: str, limit: int | None = None) -> list[str]:
        """The best suggestion strings for a (normalised) prefix, ignoring any hot blocklist."""
        return [self.string(i) for i in self.find(prefix, limit).ids]

    def exact(self, query: str) -> int:
        """The id a query (as a key) leads to, or -1."""
        return self.reader.exact(query)

    def blocked_ids(self, blocklist: TermBlocklist, token: object = None) -> frozenset[int]:
        """Ids of suggestions the blocklist blocks; cached per ``token`` (a blocklist version)."""
        key = token if token is not None else id(blocklist)
        cached = self._blocked
        if cached is not None and cached[0] == key:
            return cached[1]
        ids = frozenset(blocklist.blocked_ids(self._strings, self._str_off))
        self._blocked = (key, ids)
        return ids

    def summary(self) -> dict[str, Any]:
        """What the management API and the dashboard show about a snapshot."""
        counts = self.header.get("counts", {})
        return {
            "market": self.market,
            "version": self.version,
            "builtAt": self.header.get("built_at"),
            "strings": self.n_strings,
            "nodes": counts.get("nodes"),
            "plainTrieNodes": counts.get("plain_trie_nodes"),
            "keys": counts.get("keys"),
            "bytes": self.file_size,
            # the trie and the strings; the word-anywhere index is counted apart
            "bytesPerQuery": round(
                (self.file_size - self.section_bytes(infix_index.SECTIONS))
                / max(1, self.n_strings),
                1,
            ),
            "trieBytes": self.section_bytes(_TRIE_SECTIONS),
            "infixBytes": self.infix.nbytes if self.infix is not None else 0,
            "checksum": self.header.get("checksum"),
        }

    def section_bytes(self, names: Iterable[str]) -> int:
        """The bytes the named sections take in the file (and in memory, mapped)."""
        sections = self.header.get("sections", {})
        return sum(int(sections[n]["nbytes"]) for n in names if n in sections)

    def arrays(self) -> dict[str, np.ndarray]:
        """The numeric sections as numpy views (zero-copy; for checks and notebooks)."""
        out = {}
        for name, info in self.header["sections"].items():
            if info["type"] != "utf8":
                out[name] = np.frombuffer(self._v[name], _DTYPES[info["type"]][0])
        return out


# --------------------------------------------------------------------------- validation


@dataclass
class Check:
    """One validation check and its outcome."""

    name: str
    ok: bool
    detail: str


@dataclass
class ValidationReport:
    """All checks run on a candidate snapshot; ``ok`` only if every one passed."""

    version: str
    market: str
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True if every check passed."""
        return all(c.ok for c in self.checks)

    def failures(self) -> list[Check]:
        """The checks that failed."""
        return [c for c in self.checks if not c.ok]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able form."""
        return {
            "version": self.version,
            "market": self.market,
            "ok": self.ok,
            "checks": [asdict(c) for c in self.checks],
        }


@dataclass(frozen=True)
class ValidationPolicy:
    """How strict :func:`validate` is."""

    size_tolerance: float = 0.25  # new/old distinct suggestions within ±25 %
    min_probe_overlap: float = 0.3  # mean share of the old top 10 still present at the probes
    probes: tuple[str, ...] = ()  # extra fixed probe prefixes (besides those derived)


def check_structure(snap: Snapshot) -> list[str]:
    """Problems with the arrays' shape and ranges (empty list if sound)."""
    a = snap.arrays()
    n = len(a["first_cp"])
    problems = []
    fc, lo, to = a["first_child"], a["label_off"], a["top_off"]
    if n == 0 or len(fc) != n + 1 or len(lo) != n + 1 or len(to) != n + 1:
        return ["section lengths disagree"]
    if len(a["terminal"]) != n or len(a["flags"]) != n:
        problems.append("terminal/flags length differs from the node count")
    if np.any(np.diff(fc.astype(np.int64)) < 0) or fc[0] != 1 or fc[-1] != n:
        problems.append("children ranges are not contiguous and increasing")
    if np.any(np.diff(lo.astype(np.int64)) < 0) or lo[-1] != len(snap.reader._labels):
        problems.append("label offsets are not increasing or overrun the labels")
    if np.any(np.diff(to.astype(np.int64)) < 0) or to[-1] != len(a["top_ids"]):
        problems.append("top-list offsets are not increasing or overrun the ids")
    if np.any(np.diff(to.astype(np.int64)) > snap.k):
        problems.append(f"a node stores more than k={snap.k} suggestions")
    ids = a["top_ids"].astype(np.int64)
    if len(ids) and ids.max() >= snap.n_strings:
        problems.append("a stored id points past the string table")
    term = a["terminal"]
    if len(term) and term.max() >= snap.n_strings:
        problems.append("a key points past the string table")
    if len(ids) > 1:
        same_node = np.ones(len(ids) - 1, bool)
        starts = to[1:-1].astype(np.int64)
        same_node[starts[(starts > 0) & (starts < len(ids))] - 1] = False
        if np.any((np.diff(ids) <= 0) & same_node):
            problems.append("a stored list is not strictly best-first")
    scores = a["scores"]
    if len(scores) != snap.n_strings:
        problems.append("one score per suggestion expected")
    elif len(scores) > 1 and np.any(
        np.diff(scores.astype(np.float64)) > 1e-3 * np.abs(scores[1:]) + 1e-6
    ):
        problems.append("suggestion ids are not in rank (score) order")
    return problems


def default_probes(snap: Snapshot, extra: Iterable[str] = ()) -> list[str]:
    """Probe prefixes: the root, the 1-3 character prefixes of the head, plus ``extra``."""
    probes = {""}
    for i in range(min(snap.n_strings, 20)):
        s = snap.string(i)
        for n in (1, 2, 3):
            if len(s) >= n:
                probes.add(s[:n])
    probes.update(extra)
    return sorted(probes)


def validate(
    new: Snapshot,
    previous: Snapshot | None,
    blocklist: TermBlocklist,
    policy: ValidationPolicy = ValidationPolicy(),
) -> ValidationReport:
    """Decide whether ``new`` may replace ``previous`` (see the module docstring)."""
    report = ValidationReport(new.version, new.market)
    problems = check_structure(new)
    report.checks.append(Check("structure", not problems, "; ".join(problems) or "arrays sound"))
    report.checks.append(Check("non_empty", new.n_strings > 0, f"{new.n_strings} suggestions"))
    blocked = sorted(new.blocked_ids(blocklist, token=("validate", tuple(blocklist.terms))))
    report.checks.append(
        Check(
            "blocklist",
            not blocked,
            "nothing blocked present"
            if not blocked
            else f"{len(blocked)} blocked suggestion(s), e.g. {new.string(blocked[0])!r}",
        )
    )
    private = sorted(private_ids(new._strings, new._str_off))
    report.checks.append(
        Check("private", not private,
              "no private-looking suggestion" if not private else f"{len(private)} private-looking")
    )  # fmt: skip
    if previous is not None and previous.market == new.market:
        ratio = new.n_strings / max(1, previous.n_strings)
        ok = abs(ratio - 1.0) <= policy.size_tolerance
        report.checks.append(
            Check(
                "size",
                ok,
                f"{new.n_strings} vs {previous.n_strings} suggestions "
                f"({ratio:.2f}×, tolerance ±{policy.size_tolerance:.0%})",
            )  # fmt: skip
        )
        overlaps, empty = [], []
        for p in default_probes(previous, policy.probes):
            old = set(previous.suggest(p))
            if not old:
                continue
            got = set(new.suggest(p))
            if not got:
                empty.append(p)
            overlaps.append(len(old & got) / len(old))
        mean = sum(overlaps) / len(overlaps) if overlaps else 1.0
        ok = not empty and mean >= policy.min_probe_overlap
        detail = (
            f"{len(overlaps)} probes, mean overlap {mean:.2f} (need {policy.min_probe_overlap})"
        )
        if empty:
            detail += f"; empty at {empty[:5]!r}"
        report.checks.append(Check("probes", ok, detail))
    return report


# --------------------------------------------------------------------------- the store


_MARKET_RE = re.compile(r"[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*")


class TrieSnapshotStore:
    """Snapshots on disk: ``ROOT/<market>/<version>.trie`` plus ``CURRENT`` and ``PREVIOUS``
    pointer files — the embedded :class:`~lookup.kit.snapshots.SnapshotStore` of the
    typeahead, whose names are markets.

    Pointers are replaced atomically (``os.replace``), so a reader sees the old version
    or the new one. A refused candidate goes to ``ROOT/<market>/rejected/`` with its
    report. :func:`publish_validated` is the build's way in: validate, then publish or
    reject.
    """

    def __init__(self, root: str | os.PathLike[str], keep: int = 5) -> None:
        self.root = Path(root)
        self.keep = keep

    def market_dir(self, market: str) -> Path:
        """The directory of one market's snapshots (``ValueError`` for a malformed market)."""
        if not _MARKET_RE.fullmatch(market):
            raise ValueError(f"not a market: {market!r}")
        return self.root / market

    def names(self) -> list[str]:
        """Markets with at least one snapshot."""
        if not self.root.exists():
            return []
        return sorted(
            p.name for p in self.root.iterdir() if p.is_dir() and any(p.glob("*" + SUFFIX))
        )

    def versions(self, market: str) -> list[str]:
        """Stored versions of a market, oldest first."""
        d = self.market_dir(market)
        if not d.exists():
            return []
        return sorted(p.name[: -len(SUFFIX)] for p in d.glob("*" + SUFFIX))

    def path(self, market: str, version: str) -> Path:
        """The file of one version (``ValueError`` for a malformed version)."""
        if not _VERSION_RE.match(version):
            raise ValueError(f"not a snapshot version: {version!r}")
        return self.market_dir(market) / f"{version}{SUFFIX}"

    def _pointer(self, market: str, which: str) -> str | None:
        try:
            v = (self.market_dir(market) / which).read_text().strip()
        except FileNotFoundError:
            return None
        return v or None

    def _point(self, market: str, which: str, version: str) -> None:
        f = self.market_dir(market) / which
        tmp = f.with_name(f"{which}.tmp")
        tmp.write_text(version + "\n")
        os.replace(tmp, f)

    def current(self, market: str) -> str | None:
        """The version the ``CURRENT`` pointer names, if any."""
        return self._pointer(market, "CURRENT")

    def activate(self, market: str, version: str) -> None:
        """Point ``CURRENT`` at a stored version (atomic rename); the version it named
        before becomes ``PREVIOUS``, the target of :meth:`rollback`."""
        if not self.path(market, version).exists():
            raise NotFound(f"no snapshot {version} for {market}")
        before = self.current(market)
        if before is not None and before != version:
            self._point(market, "PREVIOUS", before)
        self._point(market, "CURRENT", version)

    def rollback(self, market: str) -> str:
        """Make the version current before the last swap current again; returns it."""
        previous = self._pointer(market, "PREVIOUS")
        if previous is None:
            raise NotFound(f"{market} has no previous snapshot to roll back to", code="NO_PREVIOUS")
        if not self.path(market, previous).exists():
            raise NotFound(f"the file of {previous} was pruned from the store", code="NO_PREVIOUS")
        self.activate(market, previous)
        return previous

    def open(self, market: str, version: str | None = None) -> Snapshot | None:
        """Load a version (default: the current one); None if there is none."""
        version = version or self.current(market)
        if version is None:
            return None
        path = self.path(market, version)
        if not path.exists():
            raise NotFound(f"no snapshot {version} for {market}")
        return Snapshot(path)

    def publish(self, market: str, version: str, source: str | os.PathLike[str]) -> None:
        """Move a checked snapshot file in as ``version``, make it current, prune."""
        target = self.path(market, version)
        target.parent.mkdir(parents=True, exist_ok=True)
        if Path(source).resolve() != target.resolve():
            os.replace(source, target)
        self.activate(market, version)
        self.prune(market)

    def reject(
        self,
        market: str,
        version: str,
        source: str | os.PathLike[str],
        reason: Mapping[str, Any],
    ) -> None:
        """Move a refused file to ``rejected/`` beside the report saying why."""
        if not _VERSION_RE.match(version):
            raise ValueError(f"not a snapshot version: {version!r}")
        rejected = self.market_dir(market) / "rejected"
        rejected.mkdir(parents=True, exist_ok=True)
        os.replace(source, rejected / f"{version}{SUFFIX}")
        (rejected / f"{version}.json").write_text(json.dumps(dict(reason), indent=2))

    def prune(self, market: str) -> None:
        """Keep the newest ``keep`` versions; never the current one or anything newer."""
        current = self.current(market)
        older = [v for v in self.versions(market) if current is None or v < current]
        kept_newer = len(self.versions(market)) - len(older)
        for v in older[: max(0, len(older) - max(1, self.keep - kept_newer))]:
            self.path(market, v).unlink(missing_ok=True)


def open_snapshot_store(
    url: str | os.PathLike[str], keep: int = 5
) -> TrieSnapshotStore | SnapshotStore[Snapshot]:
    """The typeahead's snapshot store at ``url``: ``file:///path`` or a directory path (the
    embedded directory of trie files), or ``postgresql://…`` (versions in the shared
    version store, :mod:`~lookup.typeahead.snapshot_shared`)."""
    text = os.fspath(url).strip()
    if text.lower().startswith(("postgresql://", "postgres://")):
        found = load_backend(BACKENDS, "postgresql")
        return cast(
            "SnapshotStore[Snapshot]", found.from_url(StoreUrl("postgresql", text), keep=keep)
        )
    return TrieSnapshotStore(snapshot_directory(url), keep=keep)


def snapshot_damage(
    store: SnapshotStore[Snapshot], market: str, version: str, exc: BaseException
) -> Damaged:
    """The :class:`~lookup.errors.Damaged` error for a current snapshot that cannot be loaded
    (checksum mismatch, truncation, a ``CURRENT`` naming a missing or malformed version): it
    names the file and, as the remedy, an intact stored version to activate if there is one."""
    pointer = f"{market}/CURRENT"
    file = f"{market}/{version}{SUFFIX}"
    if isinstance(store, TrieSnapshotStore):
        pointer = str(store.root / market / "CURRENT")
        try:
            file = str(store.path(market, version))
        except ValueError:
            file = pointer
    on_disk = isinstance(store, TrieSnapshotStore)  # a shared store's copy is fetched
    if isinstance(exc, LookupError) or (on_disk and not Path(file).exists()):
        problem = f"{pointer} names version {version}, whose file {file} is missing"
    elif file == pointer:
        problem = f"{pointer} names {version!r}, which is not a snapshot version"
    else:
        why = str(exc).removeprefix(Path(file).name + ": ")
        problem = f"the snapshot {file} is damaged — {why}"
    build = "build a new one with `lookup typeahead build` (the server takes it within a second)"
    remedy = build
    for other in reversed(store.versions(market)):
        if other == version:
            continue
        try:
            if store.open(market, other) is not None:
                remedy = (
                    f"activate the intact stored version {other} (POST "
                    f'/v1/typeahead/snapshots/{market}/activate with {{"version": "{other}"}} '
                    f"and the admin token), or {build}"
                )
                break
        except (SnapshotError, ValueError, LookupError):
            continue
    return Damaged(
        f"{market}: {problem}; {market} answers 503 until it is replaced",
        file=file,
        remedy=remedy,
    )


def publish_validated(
    store: SnapshotStore[Snapshot],
    candidate: str | os.PathLike[str],
    blocklist: TermBlocklist,
    policy: ValidationPolicy = ValidationPolicy(),
    *,
    force: bool = False,
) -> ValidationReport:
    """Validate a candidate file against the current snapshot; publish it if it passes,
    else reject it with the report (the current one keeps serving).

    ``force`` skips the comparison with the previous snapshot (never the integrity
    and blocklist checks) — for a deliberate change of data set.
    """
    snap = Snapshot(candidate)
    previous = None
    if not force:
        try:
            previous = store.open(snap.market)
        except (SnapshotError, ValueError, LookupError):
            previous = None  # a damaged or missing current one: nothing to compare with
    report = validate(snap, previous, blocklist, policy)
    if report.ok:
        store.publish(snap.market, snap.version, candidate)
    else:
        store.reject(snap.market, snap.version, candidate, report.to_dict())
    return report


__all__ = [
    "FLAG_COMPLETE",
    "Check",
    "Snapshot",
    "SnapshotError",
    "Suggestions",
    "TrieSnapshotStore",
    "ValidationPolicy",
    "ValidationReport",
    "check_structure",
    "default_probes",
    "open_snapshot_store",
    "publish_validated",
    "snapshot_damage",
    "validate",
    "write_snapshot",
]
