"""Results a person can navigate (issue 28 items 8-10): filters by language (detected at index
time), site, media type, crawl month, ``inurl:``, ``intitle:``, ``filetype:`` and
``sort=date``; facets by site, language, month and type over the whole match set; and
collapsing by site with "more from this site" — each checked against a brute-force pass
over the same pages, through the batch segments and the real-time tier alike."""

from __future__ import annotations

import hashlib
import io
import json
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from lookup.search import SearchService, build_index
from lookup.search import shard as shard_module
from lookup.search.analysis import analyze_document, analyze_query
from lookup.search.collapse import collapse
from lookup.search.coordinator import QueryError
from lookup.search.docfields import detect_language, file_types, url_words
from lookup.search.segment import FORMAT, SegmentReader
from lookup.server import create_app
from tests.search.corpus import CrawlWriter, Page, url_hash

MARCH = datetime(2026, 3, 5, tzinfo=UTC).timestamp()
APRIL = datetime(2026, 4, 12, tzinfo=UTC).timestamp()
NOW = datetime(2026, 5, 1, tzinfo=UTC).timestamp()

ENGLISH = (
    "Python is a programming language that lets you work quickly and integrate systems "
    "more effectively; its standard library covers {topic} and much more."
)
JAPANESE = (
    "東京は日本の首都であり、多くの人々が住んでいます。電車はとても便利で、毎日たくさんの人が"
    "利用しています。python の本もたくさんあります。{topic}"
)
HINDI = (
    "भारत एक विशाल देश है और यहाँ अनेक भाषाएँ बोली जाती हैं। दिल्ली भारत की राजधानी है और "
    "यहाँ बहुत से लोग रहते हैं। python {topic}"
)
GERMAN = (
    "Die Stadt liegt am Fluss und hat viele alte Häuser. Im Sommer kommen viele Touristen, "
    "um die Kirchen und Museen zu besuchen. python {topic}"
)


def _pages() -> tuple[list[Page], list[Page]]:
    """March's and April's pages: one crowded host, smaller ones, four languages."""
    march = [
        Page(f"http://big.test/tutorial/part{i}.html", f"Python tutorial part {i}",
             ENGLISH.format(topic=f"lesson{i} heaps queues"))
        for i in range(9)
    ]  # fmt: skip
    march += [
        Page("http://docs.test/library/heapq.html", "heapq", ENGLISH.format(topic="heap queues")),
        Page("http://docs.test/library/json.html", "json", ENGLISH.format(topic="json parsing")),
        Page("http://ja.test/tokyo.html", "東京", JAPANESE.format(topic="")),
    ]
    april = [
        Page("http://big.test/guide/intro.html", "Python guide", ENGLISH.format(topic="guides")),
        Page("http://docs.test/library/re.html", "re", ENGLISH.format(topic="regular heaps")),
        Page("http://hi.test/delhi.html", "दिल्ली", HINDI.format(topic="")),
        Page("http://de.test/stadt.html", "Die Stadt", GERMAN.format(topic="")),
    ]
    return march, april


PLAIN = ("http://notes.test/files/readme.txt", "python notes kept as plain text about heaps")


def _fetch_plain(crawl: CrawlWriter, url: str, text: str, at: float) -> None:
    """A text/plain page in its own WARC file, with its PageFetched event."""
    crawl.warc_no += 1
    rel = f"warc/crawl-{crawl.warc_no:05d}.warc.gz"
    with (crawl.root / rel).open("ab") as f:
        offset = f.tell()
        headers = StatusAndHeaders(
            "200 OK", [("Content-Type", "text/plain; charset=utf-8")], protocol="HTTP/1.1"
        )
        writer = WARCWriter(f, gzip=True)
        writer.write_record(
            writer.create_warc_record(
                url, "response", payload=io.BytesIO(text.encode()), http_headers=headers
            )
        )
    crawl._event(
        {
            "type": "PageFetched",
            "url": url,
            "urlHash": url_hash(url),
            "fetchedAt": datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "httpStatus": 200,
            "contentHash": "sha256:" + hashlib.sha256(text.encode()).hexdigest(),
            "simhash": "0x0",
            "storageKey": f"{rel}#{offset}",
            "outLinks": 0,
            "changed": True,
            "title": "",
        }
    )


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """March's pages and the plain-text page in the batch index (small segments, so each
    shard has several), with April's pages in the crawl log after it."""
    root = tmp_path_factory.mktemp("navigate")
    crawl = CrawlWriter(root / "crawl")
    march, april = _pages()
    crawl.fetch(march, at=MARCH, step=3600)
    _fetch_plain(crawl, *PLAIN, at=MARCH + 86400)
    build_index(crawl.root, root / "index", shards=2, segment_docs=4)
    crawl.fetch(april, at=APRIL, step=3600)  # for the real-time tier
    return root / "index"


