"""Fixtures: one real-text crawl and indexes built from it, shared by the search tests."""

from __future__ import annotations

import os
import random
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from lookup.search import SearchService, build_index
from tests.conftest import shared_build
from tests.search.corpus import CrawlWriter, Page, stdlib_pages

N_PAGES = 400


@pytest.fixture(scope="session", autouse=True)
def _no_fsync() -> Iterator[None]:
    """Skip fsync while tests write hundreds of small indexes (test_cli keeps it on)."""
    from lookup.search import manifest

    manifest.DURABLE = False
    yield
    manifest.DURABLE = True


@pytest.fixture(scope="session", autouse=True)
def _generous_deadline() -> Iterator[None]:
    """A healthy shard must never miss the default deadline on a loaded test machine;
    tests of deadlines pass their own ``deadline_ms``. Session-scoped so that it is in
    place before any session-scoped service builds its coordinator."""
    old = os.environ.get("LOOKUP_SEARCH_DEADLINE_MS")
    os.environ["LOOKUP_SEARCH_DEADLINE_MS"] = "5000"
    yield
    if old is None:
        os.environ.pop("LOOKUP_SEARCH_DEADLINE_MS", None)
    else:
        os.environ["LOOKUP_SEARCH_DEADLINE_MS"] = old


@pytest.fixture(scope="session")
def pages() -> list[Page]:
    """The test web's pages (stdlib docstrings)."""
    return stdlib_pages(N_PAGES)


@pytest.fixture(scope="session")
def base_crawl(tmp_path_factory: pytest.TempPathFactory, pages: list[Page]) -> Path:
    """A crawl directory holding every page once (read-only for tests: copy to change)."""
    return shared_build(
        tmp_path_factory, "search-crawl", lambda root: CrawlWriter(root).fetch(pages)
    )


@pytest.fixture(scope="session")
def index_1(tmp_path_factory: pytest.TempPathFactory, base_crawl: Path) -> Path:
    """The crawl indexed into one shard."""
    return shared_build(
        tmp_path_factory, "search-idx1", lambda out: build_index(base_crawl, out, shards=1)
    )


@pytest.fixture(scope="session")
def index_4(tmp_path_factory: pytest.TempPathFactory, base_crawl: Path) -> Path:
    """The crawl indexed into four shards, small segments so shards hold several."""
    return shared_build(
        tmp_path_factory,
        "search-idx4",
        lambda out: build_index(base_crawl, out, shards=4, segment_docs=40),
    )


@pytest.fixture
def crawl(tmp_path: Path, base_crawl: Path) -> CrawlWriter:
    """A private, writable copy of the base crawl."""
    root = tmp_path / "crawl"
    shutil.copytree(base_crawl, root)
    c = CrawlWriter(root)
    c.warc_no = len(list((root / "warc").iterdir()))
    return c


@pytest.fixture
def service_1(index_1: Path) -> Iterator[SearchService]:
    """A batch-only service over the one-shard index."""
    svc = SearchService(index_1, realtime=False)
    svc.reload()
    yield svc
    svc.close()


@pytest.fixture
def service_4(index_4: Path) -> Iterator[SearchService]:
    """A batch-only service over the four-shard index."""
    svc = SearchService(index_4, realtime=False)
    svc.reload()
    yield svc
    svc.close()


def sample_queries(pages: list[Page], n: int, seed: int = 7) -> list[str]:
    """Queries of one to three words drawn from the pages' own text (plus a few misses)."""
    rng = random.Random(seed)
    words = [w for p in pages for w in p.text.split() if w.isalpha() and len(w) > 2]
    out = []
    for i in range(n):
        k = rng.choice([1, 1, 2, 2, 2, 3])
        q = " ".join(rng.choice(words) for _ in range(k))
        if i % 25 == 0:
            q += " zzyzxnotaword"
        out.append(q)
    return out
