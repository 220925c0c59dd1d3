"""Query-time synonyms (issue 28 item 3): the table, its hot reload, matching and weights.

The matches are checked against a brute force over the pages' analysed terms (a page
matches when, for every query word, it holds the word or one of its synonyms) and the
scores against BM25 written out with each synonym's idf times its weight; over the real
``GET /search``: the answer says which synonyms were applied, an edit of the file serves
within about a second, and a new data directory starts with the seed rules.
"""

from __future__ import annotations

import math
import os
import random
import shutil
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from lookup.search import SearchService, Signals, build_index
from lookup.search.analysis import analyze, analyze_document
from lookup.search.extract import extract_page
from lookup.search.synonyms import (
    SEED,
    SYNONYM_WEIGHT,
    SynonymTable,
    parse,
    write_seed,
)
from lookup.server import create_app
from tests.search.corpus import CrawlWriter, Page

SEARCH = ["lookup.search.http:mount"]
VOCAB = ["js", "javascript", "k8s", "kubernetes", "docker", "container", "python", "tooling"]
FILLER = "notes about building things with care and patience".split()


# ------------------------------------------------------------------ the table


def test_equivalent_and_one_way_rules() -> None:
    table = parse(
        "# comment\n"
        "js, JavaScript\n"
        "k8s => kubernetes, kube\n"
        "ml => machine learning\n"
        "c#, csharp\n"
        "\n"
        "lonely\n"
        "the => a\n"
        "state of the art, sota\n"
    )
    alts = {t: [a.text for a in v] for t, v in table.alternatives.items()}
    assert alts["js"] == ["JavaScript"] and alts["javascript"] == ["js"]
    assert alts["k8s"] == ["kubernetes", "kube"] and "kubernetes" not in alts  # one way
    assert alts["ml"] == ["machine learning"]  # a phrase on the right
    assert alts["c#"] == ["csharp"] and alts["csharp"] == ["c#"]  # '#' is no comment there
    assert alts["sota"] == ["state of the art"]  # a phrase is never a key itself
    assert table.rules == 5
    assert [s.split(":")[0] for s in table.skipped] == ["line 7", "line 8"]


def test_seed_rules_are_written_once_and_never_over_an_edit(tmp_path: Path) -> None:
    path = tmp_path / "search" / "synonyms.txt"
    assert write_seed(path) and path.read_text() == SEED
    path.write_text("golang => go\n")
    assert not write_seed(path) and path.read_text() == "golang => go\n"
    seeded = parse(SEED).alternatives
    words = ["js", "javascript", "ts", "typescript", "k8s", "kubernetes"]
    assert {analyze(w).terms[0] for w in words} == set(seeded)  # keyed by index term


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _touch(path: Path, text: str, stamp: int) -> None:
    path.write_text(text)
    os.utime(path, ns=(stamp, stamp))  # a distinct mtime even within one clock tick


def test_the_file_is_looked_at_most_once_a_second(tmp_path: Path) -> None:
    path = tmp_path / "synonyms.txt"
    _touch(path, "js, javascript\n", 1_000_000_000)
    clock = Clock()
    table = SynonymTable(path, clock=clock)
    stats = []
    real_stat = Path.stat

    def counting_stat(self: Path, *a, **k):  # type: ignore[no-untyped-def]
        if self == path:
            stats.append(1)
        return real_stat(self, *a, **k)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Path, "stat", counting_stat)
        for _ in range(1000):  # a thousand queries in one second: one look at the file
            assert "js" in table.current().alternatives
        assert len(stats) == 1
    _touch(path, "k8s, kubernetes\n", 2_000_000_000)
    clock.now += 0.5
    assert "js" in table.current().alternatives  # not yet: checked less than a second ago
    clock.now += 0.6
    assert "k8s" in table.current().alternatives and "js" not in table.current().alternatives
    assert table.loads == 2
    clock.now += 5
    table.current()
    assert table.loads == 2  # unchanged file: not parsed again