@pytest.fixture(scope="module")
def svc(index: Path) -> Iterator[SearchService]:
    """The batch index plus April's pages in the real-time tier (read only: tests search)."""
    service = SearchService(index)
    service.reload()
    assert service.tier is not None and service.tier.poll() == len(_pages()[1])
    yield service
    service.close()


def _everything(svc: SearchService) -> list[dict]:
    """Every indexed page's stored record (batch and real-time tiers): the oracle's input."""
    snap = svc.snapshot()
    out = [snap.stored(*loc) for loc in snap.locations.values()]
    rt = snap.realtime
    for s, doc in rt.latest.values():
        out.append(rt.indexes[s].docs[doc].stored)
    return out


def _matches(records: list[dict], word: str) -> list[dict]:
    """Brute force: the pages whose analysed title and text hold the word's term."""
    (term,) = analyze_query(word)
    return [r for r in records if term in analyze_document(r["title"], r["text"]).terms]


def _month(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m")


def _facet(body: dict, name: str) -> dict[str, int]:
    facet = body["facets"][name]
    assert facet["other"] == 0
    return {b["value"]: b["count"] for b in facet["buckets"]}


# ------------------------------------------------------------------ language, fields


def test_the_language_is_detected_at_index_time_and_stored() -> None:
    assert detect_language("", ENGLISH.format(topic="x")) == "en"
    assert detect_language("東京", JAPANESE.format(topic="")) == "ja"
    assert detect_language("", HINDI.format(topic="")) == "hi"
    assert detect_language("", GERMAN.format(topic="")) == "de"
    assert detect_language("a", "b") == "und"  # too short to tell
    assert file_types("http://x.test/a/readme.TXT", "text/plain") == ["txt"]
    assert file_types("http://x.test/a/", "text/html") == ["html"]
    assert url_words("https://Big.test/Tutorial/part1.html?x=1") == [
        "big", "test", "tutorial", "part1", "html", "x", "1",
    ]  # fmt: skip


def test_segments_carry_the_columns_in_format_4(index: Path) -> None:
    assert FORMAT == 4
    seg = next(p for p in index.glob("shard-*/seg-*") if p.is_dir())
    reader = SegmentReader(seg)
    assert reader.meta["format"] == 4 and (seg / "columns.npy").is_file()
    for d in range(reader.n_docs):
        stored = reader.stored(d)
        assert reader.column("host").value(d) == urlsplit(stored["url"]).hostname
        assert reader.column("lang").value(d) == stored["lang"]
        assert reader.column("type").value(d) == stored["contentType"]


def test_a_segment_of_an_older_format_reads_its_columns_from_the_stored_records(
    index: Path, tmp_path: Path
) -> None:
    """Format 3 wrote no columns: they come from the stored records, the same counts."""
    import shutil

    old = tmp_path / "old"
    shutil.copytree(index, old)
    for meta in old.rglob("meta.json"):
        info = json.loads(meta.read_text())
        info["format"] = 3  # as format 3 wrote it: no columns (checksums left out here)
        info.pop("files", None)
        meta.write_text(json.dumps(info))
        (meta.parent / "columns.npy").unlink()
        (meta.parent / "columns.json").unlink()
    for manifest in old.glob("manifest-*.json"):
        data = json.loads(manifest.read_text())
        data.pop("checksum", None)
        for entries in data["segments"]:
            for entry in entries:
                entry.pop("meta_checksum", None)
                entry.pop("tombstones_checksum", None)
        manifest.write_text(json.dumps(data))
    before = SearchService(index, realtime=False)
    after = SearchService(old, realtime=False)
    try:
        before.reload()
        after.reload()
        reader = after.snapshot().shards[0].segments[0].reader
        assert reader.meta["format"] == 3 and reader._columns is None
        want = before.search("python", limit=1, now=NOW, facets=True)["facets"]
        assert after.search("python", limit=1, now=NOW, facets=True)["facets"] == want
    finally:
        before.close()
        after.close()


@pytest.mark.parametrize(
    ("options", "query", "want"),
    [
        ({"filters_lang": "ja"}, "python", {"http://ja.test/tokyo.html"}),
        ({}, "python lang:hi", {"http://hi.test/delhi.html"}),
        ({}, "python lang:de", {"http://de.test/stadt.html"}),
        ({}, "python filetype:txt", {PLAIN[0]}),
        ({}, "heaps inurl:library", {"http://docs.test/library/heapq.html",
                                     "http://docs.test/library/re.html"}),
        ({}, "python inurl:guid*", {"http://big.test/guide/intro.html"}),
        ({}, "intitle:heapq", {"http://docs.test/library/heapq.html"}),
        ({"filters_type": "text/plain"}, "python", {PLAIN[0]}),
        ({"filters_site": "docs.test"}, "heaps", {"http://docs.test/library/heapq.html",
                                                 "http://docs.test/library/re.html"}),
    ],
)  # fmt: skip
def test_filters_keep_only_their_pages(
    svc: SearchService, options: dict, query: str, want: set[str]
) -> None:
    from lookup.search.filters import filter_nodes

    filters = filter_nodes(
        options.get("filters_lang"), options.get("filters_site"), options.get("filters_type")
    )
    body = svc.search(query, limit=50, now=NOW, filters=filters, collapse=0)
    assert {r["url"] for r in body["results"]} == want


def test_month_filter_and_sort_by_date_against_brute_force(svc: SearchService) -> None:
    from lookup.search.filters import filter_nodes

    records = _matches(_everything(svc), "python")
    april = {r["url"] for r in records if _month(r["crawledAt"]) == "2026-04"}
    body = svc.search("python", limit=50, now=NOW, filters=filter_nodes(month="2026-04"))
    assert {r["url"] for r in body["results"]} == april and april
    newest = sorted(records, key=lambda r: -r["crawledAt"])
    body = svc.search("python", limit=5, now=NOW, sort="date")
    assert [r["crawledAt"] for r in body["results"]] == [
        datetime.fromtimestamp(r["crawledAt"], UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        for r in newest[:5]
    ]
    paged = [
        r["url"]
        for p in (1, 2, 3, 4, 5)
        for r in svc.search("python", page=p, limit=4, now=NOW, sort="date")["results"]
    ]
    assert sorted(paged) == sorted(r["url"] for r in records)  # every page once
    with pytest.raises(QueryError):
        svc.search("python", sort="oldest")


# ------------------------------------------------------------------------ facets


@pytest.mark.parametrize("word", ["python", "heaps", "tutorial", "東京"])
def test_facets_count_the_whole_match_set(svc: SearchService, word: str) -> None:
    records = _matches(_everything(svc), word)
    body = svc.search(word, limit=1, now=NOW, facets=True)
    assert body["estimatedTotal"] == len(records)
    assert body["facets"]["relation"] == "eq"
    assert _facet(body, "site") == Counter(urlsplit(r["url"]).hostname for r in records)
    assert _facet(body, "lang") == Counter(r["lang"] for r in records)
    assert _facet(body, "month") == Counter(_month(r["crawledAt"]) for r in records)
    assert _facet(body, "type") == Counter(r["contentType"] for r in records)


WORDS = [
    "python", "programming", "language", "systems", "standard", "library", "heaps", "queues",
    "json", "parsing", "guides", "regular", "notes", "plain", "lesson3", "tutorial", "東京",
    "電車", "भारत", "दिल्ली", "Stadt", "Touristen",
]  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(WORDS),
    st.sampled_from(
        [{}, {"lang": "en"}, {"lang": "ja"}, {"site": "big.test"}, {"site": "docs.test"},
         {"month": "2026-03"}, {"month": "2026-04"}, {"media_type": "text/plain"},
         {"lang": "en", "month": "2026-04"}]
    ),
)  # fmt: skip
def test_facets_and_filters_against_brute_force(svc: SearchService, word: str, kw: dict) -> None:
    """Any word, any filters: the total and every facet count as a pass over the pages."""
    from hypothesis import assume

    from lookup.search.filters import filter_nodes

    assume(len(analyze_query(word)) == 1)
    records = [
        r
        for r in _matches(_everything(svc), word)
        if r["lang"] == kw.get("lang", r["lang"])
        and urlsplit(r["url"]).hostname == kw.get("site", urlsplit(r["url"]).hostname)
        and _month(r["crawledAt"]) == kw.get("month", _month(r["crawledAt"]))
        and r["contentType"] == kw.get("media_type", r["contentType"])
    ]
    body = svc.search(word, limit=1, now=NOW, facets=True, filters=filter_nodes(**kw))
    assert body["estimatedTotal"] == len(records)
    assert _facet(body, "site") == Counter(urlsplit(r["url"]).hostname for r in records)
    assert _facet(body, "lang") == Counter(r["lang"] for r in records)
    assert _facet(body, "month") == Counter(_month(r["crawledAt"]) for r in records)
    assert _facet(body, "type") == Counter(r["contentType"] for r in records)


def test_facets_past_the_threshold_are_lower_bounds(
    svc: SearchService, monkeypatch: pytest.MonkeyPatch
) -> None:
    exact = svc.search("python", limit=1, now=NOW, facets=True)["facets"]
    monkeypatch.setattr(shard_module, "PRUNE_MIN_POSTINGS", 0)  # prune where it may
    body = svc.search("python", limit=1, now=NOW, facets=True, track_total_hits=0)
    if body.get("totalRelation") == "gte":
        assert body["facets"]["relation"] == "gte"
    for name in ("site", "lang", "month", "type"):
        want = {b["value"]: b["count"] for b in exact[name]["buckets"]}
        for b in body["facets"][name]["buckets"]:
            assert b["count"] <= want[b["value"]]


def test_a_facet_value_as_a_filter_finds_exactly_its_count(svc: SearchService) -> None:
    from lookup.search.filters import filter_nodes

    body = svc.search("python", limit=1, now=NOW, facets=True)
    for name, param in (("site", "site"), ("lang", "lang"), ("month", "month"), ("type", "type")):
        for bucket in body["facets"][name]["buckets"]:
            kw = {{"type": "media_type"}.get(param, param): bucket["value"]}
            again = svc.search("python", limit=1, now=NOW, filters=filter_nodes(**kw))
            assert again["estimatedTotal"] == bucket["count"], (name, bucket)


# ---------------------------------------------------------------------- collapsing


def _crowd_by_hand(sites: list[str], per_site: int, limit: int) -> list[list[tuple[int, str]]]:
    """Brute force, page after page: of the results not yet shown, the best ones whose site
    has fewer than ``per_site`` on the page so far; if the page is still short, the best
    of the rest; the page in ranking order."""
    left = list(enumerate(sites))
    pages = []
    while left:
        page: list[tuple[int, str]] = []
        for item in left:
            if len(page) < limit and sum(s == item[1] for _, s in page) < per_site:
                page.append(item)
        short = [item for item in left if item not in page][: limit - len(page)]
        page = sorted(page + short)
        pages.append(page)
        left = [item for item in left if item not in page]
    return pages


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from("abcde"), max_size=60),
    st.integers(min_value=1, max_value=3),
    st.integers(min_value=1, max_value=8),
)
def test_collapsing_against_a_brute_force_walk(sites: list[str], per_site: int, limit: int) -> None:
    ranked = list(enumerate(sites))  # (rank, site), best first
    want = _crowd_by_hand(sites, per_site, limit)
    n_pages = max(len(want), 1)
    folded = collapse(ranked, lambda item: item[1], per_site, limit, n_pages)
    got = [[item for item, _ in page] for page in folded.pages]
    assert got == (want or [[]])
    shown = [item for page in got for item in page]
    assert sorted(shown) == ranked  # every result on exactly one page
    for page in got:
        assert page == sorted(page) and len(page) <= limit
        crowded = Counter(s for _, s in page)
        if any(n > per_site for n in crowded.values()):  # only on a page nothing else could fill
            later = {s for p in got[got.index(page) + 1 :] for _, s in p}
            assert later <= {s for s, n in crowded.items() if n >= per_site}
    # any prefix that fills the first pages without help gives the same first pages
    for cut in range(len(ranked) + 1):
        part = collapse(ranked[:cut], lambda item: item[1], per_site, limit, 2, complete=False)
        if part.settled:
            assert [[i for i, _ in p] for p in part.pages] == (got + [[], []])[:2]


