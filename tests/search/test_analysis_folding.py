"""Accent folding, Thai segmentation and ``C++``/``C#`` tokens (issue 28 item 2).

Folding is checked against ``unidecode`` (an independent ASCII transliteration) on
Latin words, and left alone on other scripts; Thai against PyThaiNLP's ``newmm`` called
directly. Over the real ``GET /search``: ``cafe`` finds ``café``, ``resume`` finds
``résumé``, ``naive`` finds ``naïve``, the accent as typed ranks first and is highlighted,
and the matches equal a brute force over the pages' unidecoded words. An index built
with the old analysis is refused with ``INDEX_OUTDATED`` until ``lookup index`` rebuilds it.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient
from unidecode import unidecode

from lookup.search import build_index
from lookup.search.analysis import (
    ANALYSIS_VERSION,
    analyze,
    analyze_document,
    analyze_query,
    fold,
    normalize_word,
    stem,
    words_of,
)
from lookup.search.manifest import CURRENT, _manifest_checksum
from lookup.server import create_app
from tests.search.corpus import CrawlWriter, Page

SEARCH = ["lookup.search.http:mount"]

#: Latin letters with diacritics (and the few without a decomposition) that ES folds.
ACCENTED = (
    "àáâãäåçèéêëìíîïñòóôõöøùúûüýÿāăąćĉċčďđēĕėęěĝğġģĥħĩīĭįĵķĺļľłńņňōŏőœŕŗřśŝşšţťŧũūŭůűųŵŷźżžæßðþ"
)
LATIN = st.text(alphabet="abcdefghijklmnopqrstuvwxyz" + ACCENTED, min_size=1, max_size=12)


# ------------------------------------------------------------------ folding, unit level


@given(LATIN)
def test_folding_agrees_with_unidecode_on_latin_words(word: str) -> None:
    norm = normalize_word(word)
    assert fold(norm) == unidecode(norm).lower()
    assert fold(norm).isascii()


@given(st.text(alphabet="αβγδεζηθικλμνξοπρστυφχψωάέήίόύώ", min_size=1, max_size=8))
def test_other_scripts_are_not_folded(word: str) -> None:
    assert fold(normalize_word(word)) == normalize_word(word)


@pytest.mark.parametrize("word", ["हिन्दी", "किताबें", "日本語", "한국어", "ภาษาไทย", "Ελληνικά"])
def test_marks_of_other_scripts_stay(word: str) -> None:
    w = normalize_word(word)
    assert fold(w) == w  # Devanagari's vowel signs are combining marks too: never dropped


@settings(max_examples=60)
@given(st.lists(LATIN, min_size=1, max_size=8))
def test_an_accented_text_has_the_terms_of_its_ascii_spelling(words: list[str]) -> None:
    """The index terms of a text are those of its unidecoded text, at the same positions;
    each folded word's original is stacked at its position and adds nothing to the length."""
    text = " ".join(words)
    a, plain = analyze(text), analyze(unidecode(text))
    assert a.terms == plain.terms and a.positions == plain.positions and a.words == plain.words
    originals = [(t, p) for t, p in a.stacked if not t.startswith("gram:")]
    for term, pos in originals:
        assert pos in a.positions and not term.isascii()
    grams = [s for s in a.stacked if s[0].startswith("gram:")]
    assert grams == [s for s in plain.stacked if s[0].startswith("gram:")]


def test_the_original_spelling_is_stacked_beside_the_folded_term() -> None:
    a = analyze("Café au lait for a naïve résumé")
    assert a.terms == ["cafe", "au", "lait", "naiv", "resum"]
    assert ("café", 0) in a.stacked and ("naïv", 5) in a.stacked and ("résumé", 6) in a.stacked
    assert analyze("café cafè").stacked == (("café", 0), ("cafè", 1))  # each its own spelling
    assert analyze_query("cafe") == analyze_query("café") == analyze_query("CAFÉ") == ["cafe"]
    assert analyze_query("resume") == analyze_query("résumé")
    assert analyze_query("naive") == analyze_query("naïve")


# ------------------------------------------------------------------ Thai and C++/C#


