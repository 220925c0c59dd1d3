"""Dynamic pruning against brute force: the same top k, to the last bit of every score."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lookup.search.bm25 import length_norm, term_scores
from lookup.search.postings import BLOCK, PostingList, encode_postings
from lookup.search.pruning import SLACK, prune_top_k
from tests.search.test_properties import _build


@pytest.fixture(autouse=True, scope="module")
def _compiled_kernels() -> None:
    """The exhaustive side of every comparison here runs on the compiled kernels (loaded
    in the background otherwise, with the numpy path answering until then)."""
    from lookup.search import kernels

    assert kernels.wait(timeout=300), "the compiled search kernels did not load"


def _lists(
    n_docs: int, members: list[np.ndarray], tfs: list[np.ndarray], doclen: np.ndarray
) -> list[PostingList]:
    """Encode the given (sorted doc ids, tfs) per term as one segment's posting lists."""
    tids = np.concatenate([np.full(m.size, j) for j, m in enumerate(members)]).astype(np.int64)
    docs = np.concatenate(members).astype(np.int64)
    tf = np.concatenate(tfs).astype(np.int64)
    positions = np.concatenate([np.arange(t) for t in tf]) if tf.size else np.zeros(0, np.int64)
    enc = encode_postings(len(members), tids, docs, tf, positions, doclen=doclen)
    assert enc.block_maxtf is not None and enc.block_mindl is not None
    out = []
    for j in range(len(members)):
        s = int(enc.skip_start[j])
        nb = (int(enc.df[j]) + BLOCK - 1) // BLOCK
        out.append(
            PostingList(
                enc.postings,
                int(enc.df[j]),
                int(enc.post_off[j]),
                int(enc.post_len[j]),
                enc.block_last[s : s + nb],
                enc.block_off[s : s + nb],
                widths=int(enc.widths[j]),
                block_maxtf=enc.block_maxtf[s : s + nb],
                block_mindl=enc.block_mindl[s : s + nb].astype(np.float64),
            )
        )
    return out


def _brute(
    members: list[np.ndarray],
    tfs: list[np.ndarray],
    idfs: list[float],
    doclen: np.ndarray,
    keys: np.ndarray,
    live: np.ndarray,
    boost: np.ndarray,
    conjunctive: bool,
    avgdl: float,
    k: int,
) -> list[tuple[int, float, float]]:
    """Every document scored in plain Python floats: ``(doc, bm25, final)``, best first."""
    tf_of = [
        dict(zip(m.tolist(), t.tolist(), strict=True)) for m, t in zip(members, tfs, strict=True)
    ]
    out = []
    for d in range(doclen.size):
        if not live[d]:
            continue
        has = [d in tf_of[j] for j in range(len(members))]
        if not (all(has) if conjunctive else any(has)):
            continue
        norm = 1.2 * (1.0 - 0.75 + 0.75 * float(doclen[d]) / avgdl)
        bm = 0.0
        for j, term_idf in enumerate(idfs):
            if has[j]:
                tf = float(tf_of[j][d])
                bm += term_idf * tf / (tf + norm)
        out.append((d, bm, bm * float(boost[d])))
    out.sort(key=lambda x: (-x[2], int(keys[x[0]]), x[0]))
    return out[:k]


