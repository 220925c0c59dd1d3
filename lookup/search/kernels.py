"""Compiled inner loops of a shard query: decode, score, blend and pick the top k in one call.

Per query, numpy's way costs tens of calls (decode, concatenate, sort, ``bincount``,
``partition``, ``lexsort``), each a few microseconds of overhead on lists of a few
thousand postings — on the benchmark corpus most of a query's time (see
``benchmarks/README.md``, "Dynamic pruning (issue 17)"). These kernels, compiled by
``numba`` (``@njit``, cached on disk beside this file), do the same work in one call
each, straight from the packed posting bytes:

* :func:`or_top` — every term's list decoded and its scores added into an accumulator
  of :data:`_WINDOW` document ids, one window at a time (it stays in the first-level cache);
* :func:`and_top` — the rarest list decoded, each other term probed through its skip
  table one block at a time (the cursor only moves forward: candidates ascend);
* either, when only one term has postings here, scores that list as it decodes it
  (no accumulator, no intersection).

A query comes in as one table (:func:`table`: a row per term, then the idfs, made from
bytes) and goes out as its hits' tuples: per query, the Python around a kernel call cost
as much as the call (arrays built from lists, returned arrays converted to lists).
A match's final score is offered to a min-heap of the k best as it is computed, and only
those that reach the heap's root are kept for the final ordering. A document's length
norm is read as ``ntab[klen[d]]`` — ``klen`` numbers the segment's distinct lengths in 2
bytes a document, ``ntab`` holds their norms — rather than from 8 bytes a document
(issue 24: a query's postings are spread over the whole segment, and on a busy machine
every cache line is a miss).

Both score **bit for bit** as :meth:`~lookup.search.shard.SegmentView.match` and the
signal blend do (``idf * tf / (tf + norm)``, terms added in plan order from ``0.0``,
``bm25 * (1 + link + min(factor * base, w))``), count every live match, and return the
top k ordered as :func:`~lookup.search.pruning.top_k` orders them (score, URL key,
doc). ``tests/search/test_pruning.py`` checks them against the numpy pruning over
random layouts; the numpy path stays for segment formats 1 (varints), phrases and
operators, and when the ``search_compiled`` setting is off.

``numba`` is imported on first use (:func:`ready`), not with the package, and in the
background: opening an index starts it, and queries take the numpy path until the kernels
are loaded (the same answers), so neither the first query nor a test waits for a compiler.
"""

from __future__ import annotations

import logging
import struct
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from lookup import settings
from lookup.search.postings import BLOCK

#: Postings per block of the segment format (a compile-time constant to the kernels).
_BLOCK = BLOCK
#: Integers per term in a query's table: df, offset, gap width, tf width, first skip entry.
_ROW = 5
#: Document ids an OR query scores at a time (its accumulator: 16 KB, in L1).
_WINDOW = 2048
#: Up to this many candidates are put in order by insertion (more: by three sorts).
_INSERTION = 64
#: One term's row of a query's table, as bytes (what :func:`table` joins).
TERM_ROW = struct.Struct("<5q")
_IDFS: dict[int, struct.Struct] = {}

log = logging.getLogger("lookup.search")
_lock = threading.Lock()
_compiled: dict[str, Callable[..., Any]] = {}
_failed: list[str] = []
_loader: list[threading.Thread] = []


def _read(buf: np.ndarray, at: int, width: int) -> np.int64:
    """A little-endian integer of ``width`` (1, 2 or 4) bytes at ``buf[at]``."""
    if width == 1:
        return np.int64(buf[at])
    if width == 2:
        return np.int64(buf[at]) | (np.int64(buf[at + 1]) << 8)
    return (
        np.int64(buf[at])
        | (np.int64(buf[at + 1]) << 8)
        | (np.int64(buf[at + 2]) << 16)
        | (np.int64(buf[at + 3]) << 24)
    )


def _final(bm: float, link_d: float, base_d: float, factor: float, fresh_w: float) -> float:
    """The blended score, as :meth:`Signals.blend` computes it, from one document's link
    boost and freshness base.

    Scalars only: called per match as ``_final(s, link[d], base[d], …) if blend else s``.
    Passing it the arrays instead made numba count references on every call, which cost
    more than the rest of an OR query's per-document work together (15.8 against 7.0 ns a
    posting on the benchmark's heaviest query, issue 24).
    """
    fresh = 0.0
    if fresh_w != 0.0:
        fresh = min(factor * base_d, fresh_w)
    return bm * (1.0 + link_d + fresh)