def test_a_missing_file_is_no_synonyms_and_an_unreadable_one_keeps_the_last(
    tmp_path: Path,
) -> None:
    path = tmp_path / "synonyms.txt"
    clock = Clock()
    table = SynonymTable(path, clock=clock)
    assert not table.current()
    _touch(path, "js, javascript\n", 1_000_000_000)
    clock.now += 2
    assert "js" in table.current().alternatives
    path.unlink()
    path.mkdir()  # now a directory: reading fails
    os.utime(path, ns=(3_000_000_000, 3_000_000_000))
    clock.now += 2
    assert "js" in table.current().alternatives and table.status()["error"]


# ------------------------------------------------------------------ matching and weights


def _corpus(seed: int = 3, n: int = 40) -> list[Page]:
    rng = random.Random(seed)
    pages = []
    for i in range(n):
        words = rng.sample(VOCAB, rng.randint(1, 3)) + rng.sample(FILLER, rng.randint(2, 6))
        rng.shuffle(words)
        pages.append(Page(f"http://s{i % 3}.test/p{i}.html", f"page {i}", " ".join(words)))
    # two pages alike but for the word: the one with the word as typed ranks first
    pages.append(Page("http://w.test/typed.html", "page typed", "tooling for js apps"))
    pages.append(Page("http://w.test/synonym.html", "page synonym", "tooling for javascript apps"))
    return pages


PAGES = _corpus()


class Brute:
    """BM25 written out over the pages' analysed terms (signals off), synonyms weighted."""

    def __init__(self, pages: list[Page]) -> None:
        self.urls = [p.url for p in pages]
        self.docs: list[Counter[str]] = []
        for p in pages:
            page = extract_page(p.html(), p.url)
            self.docs.append(Counter(analyze_document(page.title, page.text).terms))
        self.lens = [sum(c.values()) for c in self.docs]
        self.avgdl = sum(self.lens) / len(self.docs)
        self.df = Counter(t for c in self.docs for t in c)

    def search(self, words: list[str], rules: str, weight: float) -> dict[str, float]:
        table = parse(rules).alternatives
        groups = []
        for w in words:
            (term,) = analyze(w).terms
            alts = [a.node.term for a in table.get(term, ())]  # type: ignore[union-attr]
            groups.append([term, *[a for a in alts if a != term]])
        typed = {g[0] for g in groups}
        weights = {t: (1.0 if t in typed else weight) for g in groups for t in g}
        n = len(self.docs)
        out = {}
        match = [
            d for d, doc in enumerate(self.docs) if all(any(t in doc for t in g) for g in groups)
        ]
        if not match and all(len(g) == 1 for g in groups):  # no synonym: AND, then OR
            match = [d for d, doc in enumerate(self.docs) if any(g[0] in doc for g in groups)]
        for d in match:
            doc = self.docs[d]
            score = 0.0
            for t, w in weights.items():
                tf = doc.get(t, 0)
                if tf:
                    idf = math.log(1 + (n - self.df[t] + 0.5) / (self.df[t] + 0.5))
                    norm = 1.2 * (1 - 0.75 + 0.75 * self.lens[d] / self.avgdl)
                    score += w * idf * tf / (tf + norm)
            out[self.urls[d]] = score
        return out


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("synonyms")
    CrawlWriter(root / "crawl").fetch(PAGES)
    build_index(root / "crawl", root / "index", shards=2)
    return root


@pytest.fixture(scope="module")
def service(index: Path) -> Iterator[SearchService]:
    rules = index / "synonyms.txt"
    svc = SearchService(index / "index", realtime=False, synonyms=rules)
    svc.reload()
    yield svc
    svc.close()


def _run(service: SearchService, query: str) -> dict[str, float]:
    body = service.coordinator.search(
        service.snapshot(), query, limit=100, signals=Signals.off(), suggest=False
    )
    assert body["estimatedTotal"] == len(body["results"])
    return {r["url"]: r["score"] for r in body["results"]}


