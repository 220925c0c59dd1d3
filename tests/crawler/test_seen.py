"""The seen-URL check: the Bloom filter answers cheaply, the store settles every "maybe"."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.crawler.seen import SeenUrls
from lookup.crawler.store import UrlRecord, open_crawl_store
from lookup.kit.storeurl import sqlite_url


def row(url: str) -> UrlRecord:
    return UrlRecord(url_hash=f"h:{url}", url=url, host="a.test", state="queued")


def test_no_new_url_is_lost_to_a_false_positive(tmp_path: Path) -> None:
    store = open_crawl_store(sqlite_url(tmp_path / "s.sqlite"))
    seen = SeenUrls(store, capacity=50, fp_rate=0.3)  # a filter that often says "maybe"
    urls = [f"http://a.test/{i}" for i in range(2000)]
    with store.transaction():
        assert all(seen.check(row(u)) for u in urls)  # every one is new ...
        assert not any(seen.check(row(u)) for u in urls[::7])  # ... and then known
    assert seen.stats.false_positives > 0  # the filter was wrong, the store corrected it
    assert seen.stats.rebuilds > 0  # and it was rebuilt larger as it filled
    assert store.count_states() == {"queued": 2000}


def test_the_filter_is_rebuilt_from_the_store_after_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    store = open_crawl_store(sqlite_url(path))
    with store.transaction():
        SeenUrls(store).check(row("http://a.test/x"))
    store.close()
    store = open_crawl_store(sqlite_url(path))
    seen = SeenUrls(store)
    assert seen.bloom.might_contain("h:http://a.test/x")
    assert not seen.check(row("http://a.test/x"))
    assert seen.stats.maybe_seen == 1 and seen.stats.definitely_new == 0


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 300), max_size=400))
def test_against_a_set_oracle(tmp_path_factory, numbers: list[int]) -> None:  # noqa: ANN001
    store = open_crawl_store(sqlite_url(tmp_path_factory.mktemp("seen") / "s.sqlite"))
    seen = SeenUrls(store, capacity=16, fp_rate=0.2)
    oracle: set[int] = set()
    with store.transaction():
        for n in numbers:
            assert seen.check(row(f"http://a.test/{n}")) == (n not in oracle)
            oracle.add(n)
    store.close()
