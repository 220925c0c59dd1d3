"""The typo-tolerant walk of the trie against brute force over every key.

Two oracles: with plain costs (no keyboard neighbours, the first character like any other)
the walk must find exactly the keys whose best prefix is within the budget by
``rapidfuzz``'s OSA distance — an independent implementation; with the served costs, the
plain dynamic programme of :func:`~lookup.typeahead.fuzzy.prefix_distance` (no trie, no
band, no pruning). Then the ranking of the corrections, the work bound, and the budget rule.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz.distance import OSA

from lookup.typeahead.fuzzy import (
    NEIGHBOURS,
    TYPO,
    TypoPolicy,
    best_corrections,
    fuzzy_walk,
    highlight,
    prefix_distance,
    transliterations,
)
from lookup.typeahead.trie import RadixTrie, TrieReader

# letters with QWERTY neighbours among them (q-w, w-e, a-s, s-d, m-n) and a vowel sign
keys_st = st.text(alphabet="qwesadmn ि", min_size=1, max_size=8)
entries_st = st.dictionaries(keys_st, st.integers(0, 60), min_size=1, max_size=50)
query_st = st.text(alphabet="qwesadmn ि", min_size=1, max_size=7)
NONE: frozenset[tuple[str, str]] = frozenset()
ALPHABET = "qwesadmn ि"


@st.composite
def near_query(draw: st.DrawFn, entries: dict[str, int]) -> str:
    """Mostly a prefix of a key with up to two random edits (swap, drop, add, replace),
    so that matches within the budget are common; sometimes any text."""
    if draw(st.booleans()) and draw(st.booleans()):
        return draw(query_st)
    key = draw(st.sampled_from(sorted(entries)))
    q = list(key[: draw(st.integers(1, len(key)))])
    for _ in range(draw(st.integers(0, 2))):
        op = draw(st.sampled_from(["swap", "drop", "add", "replace"]))
        i = draw(st.integers(0, len(q)))
        if op == "swap" and i + 1 < len(q):
            q[i], q[i + 1] = q[i + 1], q[i]
        elif op == "drop" and i < len(q) and len(q) > 1:
            del q[i]
        elif op == "add":
            q.insert(i, draw(st.sampled_from(ALPHABET)))
        elif op == "replace" and i < len(q):
            q[i] = draw(st.sampled_from(ALPHABET))
    return "".join(q)


cases_st = entries_st.flatmap(lambda e: st.tuples(st.just(e), near_query(e)))


def _reader(entries: dict[str, int]) -> TrieReader:
    trie = RadixTrie()
    for key, target in entries.items():
        trie.add(key, target)
    return TrieReader.from_arrays(trie.build())


def _walked_costs(reader: TrieReader, hits: list) -> dict[str, int]:  # type: ignore[type-arg]
    """key → the smallest cost of a hit above it."""
    out: dict[str, int] = {}
    for hit in hits:
        for key, _ in reader.iter_keys(hit.node, _path_of(reader, hit.node)):
            out[key] = min(out.get(key, hit.cost), hit.cost)
    return out


def _path_of(reader: TrieReader, node: int) -> str:
    """The string from the root to the start of ``node``'s label (its parent's path)."""
    parents = {}
    for n in range(reader.n_nodes):
        for c in reader.children(n):
            parents[c] = n
    path = []
    n = parents.get(node)
    while n:
        path.append(reader.label(n))
        n = parents.get(n)
    return "".join(reversed(path))


@settings(max_examples=200, deadline=None)
@given(cases_st, st.sampled_from([1, 2]))
def test_plain_walk_equals_rapidfuzz(case: tuple[dict[str, int], str], typos: int) -> None:
    entries, query = case
    reader = _reader(entries)
    walk = fuzzy_walk(reader, query, typos * TYPO, 10**9, NONE, first_double=False)
    assert not walk.exhausted
    want = {}
    for key in entries:
        d = min(OSA.distance(query, key[:j]) for j in range(len(key) + 1)) * TYPO
        if d <= typos * TYPO:
            want[key] = d
    assert _walked_costs(reader, walk.hits) == want


@settings(max_examples=200, deadline=None)
@given(cases_st, st.sampled_from([1, 2]))
def test_served_walk_equals_the_plain_programme(
    case: tuple[dict[str, int], str], typos: int
) -> None:
    entries, query = case
    reader = _reader(entries)
    walk = fuzzy_walk(reader, query, typos * TYPO, 10**9)
    want = {}
    for key in entries:
        cost, _ = prefix_distance(query, key)
        if cost <= typos * TYPO:
            want[key] = cost
    assert _walked_costs(reader, walk.hits) == want


@settings(max_examples=150, deadline=None)
@given(cases_st, st.integers(1, 10), st.frozensets(st.integers(0, 60), max_size=5))
def test_corrections_rank_by_typos_then_popularity(
    case: tuple[dict[str, int], str], limit: int, excluded: frozenset[int]
) -> None:
    entries, query = case
    reader = _reader(entries)
    walk = fuzzy_walk(reader, query, 2 * TYPO, 10**9)
    got = best_corrections(reader, walk.hits, limit, excluded)
    best: dict[int, int] = {}
    for key, target in entries.items():
        cost, _ = prefix_distance(query, key)
        if cost <= 2 * TYPO and target not in excluded:
            best[target] = min(best.get(target, cost), cost)
    want = sorted(best.items(), key=lambda kv: (kv[1], kv[0]))[:limit]
    assert [(c.target, c.cost) for c in got] == want


@settings(max_examples=100, deadline=None)
@given(cases_st, st.integers(1, 30))
def test_a_cut_walk_stays_within_its_budget_and_finds_only_true_matches(
    case: tuple[dict[str, int], str], budget: int
) -> None:
    entries, query = case
    reader = _reader(entries)
    walk = fuzzy_walk(reader, query, 2 * TYPO, budget)
    assert walk.rows <= budget
    full = _walked_costs(reader, fuzzy_walk(reader, query, 2 * TYPO, 10**9).hits)
    for key, cost in _walked_costs(reader, walk.hits).items():
        assert cost >= full[key]


def test_a_swap_is_one_typo_and_a_neighbour_slip_half() -> None:
    assert prefix_distance("ipohne", "iphone 15")[0] == TYPO  # Levenshtein would say 2
    assert prefix_distance("iphomw", "iphone")[0] == TYPO  # m|n and w|e: two slips
    assert prefix_distance("iphonr", "iphone")[0] == 1
    assert prefix_distance("xphone", "iphone")[0] == 2 * TYPO  # the first letter counts twice
    assert ("n", "m") in NEIGHBOURS and ("a", "p") not in NEIGHBOURS


def test_the_budget_follows_the_length() -> None:
    policy = TypoPolicy()
    assert [policy.typos(n) for n in (1, 3, 4, 7, 8, 20)] == [0, 0, 1, 1, 2, 2]
    assert TypoPolicy(enabled=False).typos(10) == 0


def test_highlights_and_transliteration() -> None:
    assert highlight("iph", "iphone 15") == [[0, 3]]
    assert highlight("ipohne", "iphone 15") == [[0, 6]]
    assert highlight("xyz", "iphone") == []
    assert transliterations("dilli") == ["दिल्लि"]
    assert transliterations("mosam") == ["मोसम"]  # no virama left on the last consonant
    assert transliterations("दिल्ली") == []