RULES = st.lists(
    st.tuples(st.sampled_from(VOCAB), st.sampled_from(VOCAB), st.booleans()), max_size=4
).map(lambda rs: "".join(f"{a} {'=>' if one_way else ','} {b}\n" for a, b, one_way in rs))


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rules=RULES, words=st.lists(st.sampled_from(VOCAB), min_size=1, max_size=2, unique=True))
def test_matches_and_scores_equal_the_brute_force(
    service: SearchService, index: Path, rules: str, words: list[str]
) -> None:
    table = service.synonyms
    assert table is not None
    path = index / "synonyms.txt"
    stamp = time.time_ns() + random.randint(1, 10**9)
    _touch(path, rules, stamp)
    table.recheck_s = 0.0  # look at every query (the test edits between queries)
    got = _run(service, " ".join(words))
    want = Brute(PAGES).search(words, rules, SYNONYM_WEIGHT)
    assert set(got) == set(want)
    for url, score in want.items():
        assert got[url] == pytest.approx(score, rel=1e-4, abs=1e-5)


def test_the_word_as_typed_outranks_its_synonym(service: SearchService, index: Path) -> None:
    assert service.synonyms is not None
    _touch(index / "synonyms.txt", "js, javascript\n", time.time_ns())
    service.synonyms.recheck_s = 0.0
    js = _run(service, "tooling js")
    assert js["http://w.test/typed.html"] > js["http://w.test/synonym.html"] > 0
    javascript = _run(service, "tooling javascript")
    assert javascript["http://w.test/synonym.html"] > javascript["http://w.test/typed.html"] > 0
    excluded = _run(service, "tooling -js")  # an exclusion leaves out the synonyms too
    assert not {"http://w.test/typed.html", "http://w.test/synonym.html"} & set(excluded)


# ------------------------------------------------------------------ over HTTP


@pytest.fixture
def client(index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    data = tmp_path / "data"
    shutil.copytree(index / "index", data / "search")
    monkeypatch.delenv("LOOKUP_SEARCH_SYNONYMS", raising=False)
    with TestClient(create_app(data, subsystems=SEARCH)) as c:
        yield c


def test_the_answer_says_which_synonyms_were_applied(client: TestClient, tmp_path: Path) -> None:
    path = tmp_path / "data" / "search" / "synonyms.txt"
    assert path.read_text() == SEED  # a new data directory starts with the seed rules
    body = client.get("/search", params={"q": "js", "limit": 100}).json()
    assert body["synonyms"] == [{"term": "js", "synonyms": ["javascript"]}]
    urls = [r["url"] for r in body["results"]]
    want = Brute(PAGES).search(["js"], SEED, SYNONYM_WEIGHT)
    assert set(urls) == set(want) and body["estimatedTotal"] == len(want)
    plain = client.get("/search", params={"q": "docker"}).json()
    assert "synonyms" not in plain  # the contract's keys stay when nothing applied
    status = client.get("/search/status").json()
    assert status["synonyms"]["rules"] == 3 and status["synonyms"]["file"] == str(path)


def test_an_edit_of_the_file_serves_within_a_second(client: TestClient, tmp_path: Path) -> None:
    path = tmp_path / "data" / "search" / "synonyms.txt"
    assert "synonyms" not in client.get("/search", params={"q": "docker"}).json()
    _touch(path, SEED + "docker, container\n", time.time_ns())
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:  # the table is looked at once a second at most
        body = client.get("/search", params={"q": "docker"}).json()
        if "synonyms" in body:
            break
        time.sleep(0.05)
    assert body["synonyms"] == [{"term": "docker", "synonyms": ["container"]}]


def test_synonyms_off(index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "data"
    shutil.copytree(index / "index", data / "search")
    monkeypatch.setenv("LOOKUP_SEARCH_SYNONYMS", "off")
    with TestClient(create_app(data, subsystems=SEARCH)) as c:
        assert "synonyms" not in c.get("/search", params={"q": "js"}).json()
    assert not (data / "search" / "synonyms.txt").exists()


def test_openapi_declares_the_synonyms_field(client: TestClient) -> None:
    doc = client.get("/openapi.json").json()
    props = doc["components"]["schemas"]["SearchBody"]["properties"]
    assert "synonyms" in props and "notice" in props
    assert set(doc["components"]["schemas"]["SynonymUse"]["properties"]) == {"term", "synonyms"}
