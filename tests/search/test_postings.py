"""Posting codec and skip lists: round trips (hypothesis) and set-algebra oracles."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.search.postings import (
    BLOCK,
    PostingList,
    decode_all,
    decode_varints,
    encode_postings,
    encode_varint,
    encode_varints,
    intersect_cursors,
    read_varint,
    segmented_cumsum,
    varint_sizes,
)

ints = st.integers(min_value=0, max_value=(1 << 63) - 1)


def test_known_leb128_vectors() -> None:
    # LEB128 examples from the DWARF specification / protobuf documentation
    assert encode_varint(0) == b"\x00"
    assert encode_varint(127) == b"\x7f"
    assert encode_varint(128) == b"\x80\x01"
    assert encode_varint(300) == b"\xac\x02"
    assert encode_varint(624485) == b"\xe5\x8e\x26"
    assert bytes(encode_varints(np.array([300, 624485]))) == b"\xac\x02\xe5\x8e\x26"


@given(st.lists(ints, max_size=200))
def test_varint_round_trip_and_agrees_with_scalar_codec(values: list[int]) -> None:
    enc = encode_varints(np.array(values, dtype=np.uint64))
    assert bytes(enc) == b"".join(encode_varint(v) for v in values)
    assert decode_varints(enc).tolist() == values
    assert varint_sizes(np.array(values, dtype=np.uint64)).sum() == enc.size
    pos, out = 0, []
    while pos < enc.size:
        v, pos = read_varint(enc, pos)
        out.append(v)
    assert out == values


def test_truncated_varint_is_rejected() -> None:
    with pytest.raises(ValueError):
        decode_varints(np.array([0x80, 0x80], dtype=np.uint8))


@given(st.lists(st.lists(st.integers(0, 50), max_size=8), max_size=10))
def test_segmented_cumsum_matches_per_group_cumsum(groups: list[list[int]]) -> None:
    flat = np.array([x for g in groups for x in g], dtype=np.int64)
    lens = np.array([len(g) for g in groups], dtype=np.int64)
    expected = [x for g in groups for x in np.cumsum(g).tolist()] if groups else []
    assert segmented_cumsum(flat, lens).tolist() == expected


@st.composite
def term_postings(draw: st.DrawFn) -> list[dict[int, list[int]]]:
    """Per term: doc id → sorted distinct positions."""
    n_terms = draw(st.integers(1, 5))
    out = []
    for _ in range(n_terms):
        docs = draw(st.lists(st.integers(0, 3000), unique=True, max_size=400))
        out.append(
            {
                d: sorted(draw(st.lists(st.integers(0, 5000), min_size=1, max_size=4, unique=True)))
                for d in sorted(docs)
            }
        )
    return out


def _encode(terms: list[dict[int, list[int]]], codec: str = "packed") -> list[PostingList]:
    tids, docs, tfs, pos = [], [], [], []
    for t, plist in enumerate(terms):
        for d, ps in plist.items():
            tids.append(t)
            docs.append(d)
            tfs.append(len(ps))
            pos.extend(ps)
    enc = encode_postings(
        len(terms),
        np.array(tids, np.int64),
        np.array(docs, np.int64),
        np.array(tfs, np.int64),
        np.array(pos, np.int64),
        codec=codec,
    )
    lists = []
    for t in range(len(terms)):
        s = int(enc.skip_start[t])
        nb = (int(enc.df[t]) + BLOCK - 1) // BLOCK
        lists.append(
            PostingList(
                enc.postings,
                int(enc.df[t]),
                int(enc.post_off[t]),
                int(enc.post_len[t]),
                enc.block_last[s : s + nb],
                enc.block_off[s : s + nb],
                enc.positions,
                int(enc.pos_off[t]),
                int(enc.pos_len[t]),
                int(enc.widths[t]),
                enc.block_pos[s : s + nb],
            )
        )
    return lists


@pytest.mark.parametrize("codec", ["packed", "varint"])
@settings(max_examples=60, deadline=None)
@given(term_postings(), st.lists(st.integers(0, 3100), max_size=60))
def test_postings_round_trip_blocks_lookup_and_positions(
    codec: str, terms: list[dict[int, list[int]]], probes: list[int]
) -> None:
    lists = _encode(terms, codec)
    for plist, pl in zip(terms, lists, strict=True):
        docs, tfs = pl.decode()
        assert docs.tolist() == list(plist)
        assert tfs.tolist() == [len(p) for p in plist.values()]
        # skip table: last doc of each block
        assert pl.block_last.tolist() == list(plist)[BLOCK - 1 :: BLOCK] + (
            [list(plist)[-1]] if len(plist) % BLOCK else []
        )
        # any subset of blocks decodes to the same postings as the whole list
        if pl.blocks:
            some = np.arange(0, pl.blocks, 2)
            bd, bt = pl.decode_blocks(some)
            expect = [i for b in some for i in range(b * BLOCK, min((b + 1) * BLOCK, pl.df))]
            assert bd.tolist() == [docs[i] for i in expect]
            assert bt.tolist() == [tfs[i] for i in expect]
        targets = np.array(sorted(set(probes)), dtype=np.int64)
        found, ftf, _ = pl.lookup(targets)
        assert targets[found].tolist() == [t for t in targets.tolist() if t in plist]
        assert ftf.tolist() == [len(plist[t]) for t in targets[found].tolist()]
        if pl.df:
            assert [p.tolist() for p in pl.positions()] == list(plist.values())
    # the whole-segment decoder agrees with list-by-list decoding
    enc_df = np.array([pl.df for pl in lists], np.int64)
    enc_off = np.array([pl.off for pl in lists], np.int64)
    widths = np.array([pl.widths for pl in lists], np.int64)
    all_docs, all_tfs = decode_all(lists[0].buf, enc_df, enc_off, widths)
    assert all_docs.tolist() == [d for plist in terms for d in plist]
    assert all_tfs.tolist() == [len(p) for plist in terms for p in plist.values()]


def test_packed_lists_use_the_narrowest_width_and_wide_values_survive() -> None:
    docs = {0: [1], 300: [2], 70_000: [3], 2**32 - 1: [4]}
    small = {1: [1], 2: [1, 2, 3]}
    wide, narrow = _encode([docs, small])
    assert wide.widths & 0xF == 4 and wide.widths >> 4 == 1  # a gap needs 4 bytes, tfs 1
    assert narrow.widths == 1 | (1 << 4)
    assert narrow.length == 2 * (1 + 1)
    assert wide.decode()[0].tolist() == list(docs)
    with pytest.raises(ValueError):
        _encode([{2**32: [1]}])


@pytest.mark.parametrize("codec", ["packed", "varint"])
@settings(max_examples=60, deadline=None)
@given(term_postings())
def test_cursor_intersection_equals_set_intersection(
    codec: str, terms: list[dict[int, list[int]]]
) -> None:
    lists = _encode(terms, codec)
    expected = sorted(set.intersection(*(set(t) for t in terms)))
    with_skips, _ = intersect_cursors(lists, use_skips=True)
    without, _ = intersect_cursors(lists, use_skips=False)
    assert with_skips == expected
    assert without == expected
    # cursor advance agrees with a linear scan for every target
    pl = lists[0]
    docs = list(terms[0])
    for target in (0, 7, 100, 1500, 2999, 4000):
        c = pl.cursor()
        got = c.advance(target)
        nxt = next((d for d in docs if d >= target), c.END)
        assert got == nxt
        if got != c.END:
            assert c.tf == len(terms[0][got])


def test_skips_cut_the_work_of_a_short_long_intersection() -> None:
    rng = np.random.default_rng(3)
    long_docs = np.sort(rng.choice(200_000, 50_000, replace=False))
    short_docs = np.sort(rng.choice(long_docs, 20, replace=False))
    terms = [{int(d): [1] for d in long_docs}, {int(d): [2] for d in short_docs}]
    lists = _encode(terms)
    got_skip, cost_skip = intersect_cursors(lists, use_skips=True)
    got_scan, cost_scan = intersect_cursors(lists, use_skips=False)
    assert got_skip == got_scan == short_docs.tolist()
    # without skips the long list is read up to the last candidate
    assert cost_scan >= int(np.searchsorted(long_docs, short_docs[-1])) + 1
    # with skips: the short list plus about one block of the long list per candidate
    assert cost_skip <= short_docs.size + (short_docs.size + 1) * BLOCK
    assert cost_skip * 10 < cost_scan
    _, _, decoded = lists[0].lookup(short_docs)
    assert decoded <= short_docs.size * BLOCK


def test_encode_rejects_unsorted_postings() -> None:
    with pytest.raises(ValueError):
        encode_postings(1, np.array([0, 0]), np.array([5, 3]), np.array([1, 1]), np.array([0, 0]))
    with pytest.raises(ValueError):
        encode_postings(1, np.array([0]), np.array([5]), np.array([2]), np.array([0]))