@st.composite
def cases(draw: st.DrawFn):  # type: ignore[no-untyped-def]
    n_docs = draw(st.integers(1, 1500))
    n_terms = draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    members, tfs = [], []
    for _ in range(n_terms):
        density = draw(st.sampled_from([0.002, 0.02, 0.1, 0.4, 0.9, 1.0]))
        m = np.flatnonzero(rng.random(n_docs) < density)
        if m.size == 0:
            m = np.array([int(rng.integers(n_docs))])
        members.append(m)
        # a few heavy tfs, so some blocks have bounds far above their typical posting
        tfs.append(
            np.where(
                rng.random(m.size) < 0.05, rng.integers(1, 40, m.size), 1 + rng.poisson(0.7, m.size)
            )
        )
    doclen = rng.integers(1, draw(st.sampled_from([3, 60, 800])), n_docs)
    doclen = np.maximum(doclen, max(int(t.max()) for t in tfs))  # a doc holds its tfs
    few_keys = draw(st.booleans())  # many equal keys: ties fall through to the doc id
    keys = rng.integers(0, 4 if few_keys else 2**62, n_docs)
    if draw(st.booleans()):  # equal scores: every tf and length alike
        tfs = [np.ones(m.size, dtype=np.int64) for m in members]
        doclen = np.full(n_docs, 5)
    live = rng.random(n_docs) >= draw(st.sampled_from([0.0, 0.1, 0.7]))
    boosted = draw(st.booleans())
    k = draw(st.sampled_from([1, 3, 10, 50]))
    conjunctive = draw(st.booleans())
    decline = draw(st.sampled_from([0.0, 0.0, 1.0, 32.0]))  # OR: the planner's question
    return members, tfs, doclen, keys, live, boosted, k, conjunctive, seed, decline


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_pruned_top_k_is_brute_force_exactly(case) -> None:  # type: ignore[no-untyped-def]
    members, tfs, doclen, keys, live, boosted, k, conjunctive, seed, decline = case
    rng = np.random.default_rng(seed + 1)
    n_docs = doclen.size
    idfs = [math.log(1.0 + (n_docs - m.size + 0.5) / (m.size + 0.5)) for m in members]
    avgdl = float(doclen.mean())
    boost = 1.0 + (0.15 * rng.random(n_docs) if boosted else np.zeros(n_docs))
    lists = _lists(n_docs, members, tfs, doclen)
    res = prune_top_k(
        lists,
        idfs,
        length_norm(doclen, avgdl),
        keys,
        k,
        avgdl,
        1.2,
        0.75,
        conjunctive,
        live=None if live.all() else live,
        blend=(lambda d, bm: bm * boost[d]) if boosted else None,
        max_boost=float(boost.max()),
        decline_below=decline,
    )
    if res is None:  # declined: only an OR over several lists with a ratio to meet
        assert decline > 0 and not conjunctive and len(members) > 1
        return
    want = _brute(members, tfs, idfs, doclen, keys, live, boost, conjunctive, avgdl, k)
    assert res.docs.tolist() == [d for d, _, _ in want]
    assert res.bm25.tolist() == [bm for _, bm, _ in want]  # bit for bit, not approximately
    assert res.final.tolist() == [f for _, _, f in want]
    assert res.scored >= len(want)


def test_block_bounds_hold_every_posting() -> None:
    rng = np.random.default_rng(7)
    n = 5000
    members = [np.flatnonzero(rng.random(n) < p) for p in (0.05, 0.5, 1.0)]
    tfs = [1 + rng.poisson(1.5, m.size) for m in members]
    doclen = np.maximum(rng.integers(1, 400, n), 60)
    for pl, m, t in zip(_lists(n, members, tfs, doclen), members, tfs, strict=True):
        assert pl.block_maxtf is not None and pl.block_mindl is not None
        for avgdl, k1, b in ((50.0, 1.2, 0.75), (400.0, 2.0, 1.0), (3.0, 0.5, 0.0)):
            ub = term_scores(pl.block_maxtf, length_norm(pl.block_mindl, avgdl, k1, b), 2.0)
            score = term_scores(t, length_norm(doclen[m], avgdl, k1, b), 2.0)
            block = np.arange(m.size) // BLOCK
            assert np.all(score <= ub[block] * (1.0 + SLACK))
            assert np.all(ub[block] <= score.max() * 10)  # a bound, not infinity


def test_pruning_skips_most_of_a_common_term() -> None:
    """A rare term with a common one: the common term's blocks away from the rare
    one's documents, and low-scoring blocks, are never decoded."""
    rng = np.random.default_rng(3)
    n = 20_000
    common = np.flatnonzero(rng.random(n) < 0.6)
    rare = np.flatnonzero(rng.random(n) < 0.004)
    members = [common, rare]
    tfs = [1 + rng.poisson(0.5, common.size), 1 + rng.poisson(2.0, rare.size)]
    doclen = rng.integers(20, 300, n)
    lists = _lists(n, members, tfs, doclen)
    idfs = [math.log(1.0 + (n - m.size + 0.5) / (m.size + 0.5)) for m in members]
    keys = rng.integers(0, 2**62, n)
    for conjunctive in (False, True):
        res = prune_top_k(
            lists, idfs, length_norm(doclen, float(doclen.mean())), keys, 10,
            float(doclen.mean()), 1.2, 0.75,
            conjunctive,
        )  # fmt: skip
        assert res is not None
        want = _brute(
            members, tfs, idfs, doclen, keys, np.ones(n, bool), np.ones(n), conjunctive,
            float(doclen.mean()), 10,
        )  # fmt: skip
        assert res.docs.tolist() == [d for d, _, _ in want]
        if not conjunctive:  # the common term was only probed for the rare one's documents
            assert res.skipped_terms == 1 and res.scored <= rare.size