def test_thai_is_segmented_by_newmm_with_its_shipped_dictionary() -> None:
    from pythainlp.tokenize import word_tokenize

    text = "ภาษาไทยง่ายนิดเดียว"
    assert words_of(text) == word_tokenize(text, engine="newmm", keep_whitespace=False)
    a = analyze(f"Learn {text} today")
    assert a.terms == ["learn", *word_tokenize(text, engine="newmm"), "today"]
    assert a.positions == [0, 1, 2, 3, 4]


@settings(max_examples=40)
@given(
    st.lists(
        st.sampled_from(["สวัสดี", "ครับ", "ภาษาไทย", "ง่าย", "โรงเรียน", "หนังสือ"]),
        min_size=1,
        max_size=6,
    )
)
def test_thai_runs_are_cut_as_newmm_cuts_them(parts: list[str]) -> None:
    from pythainlp.tokenize import word_tokenize

    run = "".join(parts)
    assert words_of(run) == [w for w in word_tokenize(run, engine="newmm") if w.strip()]
    assert "".join(words_of(run)) == run


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("C++ and C# and F#", ["c++", "and", "c#", "and", "f#"]),
        ("g++ -O2 (C++17)", ["g++", "o2", "c", "17"]),  # C++17: ++ followed by a digit
        ("issue#42 and #tag", ["issue", "42", "and", "tag"]),
        ("a+b c+++", ["a", "b", "c"]),
        ("Ç# and naïve++", ["ç#", "and", "naïve++"]),
    ],
)
def test_cpp_and_csharp_stay_tokens(text: str, words: list[str]) -> None:
    assert words_of(text) == words


@given(st.text(alphabet="abcC+#1 ", max_size=30))
def test_a_marked_token_is_letters_then_plus_plus_or_hash(text: str) -> None:
    for w in words_of(text):
        core = w.removesuffix("++").removesuffix("#")
        assert core and re.fullmatch(r"[a-z0-9]+", core), w
        if core != w:
            assert core[-1].isalpha()


def test_cpp_csharp_and_c_are_three_terms() -> None:
    assert analyze_query("C++") == ["c++"]
    assert analyze_query("C#") == ["c#"]
    assert analyze_query("C") == ["c"]


# ------------------------------------------------------------------ over HTTP

PAGES = [
    Page("http://a.test/cafe.html", "Café culture", "The café serves espresso near the river."),
    Page("http://a.test/menu.html", "Cafe menu", "Our cafe menu lists espresso and tea."),
    Page("http://a.test/resume.html", "Résumé tips", "Write a résumé that recruiters read."),
    Page("http://a.test/naive.html", "Naïve Bayes", "A naïve classifier counts word evidence."),
    Page("http://a.test/naive2.html", "Naive art", "Naive painters ignore perspective rules."),
    Page(
        "http://b.test/cpp.html", "C++ templates", "Templates in C++ generate code at compile time."
    ),
    Page("http://b.test/cs.html", "C# generics", "Generics in C# keep types at run time."),
    Page("http://b.test/c.html", "C pointers", "Pointers in C address memory directly."),
    Page("http://b.test/th.html", "Thai lesson", "บทเรียน ภาษาไทยง่ายนิดเดียว สำหรับผู้เริ่มต้น"),
    Page("http://b.test/other.html", "Tea", "Green tea and black tea from the hills."),
]


def _oracle(query: str) -> set[str]:
    """Brute force, independent of the engine's folding: a page matches when every word of
    the unidecoded query is, stemmed, among the stems of its unidecoded title and text."""
    terms = [t for t in stem(re.findall(r"[a-z0-9]+", unidecode(query).lower()))]
    out = set()
    for p in PAGES:
        words = re.findall(r"[a-z0-9]+", unidecode(f"{p.title} {p.text}").lower())
        if all(t in set(stem(words)) for t in terms):
            out.add(p.url)
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("folding")
    CrawlWriter(root / "crawl").fetch(PAGES)
    build_index(root / "crawl", root / "data" / "search", shards=2)
    return root


