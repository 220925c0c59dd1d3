"""The Web search page, through ``streamlit.testing``, against the real API on a port.

Search a small real-text index, read the highlighted results and each score's
breakdown (checked against BM25's formulas written out here), page through them,
flip the shard fault switches and watch partial results and hedging, run the load
test; with no index, and with no API, a clear message instead of an exception. A
page whose text carries markup shows it as text.
"""

from __future__ import annotations

import html
import importlib.util
import math
import re
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import httpx
import pytest
from dashboard_testing import APP_DIR, metric_value, ok, open_page, page_text
from hypothesis import given
from hypothesis import strategies as st
from starlette.types import ASGIApp
from streamlit.testing.v1 import AppTest

from lookup.search import build_index, make_snippet
from lookup.server import create_app
from tests.search.corpus import CrawlWriter, Page, stdlib_pages

PAGE = "views/search.py"
SEARCH = ["lookup.search.http:mount"]
HOSTILE = Page(
    "http://evil.test/markup.html",
    "Zebrafish <b>bold</b> & friends",
    "Zebrafish pages try <script>alert('owned')</script> and <img src=x onerror=alert(1)> "
    "and $x$ *stars* [link](javascript:alert(1)) tricks; zebrafish swim on regardless.",
)


def _load_page_module() -> ModuleType:
    """The page's module without running the page (it runs only as ``__main__``)."""
    spec = importlib.util.spec_from_file_location("search_page", APP_DIR / "views" / "search.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


page_module = _load_page_module()

import searchresults  # noqa: E402 - the page's result cards (app/ is on the path now)


def _text(at: AppTest) -> str:
    return page_text(at, with_code=True)  # the page shows its commands as code


def _frames(at: AppTest, column: str) -> list:  # type: ignore[type-arg]
    """The dataframes shown that have ``column`` (plain dataframes carry no key)."""
    return [d.value for d in at.dataframe if column in d.value.columns]


def _cards(at: AppTest) -> list[str]:
    return [h.value for h in at.html if 'class="lw-result"' in h.value]


def _urls(at: AppTest) -> list[str]:
    """Each card's original address (its link beside the host; the title opens the copy)."""
    return [
        html.unescape(re.search(r'class="lw-orig" href="([^"]+)"', c).group(1)) for c in _cards(at)
    ]


def _search(at: AppTest, query: str) -> AppTest:
    at.text_input(key="search-q").input(query)
    return ok(at.button(key="search-submit").click().run())


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A four-shard index of 150 stdlib-docstring pages plus one page full of markup."""
    from lookup.search import manifest

    manifest.DURABLE = False
    root = tmp_path_factory.mktemp("search-page")
    CrawlWriter(root / "crawl").fetch([*stdlib_pages(150), HOSTILE])
    build_index(root / "crawl", root / "index", shards=4)
    manifest.DURABLE = True
    return root / "index"


@pytest.fixture
def search_api(
    index_dir: Path,
    tmp_path: Path,
    serve_asgi: Callable[[ASGIApp], str],
    monkeypatch: pytest.MonkeyPatch,
) -> str:
    """The real API with only the search engine mounted, over a copy of the index.

    The dashboard shares its data directory, where it finds the admin token the fault
    switches need (as under ``make run``).
    """
    shutil.copytree(index_dir, tmp_path / "data" / "search")
    monkeypatch.setenv("LOOKUP_DATA_DIR", str(tmp_path / "data"))
    return serve_asgi(create_app(tmp_path / "data", subsystems=SEARCH))


@pytest.fixture
def page(search_api: str, visit: Callable[[str, str], AppTest]) -> Iterator[AppTest]:
    yield visit(PAGE, search_api)


# ------------------------------------------------------------------ without an index


def test_without_the_api_the_page_says_so(
    nothing_listening: str, visit: Callable[[str, str], AppTest]
) -> None:
    at = visit(PAGE, nothing_listening)
    text = _text(at)
    assert "Web search" in text and "API down" in text and "lookup serve" in text
    assert not at.text_input and not at.button


def test_without_an_index_the_page_says_how_to_build_one(
    tmp_path: Path, serve_asgi: Callable[[ASGIApp], str], api_at: Callable[[str], None]
) -> None:
    api_at(serve_asgi(create_app(tmp_path / "data", subsystems=SEARCH)))
    at = open_page(PAGE)
    text = _text(at)
    assert "No search index yet" in text
    assert "lookup crawl --sandbox" in text and "lookup index crawl/" in text
    assert "NOT_BUILT" in text  # what the API said, verbatim
    if page_module.crawler_page() is not None:
        assert at.get("page_link"), "the Crawler page holds the build button: link to it"
    assert not at.text_input  # no search box that could only fail
    ok(at.button(key="search-check").click().run())


# --------------------------------------------------------------------- searching


def test_results_are_ranked_highlighted_and_explained(page: AppTest, search_api: str) -> None:
    at = _search(page, "return value")
    assert metric_value(at, "Shards answered") == "4 of 4"
    assert metric_value(at, "Words matched with") == "AND"
    assert re.fullmatch(r"about \d+", metric_value(at, "Results"))
    cards = _cards(at)
    assert len(cards) >= 5 and all("<mark>" in c for c in cards)
    assert [re.search(r"#(\d+) ·", c).group(1) for c in cards] == [
        str(i + 1) for i in range(len(cards))
    ]
    # the same ranking the API gives any client
    api = httpx.get(f"{search_api}/search", params={"q": "return value"}).json()
    assert _urls(at) == [r["url"] for r in api["results"]]

    # the explain panel: numbers that obey BM25's formulas
    assert [e.label for e in at.expander][0].startswith("Why this rank — score ")
    explains = _frames(at, "BM25 part")
    assert len(explains) == len(cards)
    terms = explains[0]
    assert list(terms["term"]) == ["return", "valu"]
    shown = [m.value for m in at.markdown if m.value.startswith("**BM25 ")][0]
    n_docs = int(re.search(r"over N = ([\d,]+) pages", _text(at)).group(1).replace(",", ""))
    assert n_docs == 151
    for row in terms.itertuples(index=False):
        df, idf, tf, norm, part = row[1], row[2], row[3], row[4], row[5]
        assert idf == pytest.approx(math.log(1 + (n_docs - df + 0.5) / (df + 0.5)), abs=1e-4)
        assert part == pytest.approx(idf * tf / (tf + norm), abs=1e-3)
    parsed = re.fullmatch(
        r"\*\*BM25 ([\d.]+)\*\* \+ in-links ([+-][\d.]+) \(.*\) \+ freshness "
        r"([+-][\d.]+) \(.*\) = \*\*([\d.]+)\*\*",
        shown,
    )
    assert parsed, shown
    bm25, link, fresh, total = (float(x) for x in parsed.groups())
    assert bm25 == pytest.approx(terms["BM25 part"].sum(), abs=2e-3)
    assert total == pytest.approx(bm25 + link + fresh, abs=2e-3)
    assert at.get("plotly_chart")  # the fan-out and the score composition


def test_an_example_query_runs_from_its_pill(page: AppTest) -> None:
    at = ok(page.pills(key="search-example").set_value("heap queue").run())
    assert at.text_input(key="search-q").value == "heap queue"
    assert metric_value(at, "Shards answered") == "4 of 4"
    assert not at.pills  # the examples make way for the results


def test_paging_moves_through_the_ranking(page: AppTest) -> None:
    at = _search(page, "return")
    assert int(metric_value(at, "Results").split()[1]) > 20
    first = _urls(at)
    ok(at.button(key="search-next").click().run())
    second = _urls(at)
    assert second and set(second).isdisjoint(first)
    assert _cards(at)[0].count("#11 ·") == 1
    ok(at.button(key="search-prev").click().run())
    assert _urls(at) == first


def test_markup_in_a_page_is_shown_as_text(page: AppTest) -> None:
    at = _search(page, "zebrafish")
    card = _cards(at)[0]
    assert "<script" not in card and "<img" not in card and "<b>" not in card
    assert "&lt;script&gt;" in card and "&lt;b&gt;bold&lt;/b&gt;" in card
    assert card.count("<mark>") >= 1 and "<mark>Zebrafish</mark>" in card


def test_queries_that_cannot_run_get_a_sentence(page: AppTest) -> None:
    at = _search(page, "?!")
    assert "Nothing searchable" in _text(at)
    at = _search(at, "the of and")  # stop words only: searched as a phrase, found nowhere
    assert "No page has “the of and” word after word" in _text(at)
    at = _search(at, " ".join(f"word{i}" for i in range(40)))
    assert "cannot be run" in _text(at) and "QUERY_TOO_LONG" in _text(at)
    at = _search(at, "qqqzzzxxnotaword")
    assert "No page contains" in _text(at)


# ------------------------------------------------------------------ the shard panel


def test_a_dead_shard_gives_partial_results(page: AppTest, search_api: str) -> None:
    at = _search(page, "return value")
    healthy = _urls(at)
    ok(at.slider(key="search-deadline").set_value(150).run())
    ok(at.segmented_control(key="search-fault-2").set_value("down").run())
    shards = httpx.get(f"{search_api}/search/shards").json()
    assert shards["deadlineMs"] == 150
    assert [r["fault"]["mode"] for r in shards["shards"][2]["replicas"]] == ["dead", "dead"]
    assert metric_value(at, "Shards answered") == "3 of 4"
    assert "Partial results" in _text(at) and "shard 2 did not answer" in _text(at)
    from lookup.search import shard_of
    from tests.search.corpus import url_hash

    assert _urls(at) == [u for u in healthy if shard_of(url_hash(u), 4) != 2][: len(_urls(at))]
    ok(at.button(key="search-heal").click().run())
    assert metric_value(at, "Shards answered") == "4 of 4"
    assert at.segmented_control(key="search-fault-2").value == "ok"


def test_a_slow_primary_is_hedged_and_hedging_can_be_switched_off(
    page: AppTest, search_api: str
) -> None:
    at = _search(page, "return value")
    # Margins, not timings: the slow primary sleeps 1,000 ms, past a 700 ms deadline, so
    # without a hedge it always misses; a hedge to a healthy replica answers in a few ms
    # and has 700 ms to spare even on a loaded machine (the default 250 ms did not).
    ok(at.slider(key="search-deadline").set_value(700).run())
    assert httpx.get(f"{search_api}/search/shards").json()["deadlineMs"] == 700
    ok(at.slider(key="search-slow-ms").set_value(1000).run())
    ok(at.segmented_control(key="search-fault-1").set_value("slow").run())
    fault = httpx.get(f"{search_api}/search/shards").json()["shards"][1]["replicas"][0]["fault"]
    assert fault == {"mode": "slow", "delayMs": 1000.0, "probability": 1.0}
    assert int(metric_value(at, "Hedges fired")) >= 1
    assert metric_value(at, "Shards answered") == "4 of 4"
    trace = httpx.get(f"{search_api}/search/shards").json()["recent"][-1]["shards"][1]
    assert trace["hedged"] and trace["replica"] == 1
    # without hedging the slow primary is waited for, up to the deadline
    ok(at.toggle(key="search-hedging").set_value(False).run())
    assert httpx.get(f"{search_api}/search/shards").json()["hedging"] is False
    assert metric_value(at, "Hedges fired") == "0"
    assert metric_value(at, "Shards answered") == "3 of 4"  # 1,000 ms > the 700 ms deadline
    ok(at.toggle(key="search-hedging").set_value(True).run())
    ok(at.button(key="search-heal").click().run())
    assert at.segmented_control(key="search-fault-1").value == "ok"
    ok(at.slider(key="search-deadline").set_value(250).run())  # as the next test expects


def test_the_load_test_records_each_setting(page: AppTest) -> None:
    at = _search(page, "heap")
    load = at.slider(key="search-burst-n")
    ok(load.set_value(10).run())
    ok(at.button(key="search-burst").click().run())
    (table,) = _frames(at, "settings")
    assert list(table["queries"]) == [10]
    assert table["settings"][0].startswith("all healthy; hedging on")
    assert (table["p50 ms"] <= table["p99 ms"]).all() and (table["p99 ms"] <= table["max ms"]).all()
    (stats,) = _frames(at, "hedge after ms")
    assert list(stats["shard"]) == [0, 1, 2, 3]
    assert (stats["queries"] >= 11).all()  # the page's own query plus the ten sent


# ------------------------------------------------------------- rendering helpers


@given(
    st.lists(
        st.tuples(st.text(max_size=30), st.booleans()),
        max_size=8,
    )
)
def test_snippet_html_marks_matches_and_escapes_everything_else(
    pieces: list[tuple[str, bool]],
) -> None:
    # a snippet the way the core writes one: escaped text, matches in <em>
    snippet = "".join(
        f"<em>{html.escape(t)}</em>" if hit and t else html.escape(t) for t, hit in pieces
    )
    out = searchresults.snippet_html(snippet)
    bare = out.replace("<mark>", "").replace("</mark>", "")
    assert "<" not in bare and ">" not in bare
    assert html.unescape(bare) == "".join(t for t, _ in pieces)
    assert out.count("<mark>") == sum(1 for t, hit in pieces if hit and t)


def test_snippet_html_on_the_cores_snippets() -> None:
    text = "A regular expression object: use <b>re.compile</b> & friends, compiled once."
    snippet = make_snippet(text, frozenset({"regular", "express"}))
    out = searchresults.snippet_html(snippet)
    assert out.startswith("A <mark>regular</mark> <mark>expression</mark> object")
    assert "&lt;b&gt;re.compile&lt;/b&gt; &amp; friends" in out


def test_only_web_links_become_links() -> None:
    assert searchresults.safe_href("https://a.test/x?y=1&z=2") == "https://a.test/x?y=1&amp;z=2"
    assert searchresults.safe_href("javascript:alert(1)") is None
    assert searchresults.safe_href('http://a.test/"onmouseover=x') == (
        "http://a.test/&quot;onmouseover=x"
    )
    card = searchresults.result_card(
        1, {"url": "javascript:alert(1)", "title": "t", "snippet": "", "score": 1.0}
    )
    assert "href" not in card


def test_each_result_title_opens_its_stored_copy(page: AppTest, search_api: str) -> None:
    at = _search(page, "return value")
    cards = _cards(at)
    assert cards
    for card in cards:
        href = html.unescape(re.search(r'class="lw-title" href="([^"]+)"', card).group(1))
        assert href.startswith(f"{search_api}/search/cached?url=")
        stored = httpx.get(href, timeout=10.0)
        assert stored.status_code == 200 and 'id="fetched-at"' in stored.text
        assert "stored copy</a>" in card and "fetched " in card


def test_a_sandbox_result_links_only_to_its_stored_copy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LOOKUP_API_URL", "http://127.0.0.1:8123")
    url = "http://docs.sandbox.test:8600/lib/json.html"
    item = {
        "url": url,
        "title": "json",
        "snippet": "",
        "score": 1.0,
        "cachedUrl": "/search/cached?url=http%3A%2F%2Fdocs.sandbox.test%3A8600%2Flib%2Fjson.html",
    }
    card = searchresults.result_card(1, item)
    hrefs = [html.unescape(h) for h in re.findall(r'href="([^"]+)"', card)]
    assert hrefs and all(h.startswith("http://127.0.0.1:8123/search/cached?url=") for h in hrefs)
    assert "only inside the sandbox web" in card
    # without a stored copy a sandbox address is not linked at all: no browser resolves it
    bare = searchresults.result_card(1, {k: v for k, v in item.items() if k != "cachedUrl"})
    assert "href" not in bare and "only inside the sandbox web" in bare


def test_a_learned_model_shows_each_features_contribution(
    index_dir: Path,
    tmp_path: Path,
    serve_asgi: Callable[[ASGIApp], str],
    monkeypatch: pytest.MonkeyPatch,
    visit: Callable[[str, str], AppTest],
) -> None:
    """With a trained model served, the explain panel lists the learned contributions,
    which add up to the score on the card, and the hand-set rank it replaced."""
    from lookup.kit.models import ModelStore
    from lookup.search import SearchService
    from lookup.search.learned import publish, train

    data = tmp_path / "data"
    shutil.copytree(index_dir, data / "search")
    svc = SearchService(data / "search", realtime=False)
    try:
        report = train(svc, seeds=1, sessions=5)
    finally:
        svc.close()
    publish(ModelStore(data / "models"), report, require_gain=False)
    monkeypatch.setenv("LOOKUP_DATA_DIR", str(data))
    api = serve_asgi(create_app(data, subsystems=SEARCH))
    at = _search(visit(PAGE, api), "heap queue")
    learned = _frames(at, "contribution")
    assert learned and list(learned[0]["feature"])[:2] == ["bm25", "titleBm25"]
    label = [e.label for e in at.expander][0]
    score = float(re.search(r"score (-?[\d.]+)", label).group(1))
    assert float(learned[0]["contribution"].sum()) == pytest.approx(score, abs=2e-3)
    assert "Learned model v000001" in _text(at) and "(hand-set)" in _text(at)
