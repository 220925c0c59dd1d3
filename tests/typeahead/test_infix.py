"""Word-anywhere suggestions (issue 27 item 8): the infix index against a brute-force scan.

The oracle reads every suggestion string of the snapshot and keeps those whose words
hold each whole word of the query and a word starting with its last one, in id (rank)
order; the index must give exactly its first answers, whatever is left out.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lookup.typeahead import infix
from lookup.typeahead.serving import SuggestService
from lookup.typeahead.snapshot import Snapshot, write_snapshot
from lookup.typeahead.trie import RadixTrie
from tests.typeahead.conftest import Built


def brute(strings: list[str], p: str, need: int, skip: set[int]) -> list[int]:
    """The first ``need`` ids whose suggestion matches ``p`` word-anywhere."""
    tokens = p.split()
    if not tokens:
        return []
    whole, last = (tokens, None) if p.endswith(" ") else (tokens[:-1], tokens[-1])
    out = []
    for i, s in enumerate(strings):
        have = s.split()
        if i in skip or any(w not in have for w in whole):
            continue
        if last is not None and not any(h[: len(last)] == last for h in have):
            continue
        out.append(i)
        if len(out) == need:
            break
    return out


WORDS = st.sampled_from(["live", "score", "ipl", "ind", "pak", "li", "sc", "s", "iplt", "x"])
PHRASES = st.lists(WORDS, min_size=1, max_size=4).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(
    strings=st.lists(PHRASES, min_size=0, max_size=120, unique=True),
    query=st.lists(st.sampled_from(["live", "sc", "s", "ip", "ipl", "x", "pak", "zz", "l"]),
                   min_size=1, max_size=3).map(" ".join),
    trailing=st.booleans(),
    need=st.integers(1, 12),
    skip_share=st.floats(0, 0.9),
    k=st.sampled_from([1, 2, 4, infix.TREE_K]),
)  # fmt: skip
def test_the_index_equals_a_brute_force_scan(
    strings: list[str], query: str, trailing: bool, need: int, skip_share: float, k: int
) -> None:
    arrays = infix.build(strings, k)
    views = {name: data for name, _, data in infix.sections(arrays)}
    views["infix_words"] = views["infix_words"].decode()
    index = infix.InfixIndex(views, k)
    p = query + (" " if trailing else "")
    rng = np.random.default_rng(len(strings) + need)
    skip = {i for i in range(len(strings)) if rng.random() < skip_share}
    assert index.find(p, need, skip) == brute(strings, p, need, skip)


def test_matches_is_the_rule_the_oracle_states() -> None:
    assert infix.matches("ind vs pak live score", "score")
    assert infix.matches("ipl live score", "live ipl")
    assert not infix.matches("ipl score", "live ipl")
    assert infix.matches("live ipl", "ipl live ")
    assert not infix.matches("live iplt", "live ipl ")


def _snapshot(tmp_path: Path, strings: list[str], *, with_infix: bool) -> Snapshot:
    trie = RadixTrie(10)
    for i, s in enumerate(strings):
        trie.add(s, i)
    scores = np.arange(len(strings), 0, -1, dtype=np.float64)
    path = write_snapshot(tmp_path / "x.trie", "en-IN", trie.build(), strings, scores,
                          infix=with_infix)  # fmt: skip
    return Snapshot(path)


STRINGS = ["ipl live score", "ind vs pak live score", "india", "live ipl auction", "scores"]


def test_the_snapshot_carries_the_index_and_reports_its_memory(tmp_path: Path) -> None:
    snap = _snapshot(tmp_path, STRINGS, with_infix=True)
    assert snap.infix is not None
    summary = snap.summary()
    assert summary["infixBytes"] == snap.infix.nbytes > 0
    assert summary["trieBytes"] > 0
    assert [snap.string(i) for i in snap.infix.find("score", 10)] == [
        "ipl live score", "ind vs pak live score", "scores"
    ]  # fmt: skip


def test_an_old_snapshot_without_the_index_still_loads_with_the_fallback_off(
    tmp_path: Path,
) -> None:
    snap = _snapshot(tmp_path, STRINGS, with_infix=False)
    assert snap.infix is None
    assert snap.summary()["infixBytes"] == 0
    assert snap.suggest("ipl") == ["ipl live score"]


def test_the_service_appends_infix_answers_after_the_prefix_ones(built: Built) -> None:
    service = SuggestService.from_data_dir(built.data_dir)
    try:
        snap = service.snapshot("en-IN")
        result = service.lookup("score", "en-IN")
        prefix = snap.suggest("score")
        assert result.suggestions[: len(prefix)] == prefix
        body = result.body()
        # the prefix answers, then the infix ones (then any typo-corrected ones)
        match = body["match"]
        assert match[: len(prefix)] == ["prefix"] * len(prefix)
        assert match[len(prefix) : len(prefix) + result.infix] == ["infix"] * result.infix
        assert set(match[len(prefix) + result.infix :]) <= {"typo"}
        extra = result.suggestions[len(prefix) : len(prefix) + result.infix]
        assert "ind vs pak live score" in extra
        assert not result.complete
        strings = snap.strings()
        shown = {snap.exact(s) for s in prefix}
        want = brute(strings, "score", 10 - len(prefix), shown)
        assert extra == [strings[i] for i in want]
        # a full prefix answer asks the index nothing and says nothing new
        full = service.lookup("i", "en-IN")
        assert full.infix == 0 and "match" not in full.body()
    finally:
        service.close()


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_service_answers_equal_the_oracle_on_the_real_snapshot(
    built: Built, data: st.DataObject
) -> None:
    service = SuggestService.from_data_dir(built.data_dir)
    try:
        snap = service.snapshot("en-IN")
        strings = snap.strings()
        s = data.draw(st.sampled_from(strings))
        words = s.split()
        start = data.draw(st.integers(0, len(words) - 1))
        cut = data.draw(st.integers(1, len(words[-1]) if start == len(words) - 1 else 3))
        p = " ".join(words[start:])
        p = p[: max(1, len(p) - cut + 1)]
        result = service.lookup(p, "en-IN")
        if result.infix:
            match = result.body()["match"]
            n_prefix = match.count("prefix")
            shown = {snap.exact(x) for x in result.suggestions[:n_prefix]}
            got = result.suggestions[n_prefix : n_prefix + result.infix]
            assert all(infix.matches(x, p) for x in got)
            want = brute(strings, p, 10 - n_prefix, shown)
            assert got == [strings[i] for i in want]
    finally:
        service.close()


def test_infix_answers_over_http(built: Built, tmp_path: Path) -> None:
    import shutil

    import httpx

    from tests.conftest import running_lookup

    data = tmp_path / "data"
    shutil.copytree(built.data_dir, data)
    with running_lookup(data, timeout=120) as url, httpx.Client(base_url=url, timeout=30) as c:
        r = c.get("/v1/suggest", params={"q": "score"})
        assert r.status_code == 200 and "public" in r.headers["cache-control"]
        body = r.json()
        assert "ind vs pak live score" in body["suggestions"]
        marked = dict(zip(body["suggestions"], body["match"], strict=True))
        assert marked["ind vs pak live score"] == "infix"
        assert body["match"].index("infix") == body["match"].count("prefix")  # after them
        current = c.get("/v1/typeahead/snapshots").json()
        text = str(current)
        assert "'infixBytes'" in text and "'trieBytes'" in text
        schema = c.get("/openapi.json").json()["paths"]["/v1/suggest"]["get"]
        assert "match" in str(schema["responses"]["200"])