# ---------------------------------------------------------------- through real segments

VOCAB = [f"w{i:02d}" for i in range(40)]


@st.composite
def layouts(draw: st.DrawFn):  # type: ignore[no-untyped-def]
    n = draw(st.integers(1, 700))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, len(VOCAB) + 1) ** 1.1  # Zipf: long and short lists
    docs = [
        [
            VOCAB[i]
            for i in rng.choice(len(VOCAB), int(rng.integers(1, 30)), p=weights / weights.sum())
        ]
        for _ in range(n)
    ]
    shards = draw(st.integers(1, 3))
    seg_docs = draw(st.sampled_from([50, 200, 1000]))
    deleted = {i for i in range(n) if rng.random() < draw(st.sampled_from([0.0, 0.05, 0.5]))}
    queries = [
        list(rng.choice(VOCAB[: draw(st.sampled_from([5, 40]))], int(rng.integers(1, 4))))
        for _ in range(6)
    ]
    return docs, shards, seg_docs, deleted, queries


def _plans(snap, words: list[str], signals):  # type: ignore[no-untyped-def]
    from dataclasses import replace

    from lookup.search.analysis import analyze_query
    from lookup.search.bm25 import make_plan

    terms = analyze_query(" ".join(words))
    plan = make_plan(
        terms, [snap.df(t) for t in terms], snap.live_docs, snap.live_length, 7, 1.8e9, signals
    )
    for conjunctive in (True, False):
        yield (
            replace(plan, conjunctive=conjunctive, prune=False),
            replace(plan, conjunctive=conjunctive, exact_count=False),  # free to prune
        )


def _same_answers(snap, queries) -> None:  # type: ignore[no-untyped-def]
    """Pruned = exhaustive, with the planner's thresholds and with pruning forced on
    every query shape (every OR term probed, AND candidates in two rounds) — beside the
    compiled kernels (the planner then prunes OR alone, and may decline it) and without
    them (the numpy path, which prunes every shape)."""
    from lookup.search import kernels, pruning, shard

    with pytest.MonkeyPatch.context() as mp:
        _same_answers_now(snap, queries)  # the planner as served
        mp.setattr(shard, "PRUNE_MIN_POSTINGS", 0)  # these lists are short
        _same_answers_now(snap, queries)
        mp.setattr(shard, "KERNEL_PROBE_RATIO", 0.0)  # beside the kernels: OR never declined
        _same_answers_now(snap, queries)
        mp.setattr(shard, "AND_SEED", 0)
        mp.setattr(shard, "PROBE_RATIO", 0)
        mp.setattr(pruning, "PROBE_RATIO", 0)
        mp.setattr(pruning, "AND_SEED", 2)
        _same_answers_now(snap, queries)
        mp.setattr(kernels, "ready", lambda: False)  # the numpy path: every shape pruned
        _same_answers_now(snap, queries)


def _same_answers_now(snap, queries) -> None:  # type: ignore[no-untyped-def]
    from lookup.search import Signals

    for words in queries:
        for signals in (Signals.off(), Signals()):
            for exhaustive, pruned in _plans(snap, words, signals):
                for shard in snap.shards:
                    want, got = shard.search(exhaustive), shard.search(pruned)
                    assert got.hits == want.hits, (words, exhaustive.conjunctive)
                    assert got.mode == want.mode
                    assert (got.matched == 0) == (want.matched == 0)
                    if got.exact:  # the same total, or a lower bound that says it is one
                        assert got.matched == want.matched, (words, exhaustive.conjunctive)
                    else:
                        assert len(got.hits) <= got.matched <= want.matched
                    for h in got.hits:  # a deleted document is never returned
                        assert shard.segments[h.segment].live[h.doc]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layouts())
def test_any_shard_layout_with_deletes_prunes_to_the_exhaustive_answer(case) -> None:  # type: ignore[no-untyped-def]
    import tempfile

    from lookup.search import IndexVersion

    docs, shards, seg_docs, deleted, queries = case
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _build(root, [list(d) for d in docs], shards, seg_docs, deleted)
        snap = IndexVersion.open(root)
        assert snap is not None
        _same_answers(snap, queries)
        # merged: one segment per shard, written from live documents only
        from lookup.search.manifest import Manifest, SegmentEntry, publish, shard_dir
        from lookup.search.segment import merge_segments

        entries = []
        for s, shard in enumerate(snap.shards):
            views = [(v.reader, v.live) for v in shard.segments]
            if not views:
                entries.append([])
                continue
            info = merge_segments(views, shard_dir(root, s) / "merged")
            entries.append([SegmentEntry("merged", info.docs)])
        m = snap.manifest
        publish(root, Manifest(m.version + 1, m.shards, 0.0, m.source, entries, m.next_segment + 1))
        merged = IndexVersion.open(root)
        assert merged is not None and merged.live_docs == snap.live_docs
        _same_answers(merged, queries)