def _select(docs, bm, final, m, k, keys, shard, seg):  # type: ignore[no-untyped-def]
    """The k best of ``m`` matches, best first: by final score, then URL key, then doc
    (as :func:`~lookup.search.pruning.top_k` orders them), as the hits' tuples
    ``(final, URL key, BM25, shard, segment, doc)``.

    The k-th best score comes from a min-heap of the k best seen (most matches fail
    the one comparison with its root); what reaches it — k matches, more only on ties —
    is put in order by insertion (by three stable sorts when ties make it many).
    """
    out = [(0.0, np.int64(0), 0.0, np.int64(0), np.int64(0), np.int64(0))]
    out.pop()  # typed, empty
    if k <= 0 or m == 0:
        return out
    n = m
    threshold = -np.inf
    if m > k:
        heap = final[:k].copy()
        for i in range(k // 2 - 1, -1, -1):
            _sift(heap, i, k)
        for i in range(k, m):
            if final[i] > heap[0]:
                heap[0] = final[i]
                _sift(heap, 0, k)
        threshold = heap[0]
        n = 0
        for i in range(m):
            if final[i] >= threshold:
                n += 1
    cd = np.empty(n, np.int64)
    cb = np.empty(n, np.float64)
    cf = np.empty(n, np.float64)
    ck = np.empty(n, np.int64)
    n = 0
    for i in range(m):
        if final[i] >= threshold:
            cd[n] = docs[i]
            cb[n] = bm[i]
            cf[n] = final[i]
            ck[n] = keys[docs[i]]
            n += 1
    if n <= _INSERTION:
        order = np.empty(n, np.int64)
        for i in range(n):  # insertion: order[:i] is sorted; the new one moves down
            j = i
            while j > 0 and _before(cf, ck, cd, i, order[j - 1]):
                order[j] = order[j - 1]
                j -= 1
            order[j] = i
    else:
        order = np.argsort(cd, kind="mergesort")
        order = order[np.argsort(ck[order], kind="mergesort")]
        order = order[np.argsort(-cf[order], kind="mergesort")]
    for i in range(min(k, n)):
        x = order[i]
        out.append((cf[x], ck[x], cb[x], shard, seg, cd[x]))
    return out


def _before(cf, ck, cd, a, b):  # type: ignore[no-untyped-def]
    """Whether candidate ``a`` ranks before ``b``: higher final score, lower URL key, lower doc."""
    if cf[a] != cf[b]:
        return cf[a] > cf[b]
    if ck[a] != ck[b]:
        return ck[a] < ck[b]
    return cd[a] < cd[b]


def _sift(heap: np.ndarray, i: int, n: int) -> None:
    """Restore the min-heap below position ``i`` (``n`` entries)."""
    while True:
        small = i
        left = 2 * i + 1
        right = left + 1
        if left < n and heap[left] < heap[small]:
            small = left
        if right < n and heap[right] < heap[small]:
            small = right
        if small == i:
            return
        heap[i], heap[small] = heap[small], heap[i]
        i = small


def _offer(heap: np.ndarray, h: int, k: int, f: float) -> int:
    """Offer ``f`` to the min-heap of the ``k`` best final scores (``h`` in it); its new size."""
    if h < k:
        i = h
        heap[i] = f
        while i > 0:
            parent = (i - 1) // 2
            if heap[parent] <= heap[i]:
                break
            heap[parent], heap[i] = heap[i], heap[parent]
            i = parent
        return h + 1
    if k > 0 and f > heap[0]:
        heap[0] = f
        _sift(heap, 0, k)
    return h


def _one_top(buf, meta, t, j, dl, ntab, live, all_live, link, base, factor, fresh_w, blend, k,  # type: ignore[no-untyped-def]
             keys, shard, seg):  # fmt: skip
    """One term's live postings, scored and selected as one pass (no accumulator, no
    intersection): what OR and AND both are when a single query term has postings here."""
    df, off, gw, tw = meta[_ROW * j], meta[_ROW * j + 1], meta[_ROW * j + 2], meta[_ROW * j + 3]
    term_idf = meta.view(np.float64)[_ROW * t + j]
    heap = np.empty(max(k, 1))
    h = 0
    theta = -np.inf
    cd = np.empty(df, np.int64)
    cb = np.empty(df, np.float64)
    cf = np.empty(df, np.float64)
    c = 0
    n = 0
    d = np.int64(0)
    tf_at = off + df * gw
    for i in range(df):
        d += _read(buf, off + i * gw, gw)
        if not (all_live or live[d]):
            continue
        n += 1
        tf = np.float64(_read(buf, tf_at + i * tw, tw))
        s = term_idf * tf / (tf + ntab[dl[d]])
        f = _final(s, link[d], base[d], factor, fresh_w) if blend else s
        if f >= theta:  # may still be among the k best (every one that is passes here)
            cd[c] = d
            cb[c] = s
            cf[c] = f
            c += 1
            h = _offer(heap, h, k, f)
            if h == k:
                theta = heap[0]
    return _select(cd, cb, cf, c, k, keys, shard, seg), n


def _or_top(buf, meta, dl, ntab, live, all_live, link, base, factor, fresh_w, blend, k, keys,  # type: ignore[no-untyped-def]
            shard, seg):  # fmt: skip
    """OR: every live document holding a term; ``meta`` is the query's table (see
    :meth:`~lookup.search.shard.SegmentView.kernel_meta`: a row ``(df, off, gap width,
    tf width, first skip entry)`` per query term in plan order — df 0: not in this
    segment — then each term's idf as float64 bits).

    Documents are taken a window of :data:`_WINDOW` ids at a time, as Lucene's
    ``BooleanScorer`` does: each term's postings in the window, in plan order, add their
    scores into a small accumulator that stays in the CPU's first-level cache, then the
    window's documents are scored and offered to the top k. A document's terms are
    added in plan order from ``0.0`` (every contribution is above zero — the caller
    checks the idfs are — so ``wacc[x] == 0.0`` says ``x`` is new), as exhaustive numpy
    scoring adds them. A dense accumulator over the whole segment cost a cache line a
    posting, twice, where the machine is busy (issue 24).
    """
    t = meta.size // (_ROW + 1)
    idfs = meta.view(np.float64)
    total = 0
    present = 0
    only = 0
    for j in range(t):
        df = meta[_ROW * j]
        total += df
        if df > 0:
            present += 1
            only = j
    if present <= 1:  # one list (or none): scored as it is decoded
        return _one_top(buf, meta, t, only, dl, ntab, live, all_live, link, base, factor,
                        fresh_w, blend, k, keys, shard, seg)  # fmt: skip
    end = np.int64(1) << 62  # past every document: a list that is done
    pos = np.zeros(t, np.int64)  # each list's next posting, and its document
    cur = np.empty(t, np.int64)
    for j in range(t):
        r = _ROW * j
        cur[j] = _read(buf, meta[r + 1], meta[r + 2]) if meta[r] > 0 else end
    wacc = np.zeros(_WINDOW, np.float64)  # zero again after each window
    touched = np.empty(_WINDOW, np.int32)
    heap = np.empty(max(k, 1))
    h = 0
    theta = -np.inf
    cd = np.empty(total, np.int64)
    cb = np.empty(total, np.float64)
    cf = np.empty(total, np.float64)
    c = 0
    n = 0
    while True:
        low = end
        for j in range(t):
            low = min(low, cur[j])
        if low == end:
            break
        start = low - low % _WINDOW  # windows no list has a document in are skipped
        limit = start + _WINDOW
        m = 0
        for j in range(t):
            r = _ROW * j
            df, off, gw, tw = meta[r], meta[r + 1], meta[r + 2], meta[r + 3]
            term_idf = idfs[_ROW * t + j]
            tf_at = off + df * gw
            i = pos[j]
            d = cur[j]
            while d < limit:
                tf = np.float64(_read(buf, tf_at + i * tw, tw))
                x = d - start
                a = wacc[x]
                touched[m] = x  # kept only when new: a store, not a branch that mispredicts
                m += 1 if a == 0.0 else 0
                wacc[x] = a + term_idf * tf / (tf + ntab[dl[d]])
                i += 1
                d = d + _read(buf, off + i * gw, gw) if i < df else end
            pos[j] = i
            cur[j] = d
        for q in range(m):
            x = touched[q]
            s = wacc[x]
            wacc[x] = 0.0
            d = start + x
            if all_live or live[d]:
                n += 1
                f = _final(s, link[d], base[d], factor, fresh_w) if blend else s
                if f >= theta:  # may still be among the k best (every one that is passes here)
                    cd[c] = d
                    cb[c] = s
                    cf[c] = f
                    c += 1
                    h = _offer(heap, h, k, f)
                    if h == k:
                        theta = heap[0]
    return _select(cd, cb, cf, c, k, keys, shard, seg), n


def _and_top(buf, meta, skip_last, dl, ntab, live, all_live, link, base, factor, fresh_w, blend,  # type: ignore[no-untyped-def]
             k, keys, shard, seg):  # fmt: skip
    """AND: the rarest list's live documents that every other term has; ``meta`` as for
    :func:`_or_top` (every df above 0: the caller checks)."""
    t = meta.size // (_ROW + 1)
    idfs = meta.view(np.float64)[_ROW * t :]
    order = np.empty(t, np.int64)
    for i in range(t):  # the terms by df, rarest first (ties in plan order): insertion
        j = i
        while j > 0 and meta[_ROW * order[j - 1]] > meta[_ROW * i]:
            order[j] = order[j - 1]
            j -= 1
        order[j] = i
    rare = order[0]
    if t == 1:
        return _one_top(buf, meta, t, rare, dl, ntab, live, all_live, link, base, factor,
                        fresh_w, blend, k, keys, shard, seg)  # fmt: skip
    r = _ROW * rare
    df, off, gw, tw = meta[r], meta[r + 1], meta[r + 2], meta[r + 3]
    cand = np.empty(df, np.int64)
    tfm = np.empty((t, df), np.int64)  # a candidate's row entries are set before it is read
    n = 0
    d = np.int64(0)
    tf_at = off + df * gw
    for i in range(df):
        d += _read(buf, off + i * gw, gw)
        if all_live or live[d]:
            cand[n] = d
            tfm[rare, n] = _read(buf, tf_at + i * tw, tw)
            n += 1
    alive = np.ones(n, np.bool_)
    cb = np.empty(n, np.float64)
    cf = np.empty(n, np.float64)
    blk_docs = np.empty(_BLOCK, np.int64)
    blk_tfs = np.empty(_BLOCK, np.int64)
    for x in range(1, t):
        j = order[x]
        r = _ROW * j
        df, off, gw, tw, ss = meta[r], meta[r + 1], meta[r + 2], meta[r + 3], meta[r + 4]
        nb = (df + _BLOCK - 1) // _BLOCK
        tf_at = off + df * gw
        b = 0
        loaded = -1
        cnt = 0
        ib = 0
        for c in range(n):
            if not alive[c]:
                continue
            target = cand[c]
            while b < nb and skip_last[ss + b] < target:
                b += 1
            if b == nb:  # past the end of this list: nothing further matches
                for c2 in range(c, n):
                    alive[c2] = False
                break
            if b != loaded:
                lo = b * _BLOCK
                cnt = min(df - lo, _BLOCK)
                d = skip_last[ss + b - 1] if b > 0 else np.int64(0)
                for i in range(cnt):
                    d += _read(buf, off + (lo + i) * gw, gw)
                    blk_docs[i] = d
                    blk_tfs[i] = _read(buf, tf_at + (lo + i) * tw, tw)
                loaded = b
                ib = 0
            while ib < cnt and blk_docs[ib] < target:
                ib += 1
            if ib < cnt and blk_docs[ib] == target:
                tfm[j, c] = blk_tfs[ib]
            else:
                alive[c] = False
    heap = np.empty(max(k, 1))
    h = 0
    theta = -np.inf
    m = 0
    kept = 0  # the candidates that may still be among the k best, moved to the front
    for c in range(n):
        if not alive[c]:
            continue
        doc = cand[c]
        nrm = ntab[dl[doc]]
        s = 0.0
        for j in range(t):
            tf = np.float64(tfm[j, c])
            s += idfs[j] * tf / (tf + nrm)
        m += 1
        f = _final(s, link[doc], base[doc], factor, fresh_w) if blend else s
        if f >= theta:  # (every one of the k best passes here)
            cand[kept] = doc
            cb[kept] = s
            cf[kept] = f
            kept += 1
            h = _offer(heap, h, k, f)
            if h == k:
                theta = heap[0]
    return _select(cand, cb, cf, kept, k, keys, shard, seg), m


def ready() -> bool:
    """Whether the compiled kernels are in use now (the ``search_compiled`` setting, numba).

    The first call starts loading them in the background — importing numba and loading
    the kernels from the on-disk cache, or compiling them into it the first time (several
    seconds) — and says False until they are loaded: queries take the numpy path
    meanwhile, which answers the same, so no query waits for a compiler. Later calls
    cost a global look-up.
    """
    if _compiled:
        return True
    if _failed or not settings.get("search_compiled"):
        return False
    with _lock:
        if not _loader:
            thread = threading.Thread(target=_load, name="search-kernels", daemon=True)
            _loader.append(thread)
            thread.start()
    return bool(_compiled)


def wait(timeout: float | None = None) -> bool:
    """Start loading the kernels if needed and wait for them (benchmarks, tests)."""
    if not ready() and _loader:
        _loader[0].join(timeout)
    return bool(_compiled)


def _load() -> None:
    """Import numba, compile or load the kernels, run each once, then publish them."""
    try:
        import numba
    except ImportError as exc:  # the numpy path answers alike, only slower
        _failed.append(str(exc))
        return
    try:
        jit = numba.njit(cache=True)
        read = jit(_read)
        final = jit(_final)
        sift = jit(_sift)
        select = jit(_rebind(_select, {"_sift": sift, "_before": jit(_before)}))
        offer = jit(_rebind(_offer, {"_sift": sift}))
        globals_ = {"_read": read, "_final": final, "_select": select, "_offer": offer}
        globals_["_one_top"] = jit(_rebind(_one_top, globals_))
        kernels: dict[str, Callable[..., Any]] = {
            "or": jit(_rebind(_or_top, globals_)),
            "and": jit(_rebind(_and_top, globals_)),
        }
        _warm(kernels)
    except Exception as exc:  # e.g. no writable cache and no compiler: stay on numpy
        log.warning("search kernels unavailable, scoring with numpy: %s", exc)
        _failed.append(str(exc))
        return
    _compiled.update(kernels)  # one C-level update under the GIL: both kernels or neither


def _rebind(fn: Callable[..., Any], names: dict[str, Any]) -> Callable[..., Any]:
    """``fn`` with its helper names bound to their compiled versions."""
    import types

    scope = dict(fn.__globals__)
    scope.update(names)
    out = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)
    out.__qualname__ = fn.__qualname__
    out.__module__ = fn.__module__
    return out