@pytest.mark.parametrize(("per_site", "limit"), [(2, 3), (1, 2), (3, 5), (2, 10)])
def test_paging_a_collapsed_ranking_shows_each_result_once(
    svc: SearchService, per_site: int, limit: int
) -> None:
    full = svc.search("python", limit=100, now=NOW, collapse=0)["results"]
    want = _crowd_by_hand([urlsplit(r["url"]).hostname for r in full], per_site, limit)
    seen: list[list[str]] = []
    for page in range(1, len(want) + 2):
        got = svc.search("python", page=page, limit=limit, now=NOW, collapse=per_site)
        seen.append([r["url"] for r in got["results"]])
    assert seen == [[full[i]["url"] for i, _ in p] for p in want] + [[]]
    shown = [u for page in seen for u in page]
    assert sorted(shown) == sorted(r["url"] for r in full)  # none twice, none lost


def test_the_crowded_site_gets_more_from_this_site(svc: SearchService) -> None:
    plain = svc.search("python", limit=10, now=NOW, collapse=0)["results"]
    assert sum(urlsplit(r["url"]).hostname == "big.test" for r in plain) >= 7  # crowded
    body = svc.search("python", limit=5, now=NOW, collapse=2)
    big = [r for r in body["results"] if urlsplit(r["url"]).hostname == "big.test"]
    assert len(big) == 2 and len(body["results"]) == 5
    assert "moreFromSite" not in big[0]
    assert big[1]["moreFromSite"] == {"site": "big.test", "hidden": 10 - 2}
    assert all("moreFromSite" not in r for r in body["results"] if r not in big)
    # one site answers alone: its results fill the page (nothing else to show)
    only = svc.search("tutorial", limit=5, now=NOW, collapse=2)["results"]
    assert len(only) == 5 and {urlsplit(r["url"]).hostname for r in only} == {"big.test"}