def test_a_format_2_segment_is_still_read_and_scored_exhaustively(
    tmp_path: Path, index_1: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Segments written before the block bounds existed answer exactly as before."""
    import json
    import shutil

    from lookup.search import IndexVersion, Signals

    old = tmp_path / "old"
    shutil.copytree(index_1, old)
    for meta in old.rglob("meta.json"):
        info = json.loads(meta.read_text())
        if "block" in info:  # a segment's meta, as format 2 wrote it: no bounds, no checksums
            info["format"] = 2
            info.pop("files", None)
            meta.write_text(json.dumps(info))
            (meta.parent / "skip_maxtf.npy").unlink()
            (meta.parent / "skip_mindl.npy").unlink()
    for manifest in old.glob("manifest-*.json"):  # nor did its manifests record any
        data = json.loads(manifest.read_text())
        data.pop("checksum", None)
        for entries in data["segments"]:
            for entry in entries:
                entry.pop("meta_checksum", None)
                entry.pop("tombstones_checksum", None)
        manifest.write_text(json.dumps(data))
    from lookup.search import shard

    monkeypatch.setattr(shard, "PRUNE_MIN_POSTINGS", 0)
    new_snap, old_snap = IndexVersion.open(index_1), IndexVersion.open(old)
    assert new_snap is not None and old_snap is not None
    view = old_snap.shards[0].segments[0]
    assert view.reader.skip_maxtf is None
    for words in (["heap"], ["list", "sort"], ["thread", "lock", "queue"], ["file"]):
        for exhaustive, pruned in _plans(new_snap, words, Signals()):
            lists = [view.reader.postings(t) for t in pruned.terms]
            assert not view.prunable(pruned, pruned.conjunctive, lists)
            want = new_snap.shards[0].search(exhaustive)
            assert old_snap.shards[0].search(pruned).hits == want.hits
            assert new_snap.shards[0].search(pruned).hits == want.hits


def test_a_coordinator_without_exact_counts_answers_the_same_pages(
    index_4: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the coordinator (4 shards, several segments each, signals on): pruned
    shards give the same pages; ``estimatedTotal`` is exact, or a lower bound said by
    ``totalRelation: gte``."""
    from lookup.search import Coordinator, IndexVersion, shard

    snap = IndexVersion.open(index_4)
    assert snap is not None
    monkeypatch.setattr(shard, "PRUNE_MIN_POSTINGS", 0)  # prune these short lists too
    exact, pruned = (
        Coordinator(deadline_ms=10_000),
        Coordinator(deadline_ms=10_000, track_total_hits=0),
    )
    try:
        for q in ("heap", "list sort", "thread lock queue", "file path", "zzzunknown", "os"):
            for page in (1, 2):
                a = exact.search(snap, q, page=page, limit=5, now=2e9)
                b = pruned.search(snap, q, page=page, limit=5, now=2e9)
                assert [(r["url"], r["score"]) for r in b["results"]] == [
                    (r["url"], r["score"]) for r in a["results"]
                ], q
                assert (b["estimatedTotal"] == 0) == (a["estimatedTotal"] == 0)
                assert "totalRelation" not in a
                if b.get("totalRelation") == "gte":
                    assert b["estimatedTotal"] <= a["estimatedTotal"], q
                else:
                    assert "totalRelation" not in b and b["estimatedTotal"] == a["estimatedTotal"]
    finally:
        exact.close()
        pruned.close()


def test_beside_the_kernels_the_planner_prunes_or_only_where_it_pays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 24: pruned AND lost to the compiled exhaustive kernel at every size, so beside
    the kernels AND is never pruned; OR is pruned only when MaxScore leaves most postings
    to probing (a rare word with a common one), declined otherwise (two common words) —
    and whichever plan runs, the page is the exhaustive one, bit for bit."""
    from lookup.search import IndexVersion, Signals, kernels, pruning, shard

    rng = np.random.default_rng(11)
    docs = []
    for i in range(3000):
        words = ["common"] * int(rng.integers(1, 4)) + ["usual"] * int(rng.integers(0, 3))
        words += ["rare"] * (1 + i % 3) if i % 100 == 0 else []
        docs.append(words + [f"filler{int(w)}" for w in rng.integers(0, 50, 8)])
    _build(tmp_path, docs, 1, 5000, set())
    snap = IndexVersion.open(tmp_path)
    assert snap is not None and kernels.ready()
    calls: list[tuple[bool, bool]] = []  # (conjunctive, pruned rather than declined)

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        res = pruning.prune_top_k(*args, **kwargs)
        calls.append((args[8], res is not None))
        return res

    monkeypatch.setattr(shard, "prune_top_k", spy)
    monkeypatch.setattr(shard, "PRUNE_MIN_POSTINGS", 0)  # these lists are short
    monkeypatch.setattr(shard, "AND_SEED", 0)  # the numpy path's own size rules: all met
    monkeypatch.setattr(shard, "PROBE_RATIO", 0)
    plans = {}
    for words in (["rare", "common"], ["common", "usual"]):
        for exhaustive, pruned in _plans(snap, words, Signals.off()):
            calls.clear()
            want, got = snap.shards[0].search(exhaustive), snap.shards[0].search(pruned)
            assert got.hits == want.hits and got.hits
            plans[(words[0], pruned.conjunctive)] = list(calls)
    assert plans[("rare", True)] == [] and plans[("common", True)] == []  # AND: the kernel
    assert plans[("rare", False)] == [(False, True)]  # MaxScore only probes "common"
    assert plans[("common", False)] == [(False, False)]  # declined: the kernel scores it


def test_the_or_kernel_scores_window_by_window_as_numpy_scores_the_whole_segment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 24: the compiled OR takes a segment 2,048 document ids at a time (a small
    accumulator, not one over the whole segment). Over a segment several windows long —
    lists that cross the windows' edges, one that starts in the last window, one with a
    posting at each end, deleted documents, signals off and on — its pages and counts are
    the numpy path's, bit for bit, whether the documents' lengths are numbered in 2 bytes
    (the usual case) or in 4 (a segment with more than 65,536 distinct lengths)."""
    from lookup.search import IndexVersion, Signals, kernels
    from lookup.search.bm25 import make_plan

    rng = np.random.default_rng(24)
    n = 3 * kernels._WINDOW + 900
    docs = []
    for i in range(n):
        words = ["alpha"] * int(i % 3 == 0) + ["beta"] * int(rng.integers(0, 3))
        words += ["gamma"] * int(rng.random() < 0.05) + ["delta"] * int(i >= n - 700)
        words += ["omega"] * int(i in (0, n - 1))
        docs.append(words + [f"w{int(w)}" for w in rng.integers(0, 400, int(rng.integers(1, 40)))])
    _build(tmp_path, docs, 1, n, set(range(5, n, 97)))
    snap = IndexVersion.open(tmp_path)
    assert snap is not None and kernels.ready()
    view = snap.shards[0].segments[0]
    assert view.reader.n_docs == n and not view.all_live and view._klen.dtype == np.uint16
    kernel_calls = []
    kernel_top = type(view).kernel_top

    def counted(self, plan, conjunctive, *args):  # type: ignore[no-untyped-def]
        kernel_calls.append(conjunctive)
        return kernel_top(self, plan, conjunctive, *args)

    monkeypatch.setattr(type(view), "kernel_top", counted)
    queries = [
        ["alpha", "beta"],
        ["beta", "gamma", "delta"],
        ["omega", "alpha"],
        ["delta", "gamma"],
        ["omega", "absent"],
        ["alpha", "beta", "gamma", "delta", "omega"],
    ]
    for width in (np.uint16, np.uint32):
        view._klen = view._klen.astype(width)
        for words in queries:
            for signals in (Signals.off(), Signals()):
                dfs = [snap.df(t) for t in words]
                plan = make_plan(words, dfs, snap.live_docs, snap.live_length, 25, 1.8e9, signals,
                                 conjunctive=False)  # fmt: skip
                kernel_calls.clear()
                got = snap.shards[0].search(plan)
                assert kernel_calls == [False], words  # the compiled OR answered
                with monkeypatch.context() as mp:
                    mp.setattr(kernels, "ready", lambda: False)  # the numpy path
                    want = snap.shards[0].search(plan)
                assert got.hits == want.hits and got.hits, (words, width)
                assert len(got.hits) == min(25, want.matched)
                assert got.matched == want.matched and got.exact and want.exact
                for h in got.hits:
                    assert view.live[h.doc]
