"""The radix trie: every stored top-k equals brute force over a plain dict."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.typeahead.trie import RadixTrie, TrieReader, brute_force_top, common_prefix_len

# a small alphabet (with a Devanagari conjunct's code points) so keys share prefixes
keys_st = st.text(alphabet="abक्ष ", min_size=1, max_size=7)
entries_st = st.dictionaries(keys_st, st.integers(0, 40), min_size=1, max_size=60)


def build(entries: dict[str, int], k: int = 10) -> TrieReader:
    trie = RadixTrie(k)
    for key, t in entries.items():
        trie.add(key, t)
    return TrieReader.from_arrays(trie.build())


def all_prefixes(keys) -> set[str]:  # type: ignore[no-untyped-def]
    return {key[:i] for key in keys for i in range(len(key) + 1)}


@settings(max_examples=150, deadline=None)
@given(entries_st, st.sampled_from([1, 3, 10]), st.text(alphabet="abक्षz ", max_size=4))
def test_top_k_matches_brute_force(entries: dict[str, int], k: int, extra: str) -> None:
    reader = build(entries, k)
    items = list(entries.items())
    for prefix in all_prefixes(entries) | {extra}:
        node = reader.locate(prefix)
        want = brute_force_top(items, prefix, k)
        got = list(reader.top(node)) if node >= 0 else []
        assert got == want, prefix
        if node >= 0:
            everything = {t for key, t in items if key.startswith(prefix)}
            assert reader.is_complete(node) == (len(everything) <= k)


@settings(max_examples=100, deadline=None)
@given(entries_st)
def test_keys_round_trip_and_exact_lookup(entries: dict[str, int]) -> None:
    reader = build(entries)
    assert sorted(reader.iter_keys()) == sorted(entries.items())
    for key, t in entries.items():
        assert reader.exact(key) == t
        assert reader.exact(key + "z") == -1


@settings(max_examples=100, deadline=None)
@given(entries_st)
def test_chains_are_collapsed(entries: dict[str, int]) -> None:
    trie = RadixTrie()
    for key, t in entries.items():
        trie.add(key, t)
    arrays = trie.build()
    reader = TrieReader.from_arrays(arrays)
    for node in range(1, reader.n_nodes):
        # a node that ends no key must branch, otherwise it would have been merged
        if reader.terminal(node) < 0:
            assert len(reader.children(node)) >= 2
        kids = [reader.label(c)[0] for c in reader.children(node)]
        assert kids == sorted(kids) and len(set(kids)) == len(kids)
    # a plain trie has one node per distinct prefix (the root is the empty prefix)
    assert arrays.plain_nodes == len(all_prefixes(entries))
    assert arrays.n_nodes <= 2 * len(entries)


@settings(max_examples=100, deadline=None)
@given(entries_st, st.sets(st.integers(0, 40), max_size=8), st.integers(1, 10))
def test_top_excluding_refills_exactly(
    entries: dict[str, int], excluded: set[int], limit: int
) -> None:
    reader = build(entries)
    items = list(entries.items())
    for prefix in all_prefixes(entries):
        node = reader.locate(prefix)
        want = sorted({t for key, t in items if key.startswith(prefix)} - excluded)[:limit]
        assert reader.top_excluding(node, limit, frozenset(excluded)) == want


def test_aliases_are_never_complete() -> None:
    trie = RadixTrie()
    trie.add("kya hai", 0)
    trie.add("kyaa hai", 0, alias=True)
    reader = TrieReader.from_arrays(trie.build())
    assert list(reader.top(reader.locate("kyaa"))) == [0]
    assert not reader.is_complete(reader.locate("ky"))
    assert reader.is_complete(reader.locate("kya "))


def test_duplicate_key_keeps_the_better_target() -> None:
    trie = RadixTrie()
    trie.add("ip", 5)
    trie.add("ip", 2)
    trie.add("ip", 7)
    assert TrieReader.from_arrays(trie.build()).exact("ip") == 2


def test_walk_reports_the_path() -> None:
    trie = RadixTrie()
    for i, key in enumerate(["iphone", "iphone 17", "ipl", "india"]):
        trie.add(key, i)
    reader = TrieReader.from_arrays(trie.build())
    node, steps = reader.walk("iph")
    assert node == reader.locate("iph")
    assert [s.label for s in steps] == ["", "i", "p", "hone"]
    assert steps[-1].depth == 3


@given(st.text(max_size=12), st.text(max_size=12))
def test_common_prefix_len(a: str, b: str) -> None:
    n = common_prefix_len(a, b)
    assert a[:n] == b[:n]
    assert n == min(len(a), len(b)) or a[n] != b[n]
