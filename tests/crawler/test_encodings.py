"""Pages in the encodings the web still serves, judged end to end (issue 28 item 12).

The sandbox's international host serves Shift_JIS named only in a ``<meta>``, undeclared
windows-1252, windows-1252 labelled ``iso-8859-1`` and UTF-16 with a byte-order mark. The
real crawler fetches them; their titles in ``events.jsonl``, their near-duplicate
fingerprints, the inspector's text and the search index must all hold the right letters.
The decoder itself is checked against Python's codecs on random text (hypothesis).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.crawler import CrawlConfig, Sandbox, SandboxConfig, TrapPolicy, crawl
from lookup.crawler.dedup import DuplicateDetector
from lookup.crawler.inspector import page_text
from lookup.crawler.output import read_events
from lookup.crawler.sandbox.sites.intl import ENCODED_PAGES
from lookup.kit.htmlcharset import decode_html
from lookup.search import SearchService, build_index


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    web = Sandbox(SandboxConfig.small()).start()
    out = tmp_path_factory.mktemp("enccrawl")
    try:
        urls = {path: web.url("intl", path) for path in ENCODED_PAGES}
        crawl(
            CrawlConfig(
                out, seeds=[web.url("intl", "/")], hosts=web.hosts(), strict_hosts=True,
                min_delay=0.01, delay_factor=1.0, timeout=1.5, connect_timeout=1.0, max_pages=12,
                max_seconds=60, traps=TrapPolicy(host_budget=12, max_depth=2), concurrency=4,
            )
        )  # fmt: skip
    finally:
        web.stop()
    yield out, urls


def test_titles_in_the_event_log_hold_the_right_letters(crawled) -> None:  # type: ignore[no-untyped-def]
    out, urls = crawled
    titles = {e["url"]: e["title"] for e in read_events(out / "events.jsonl")}
    for path, (_, _, _, _, title, _) in ENCODED_PAGES.items():
        assert titles.get(urls[path]) == title, path


def test_the_inspector_and_the_fingerprint_read_the_text_as_written(crawled) -> None:  # type: ignore[no-untyped-def]
    out, urls = crawled
    events = {e["url"]: e for e in read_events(out / "events.jsonl")}
    for path, (_, _, _, _, title, text) in ENCODED_PAGES.items():
        page = page_text(out, urls[path])
        assert page.title == title and text in page.text, path
        assert "\ufffd" not in page.text, path
        # the fingerprint was taken over the decoded text: the same words give the same
        # 64 bits, mangled letters (é read as Ã©) would move it
        assert events[urls[path]]["simhash"] == f"0x{_simhash_of(page.text):016x}", path


def _simhash_of(text: str) -> int:
    return DuplicateDetector(use_minhash=False).fingerprint(text).simhash


@pytest.mark.parametrize(
    ("query", "path"),
    [
        ("紅葉", "/enc/shift-jis.html"),
        ("café crème brûlée", "/enc/cp1252.html"),
        ("Straße München", "/enc/latin1-label.html"),
        ("prost", "/enc/latin1-label.html"),
        ("montaña cóndor", "/enc/utf16-bom.html"),
    ],
)
def test_the_index_finds_each_page_by_its_own_words(crawled, query: str, path: str) -> None:  # type: ignore[no-untyped-def]
    out, urls = crawled
    index = out / "index"
    if not index.exists():
        build_index(out, index, shards=1)
    svc = SearchService(index, realtime=False)
    try:
        svc.reload()
        results = svc.search(query)["results"]
        assert results and results[0]["url"] == urls[path], query
    finally:
        svc.close()


def test_a_browser_order_of_precedence() -> None:
    jp = "<p>京都の寺</p>"
    meta = f'<meta charset="shift_jis">{jp}'.encode("shift_jis")
    assert decode_html(meta, "text/html").text.endswith(jp)
    # the header beats the meta; a byte-order mark beats both
    assert decode_html(meta, "text/html; charset=utf-8").source == "header"
    bom = "\ufeff<p>niño</p>".encode("utf-16-be")
    assert decode_html(bom, "text/html; charset=iso-8859-1").text == "<p>niño</p>"
    # latin-1 labels mean windows-1252, as in browsers: 0x93/0x94 are curly quotes
    assert decode_html(b"\x93hi\x94", "text/html; charset=latin1").text == "\u201chi\u201d"
    # an unknown label is skipped, not fatal
    assert decode_html("é".encode(), "text/html; charset=x-bogus").text == "é"
    # undeclared bytes that are not UTF-8: windows-1252
    assert decode_html("crème".encode("cp1252")).source == "fallback"


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(
        alphabet=st.characters(codec="cp1252", exclude_categories=("Cc", "Cs")), max_size=80
    ),
    codec=st.sampled_from(["utf-8", "cp1252", "utf-16-le", "utf-16-be", "cp932"]),
)
def test_declared_pages_decode_like_python_codecs(text: str, codec: str) -> None:
    """Any text a codec can write, declared in the header (or by a BOM for UTF-16), reads back.

    Browsers read a page labelled Shift_JIS as Windows-31J (Python's cp932: 0x8191 is the
    fullwidth cent sign there, where Python's strict ``shift_jis`` has ¢), so the oracle
    writes cp932 and labels it ``shift_jis``."""
    try:
        raw = text.encode(codec)
    except UnicodeEncodeError:
        return
    if raw.decode(codec) != text:
        return  # cp932 writes ¢ as 0x8191 by a best fit, which it reads as ￠: no page has it
    if codec.startswith("utf-16"):
        raw = ("\ufeff" + text).encode(codec)
        assert decode_html(raw, "text/html").text == text
    else:
        label = {"cp1252": "windows-1252", "cp932": "shift_jis"}.get(codec, codec)
        assert decode_html(raw, f"text/html; charset={label}").text == text