# ------------------------------------------------------------------------- HTTP


@pytest.fixture
def client(index: Path, tmp_path: Path) -> Iterator[TestClient]:
    import shutil

    data = tmp_path / "data"
    shutil.copytree(index, data / "search")
    with TestClient(create_app(data, subsystems=["lookup.search.http:mount"])) as c:
        yield c


def test_http_refuses_unknown_parameters_naming_the_accepted_ones(client: TestClient) -> None:
    r = client.get("/search", params={"q": "python", "lnag": "en"})
    assert r.status_code == 400
    body = r.json()
    assert body["error"] == "UNKNOWN_PARAMETER" and "lnag" in body["message"]
    assert {"q", "lang", "site", "type", "month", "facets", "sort", "collapse"} <= set(
        body["accepted"]
    )
    documented = client.get("/openapi.json").json()["paths"]["/search"]["get"]["parameters"]
    assert {p["name"] for p in documented} == set(body["accepted"])


@pytest.mark.parametrize(
    "params",
    [
        {"lang": "english"},
        {"month": "2026-13"},
        {"type": "html"},
        {"site": ""},
        {"sort": "oldest"},
        {"collapse": "11"},
        {"collapse": "-1"},
        {"q": "python lang:e"},
        {"q": "python filetype:"},
    ],
)
def test_http_bad_filters_are_400_json(client: TestClient, params: dict) -> None:
    r = client.get("/search", params={"q": "python", **params})
    assert r.status_code == 400, r.text
    assert r.json()["error"] in ("INVALID_PARAMETER", "QUERY_SYNTAX")


def test_http_collapses_by_default_and_adds_facets_when_asked(client: TestClient) -> None:
    body = client.get("/search", params={"q": "python", "limit": 5}).json()
    hosts = Counter(urlsplit(r["url"]).hostname for r in body["results"])
    assert hosts["big.test"] == 2 and "facets" not in body
    assert list(body) == [
        "query", "estimatedTotal", "tookMs", "results", "shardsQueried", "shardsAnswered",
    ]  # fmt: skip
    faceted = client.get(
        "/search", params={"q": "python", "facets": "true", "lang": "en", "collapse": "0"}
    ).json()
    assert set(_facet(faceted, "lang")) == {"en"}
    assert faceted["facets"]["relation"] == "eq"
    json.dumps(faceted)  # plain JSON all the way down