@pytest.fixture
def client(built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    shutil.copytree(built / "data", tmp_path / "data")
    monkeypatch.setenv("LOOKUP_SEARCH_SYNONYMS", "off")
    with TestClient(create_app(tmp_path / "data", subsystems=SEARCH)) as c:
        yield c


def _urls(client: TestClient, q: str) -> list[str]:
    r = client.get("/search", params={"q": q, "limit": 20})
    assert r.status_code == 200, r.text
    return [x["url"] for x in r.json()["results"]]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("cafe", {"http://a.test/cafe.html", "http://a.test/menu.html"}),
        ("café", {"http://a.test/cafe.html", "http://a.test/menu.html"}),
        ("resume", {"http://a.test/resume.html"}),
        ("RÉSUMÉ", {"http://a.test/resume.html"}),
        ("naive", {"http://a.test/naive.html", "http://a.test/naive2.html"}),
        ("naïve classifier", {"http://a.test/naive.html"}),
        ("espresso cafe", {"http://a.test/cafe.html", "http://a.test/menu.html"}),
    ],
)
def test_accents_are_folded_for_matching(
    client: TestClient, query: str, expected: set[str]
) -> None:
    assert set(_urls(client, query)) == expected == _oracle(query)


def test_the_accent_as_typed_ranks_first_and_is_highlighted(client: TestClient) -> None:
    accented = client.get("/search", params={"q": "café"}).json()["results"]
    assert accented[0]["url"] == "http://a.test/cafe.html"
    assert "<em>café</em>" in accented[0]["snippet"].lower()
    plain = client.get("/search", params={"q": "cafe"}).json()["results"]
    assert {r["url"] for r in plain} == {r["url"] for r in accented}
    by_url = {r["url"]: r["snippet"] for r in plain}
    assert "<em>café</em>" in by_url["http://a.test/cafe.html"].lower()  # folded, still marked
    naive = client.get("/search", params={"q": "naïve"}).json()["results"]
    assert naive[0]["url"] == "http://a.test/naive.html"


def test_cpp_csharp_and_c_find_their_own_pages(client: TestClient) -> None:
    assert _urls(client, "C++") == ["http://b.test/cpp.html"]
    assert _urls(client, "c#") == ["http://b.test/cs.html"]
    assert "http://b.test/c.html" in _urls(client, "C pointers")
    body = client.get("/search", params={"q": "C++ templates"}).json()
    assert "<em>C++</em>" in body["results"][0]["snippet"]


def test_thai_words_are_found(client: TestClient) -> None:
    assert _urls(client, "ง่าย") == ["http://b.test/th.html"]
    assert _urls(client, "ภาษาไทย") == ["http://b.test/th.html"]
    body = client.get("/search", params={"q": "ง่าย"}).json()
    assert "<em>ง่าย</em>" in body["results"][0]["snippet"]


def test_documents_keep_their_length_when_folded() -> None:
    """Stacked originals add nothing to a page's length: BM25 sees the ASCII spelling's."""
    a = analyze_document("Café culture", "The café serves espresso near the river.")
    b = analyze_document("Cafe culture", "The cafe serves espresso near the river.")
    assert a.terms == b.terms and a.words == b.words and len(a.stacked) > len(b.stacked)


# ------------------------------------------------------------------ old indexes


def _downgrade(index_dir: Path) -> None:
    """Make the live manifest look written by analysis 1 (no field), checksum and all."""
    path = index_dir / (index_dir / CURRENT).read_text().strip()
    data = json.loads(path.read_text())
    data.pop("checksum", None)
    data.pop("analysis", None)
    data["checksum"] = _manifest_checksum(data)
    path.write_text(json.dumps(data))


def test_an_index_of_the_old_analysis_is_refused_then_rebuilt(
    built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    shutil.copytree(built / "data", data)
    _downgrade(data / "search")
    monkeypatch.setenv("LOOKUP_SEARCH_SYNONYMS", "off")
    with TestClient(create_app(data, subsystems=SEARCH)) as c:
        r = c.get("/search", params={"q": "cafe"})
        assert r.status_code == 503
        body = r.json()
        assert body["error"] == "INDEX_OUTDATED"
        assert f"analyses with {ANALYSIS_VERSION}" in body["message"]
        assert "--rebuild" in body["remedy"] and str(built / "crawl") in body["remedy"]
        health = c.get("/healthz").json()
        assert "INDEX_OUTDATED" in json.dumps(health)
        report = build_index(built / "crawl", data / "search")  # no --rebuild needed
        assert not report.incremental and report.added == len(PAGES)
        for _ in range(200):  # the service opens the new version within a second
            r = c.get("/search", params={"q": "cafe"})
            if r.status_code == 200:
                break
            time.sleep(0.05)
        assert r.status_code == 200 and len(r.json()["results"]) == 2
