"""The fast walk (shortcut dict + first-code-point string) agrees with the plain walk."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.typeahead.trie import RadixTrie, TrieReader, _code_points_str, brute_force_top

# Latin, a Devanagari conjunct's code points and a non-BMP emoji, so keys share prefixes
# and the first-code-point string is decoded from 1-, 2- and 4-byte code points
keys_st = st.text(alphabet="abक्ष 😀", min_size=1, max_size=9)
entries_st = st.dictionaries(keys_st, st.integers(0, 40), min_size=1, max_size=60)
# budgets from "root only" (every lookup walks) to the default (short tries: all shortcuts)
budgets_st = st.sampled_from([1, 2, 5, 20, None])


def build(entries: dict[str, int], budget: int | None) -> TrieReader:
    trie = RadixTrie()
    for key, t in entries.items():
        trie.add(key, t)
    return TrieReader.from_arrays(trie.build(), shortcut_budget=budget)


def prefixes_and_misses(keys) -> set[str]:  # type: ignore[no-untyped-def]
    out = {key[:i] for key in keys for i in range(len(key) + 1)}
    # one step off the trie after every prefix: a wrong child, a wrong code point mid-edge
    return out | {p + c for p in out for c in "bz😀"}


@settings(max_examples=150, deadline=None)
@given(entries_st, budgets_st)
def test_locate_agrees_with_the_plain_walk_and_brute_force(
    entries: dict[str, int], budget: int | None
) -> None:
    reader = build(entries, budget)
    items = list(entries.items())
    for prefix in prefixes_and_misses(entries):
        node = reader.locate(prefix)
        assert node == reader.walk(prefix)[0], prefix
        want = brute_force_top(items, prefix)
        assert (list(reader.top(node)) if node >= 0 else []) == want, prefix


@settings(max_examples=100, deadline=None)
@given(entries_st, budgets_st)
def test_exact_with_the_fast_child_search(entries: dict[str, int], budget: int | None) -> None:
    reader = build(entries, budget)
    for prefix in prefixes_and_misses(entries):
        assert reader.exact(prefix) == entries.get(prefix, -1), prefix


def test_shortcut_levels_stay_within_the_budget() -> None:
    trie = RadixTrie()
    for i, key in enumerate(["iphone", "iphone 17", "ipl", "india", "zebra"]):
        trie.add(key, i)
    arrays = trie.build()
    # levels: "" (1), "i" "z" (2), "ip" "in" "ze" (3), ... — a level is all or nothing
    assert TrieReader.from_arrays(arrays, shortcut_budget=1)._short_depth == 0
    assert TrieReader.from_arrays(arrays, shortcut_budget=5)._short_depth == 1
    assert TrieReader.from_arrays(arrays, shortcut_budget=6)._short_depth == 2
    for budget in (1, 3, 6, 9, 100):
        reader = TrieReader.from_arrays(arrays, shortcut_budget=budget)
        assert len(reader._short) <= max(1, budget)
        for p in ["", "i", "ip", "iph", "iphone 1", "ind", "inx", "z", "zeb", "q", "iphone 17x"]:
            assert reader.locate(p) == reader.walk(p)[0], (budget, p)


def test_code_points_str_decodes_every_width() -> None:
    assert _code_points_str([]) == ""
    assert _code_points_str([0, 97, 98]) == "\0ab"
    assert _code_points_str([97, 0x915, 0x1F600]) == "aक😀"
    assert _code_points_str([97, 0xD800]) == "a\ud800"  # a lone surrogate still decodes
