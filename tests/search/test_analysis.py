"""Analysis (tokenise, fold, stop words, stem) and HTML extraction."""

from __future__ import annotations

import Stemmer
from hypothesis import given
from hypothesis import strategies as st

from lookup.search.analysis import (
    STOP_WORDS,
    analyze,
    analyze_document,
    analyze_query,
    iter_words,
    stem,
)
from lookup.search.events import decode_html, page_from_payload, parse_time
from lookup.search.extract import comparable_url, extract_page
from lookup.search.snippets import make_snippet


def test_stemming_makes_running_and_runs_match_run() -> None:
    assert analyze_query("running") == analyze_query("runs") == analyze_query("run") == ["run"]
    # the oracle: the Snowball English stemmer itself
    ref = Stemmer.Stemmer("english")
    assert analyze("Connections connected connecting").terms == ref.stemWords(
        ["connections", "connected", "connecting"]
    )


@given(st.text(alphabet="abcdeilnorstuyz", min_size=1, max_size=14))
def test_stems_keep_the_first_letter(word: str) -> None:
    # the snippet builder relies on this to stem only candidate words
    assert stem([word])[0][:1] == word[:1]
    assert stem(["dying", "lying", "skies"]) == ["die", "lie", "sky"]


def test_stop_words_are_dropped_but_keep_their_positions() -> None:
    a = analyze("The cat sat on the mat")
    assert a.terms == ["cat", "sat", "mat"]
    assert a.positions == [1, 2, 5]
    assert a.words == 6
    assert analyze_query("the of and") == []
    assert "the" in STOP_WORDS


def test_case_folding_and_unicode_normalisation() -> None:
    assert analyze_query("STRASSE") == analyze_query("straße")
    assert analyze_query("ｆｕｌｌ ｗｉｄｔｈ") == analyze_query("full width")  # NFKC
    assert analyze_query("ﬁle") == analyze_query("file")  # ligature
    assert analyze_query("!!! ... ???") == []
    # Devanagari vowel signs are combining marks: the word stays whole, then takes its
    # Hindi stem (the Snowball Hindi stemmer drops the final vowel sign)
    assert analyze_query("हिन्दी भाषा") == ["हिन्द", "भाष"]


def test_query_terms_are_distinct_and_document_title_comes_first() -> None:
    assert analyze_query("run running RUNS jump") == ["run", "jump"]
    doc = analyze_document("Heap queue", "The heap property holds.")
    assert doc.terms[:2] == ["heap", "queue"]
    assert doc.positions[2] > doc.positions[1]  # body positions continue after the title


@given(st.text(max_size=200))
def test_analysis_never_fails_and_word_offsets_point_into_the_text(text: str) -> None:
    a = analyze(text)
    assert len(a.terms) == len(a.positions)
    assert all(0 <= p < max(a.words, 1) for p in a.positions)
    for start, end, _ in iter_words(text):
        assert 0 <= start < end <= len(text)
    snippet = make_snippet(text, frozenset(analyze_query(text)))
    assert "<script" not in snippet


def test_extraction_keeps_main_text_and_drops_boilerplate() -> None:
    html = """<html><head><title> Heap  queue </title><script>var x = "secret";</script>
    <style>.a{}</style></head><body><nav>Menu items</nav><header>Site header</header>
    <main><h1>Heaps</h1><p>A heap is a <b>binary</b> tree.</p>
    <a href="/docs/bisect.html#top">bisect</a> <a href="mailto:x@y">mail</a>
    <a href="https://Other.Example:443/x">other</a> <a rel="nofollow" href="/ads">ad</a></main>
    <footer>Copyright</footer></body></html>"""
    page = extract_page(html, "http://docs.test:80/lib/heapq.html")
    assert page.title == "Heap queue"
    assert page.text == "Heaps A heap is a binary tree. bisect mail other ad"
    assert "secret" not in page.text and "Menu" not in page.text and "Copyright" not in page.text
    assert page.links == ["http://docs.test/docs/bisect.html", "https://other.example/x"]
    assert not page.noindex


def test_noindex_title_fallback_and_charsets() -> None:
    page = extract_page("<meta name='ROBOTS' content='NOINDEX'><h1>Only heading</h1><p>x</p>")
    assert page.noindex and page.title == "Only heading"
    latin = "<meta charset='iso-8859-1'><title>Café</title>".encode("latin-1")
    assert "Café" in decode_html(latin).text
    assert decode_html("naïve".encode(), "text/html; charset=utf-8").text == "naïve"
    assert decode_html(b"\xff\xfe bad", None).text  # undecodable bytes are replaced, not fatal
    assert page_from_payload(b"\x89PNG", "image/png", "http://x/") is None
    plain = page_from_payload(b"plain  text\nfile", "text/plain", "http://x/")
    assert plain is not None and plain.text == "plain text file"


def test_url_normalisation_and_times() -> None:
    assert comparable_url("HTTP://Example.COM:80/a#frag") == "http://example.com/a"
    assert comparable_url("https://example.com") == "https://example.com/"
    assert comparable_url("http://example.com:8080/x?q=1") == "http://example.com:8080/x?q=1"
    assert parse_time("2026-07-29T04:11:00Z") == 1785298260.0
    assert parse_time(12.5) == 12.5
    assert parse_time(None) == 0.0 and parse_time("garbage") == 0.0


def test_snippet_highlights_matches_and_escapes_markup() -> None:
    text = (
        "Intro words here. " * 20
        + "The <b>heap</b> queue algorithm keeps heaps small. "
        + "tail " * 50
    )
    snip = make_snippet(text, frozenset(analyze_query("heaps queue")))
    assert "<em>heap</em>" in snip and "<em>queue</em>" in snip and "<em>heaps</em>" in snip
    assert "&lt;b&gt;" in snip and "<b>" not in snip
    assert snip.startswith("… ") and snip.endswith(" …")
    # no match: the start of the text
    assert make_snippet("alpha beta gamma", frozenset({"zzz"})) == "alpha beta gamma"


def test_snippet_marks_exactly_the_words_that_stem_to_query_terms(pages: list) -> None:
    import html as html_mod
    import random
    import re

    rng = random.Random(1)
    for page in pages[:150]:
        words = re.findall(r"[A-Za-z]+", page.text)
        terms = frozenset(analyze_query(" ".join(rng.sample(words, min(3, len(words))))))
        snip = make_snippet(page.text, terms)
        plain = html_mod.unescape(re.sub(r"</?em>", "", snip))
        marked = [html_mod.unescape(w) for w in re.findall(r"<em>(.*?)</em>", snip)]
        # oracle: stem every word of the shown window, no shortcuts
        for w in marked:
            assert analyze_query(w) and analyze_query(w)[0] in terms
        shown = [w for w in re.findall(r"[^\W_]+", plain)]
        expected = [w for w in shown if (a := analyze_query(w)) and a[0] in terms]
        assert sorted(marked) == sorted(expected)