def _warm(kernels: dict[str, Callable[..., Any]]) -> None:
    """Run each kernel once on a tiny list, so that it is compiled (or loaded) now."""
    buf = np.array([1, 2, 1, 1], dtype=np.uint8)  # docs 1 and 3, tf 1 each
    buf.flags.writeable = False  # as a segment's mapped postings are
    meta = table([TERM_ROW.pack(2, 0, 1, 1, 0)], (1.0,))
    z = np.zeros(4)
    live = np.ones(4, dtype=np.bool_)
    keys = np.arange(4, dtype=np.int64)
    skip = np.array([3], dtype=np.int64)
    for width in (np.uint16, np.uint32):  # a segment's length numbers: 2 bytes, or 4
        lengths = (np.zeros(4, dtype=width), np.ones(1))  # every doc the one length, norm 1
        args = (*lengths, live, True, z, z, 0.0, 0.0, False, 10, keys)
        kernels["or"](buf, meta, *args, 0, 0)
        kernels["and"](buf, meta, skip, *args, 0, 0)


def table(rows: Sequence[bytes], idfs: Sequence[float]) -> np.ndarray:
    """A query's table for the kernels: each term's row (:data:`TERM_ROW`, in plan order)
    and then each term's idf as float64 bits, in one read-only int64 array.

    Made from bytes, not from Python lists: ``np.array`` over a list of rows costs
    microseconds a query, joining bytes a fraction of one (issue 24).
    """
    pack = _IDFS.get(len(idfs))
    if pack is None:
        pack = _IDFS[len(idfs)] = struct.Struct(f"<{len(idfs)}d")
    return np.frombuffer(b"".join(rows) + pack.pack(*idfs), np.int64)


#: A hit as the kernels make it: ``(final score, URL key, BM25, shard, segment, doc)``.
KernelHit = tuple[float, int, float, int, int, int]


def compiled(name: str) -> Callable[..., tuple[list[KernelHit], int]]:
    """The compiled kernel ``or`` or ``and`` itself (:func:`ready` must have said True),
    to call without a wrapper on a query's path; :func:`or_top` says what it answers."""
    return _compiled[name]


def or_top(*args: Any) -> tuple[list[KernelHit], int]:
    """The compiled OR kernel (:func:`ready` must have said True): the top k best first,
    each as the fields of a :class:`~lookup.search.shard.Hit` (a tuple per hit: the
    kernel makes them, so a query converts no arrays), and the live match count."""
    return _compiled["or"](*args)  # type: ignore[no-any-return]


def and_top(*args: Any) -> tuple[list[KernelHit], int]:
    """The compiled AND kernel (:func:`ready` must have said True), answering as
    :func:`or_top`."""
    return _compiled["and"](*args)  # type: ignore[no-any-return]
