"""Index versions in PostgreSQL: `lookup index` publishes there, a service with an empty
data directory serves them, and its answers equal those of the directory-served index."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from lookup.cli import main
from lookup.errors import Damaged
from lookup.search import SearchService, build_index
from lookup.search.location import index_location, open_index_location
from lookup.search.sharedlocation import SharedIndexLocation
from tests.search.conftest import sample_queries
from tests.search.corpus import CrawlWriter, Page, stdlib_pages

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def _answers(svc: SearchService, queries: list[str]) -> list[list[tuple[str, float]]]:
    return [[(r["url"], r["score"]) for r in svc.search(q)["results"]] for q in queries]


def test_a_published_index_is_served_from_an_empty_data_dir_with_identical_answers(
    base_crawl: Path,
    index_1: Path,
    pages: list[Page],
    postgres_db: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("LOOKUP_SEARCH_INDEX_STORE", postgres_db)
    work = tmp_path / "indexer-data"
    code = main(["index", str(base_crawl), "--shards", "1", "--data-dir", str(work)])
    assert code == 0, capsys.readouterr().err
    assert "shared index store" in capsys.readouterr().err
    empty = tmp_path / "server-data" / "search"
    served = SearchService(index_location(empty, postgres_db), realtime=False)
    local = SearchService(index_1, realtime=False)
    try:
        assert not empty.exists()
        queries = sample_queries(pages, 40)
        got, want = _answers(served, queries), _answers(local, queries)
        assert got == want and sum(map(len, want)) > 0
        assert served.snapshot().live_docs == local.snapshot().live_docs
        assert any(empty.glob("shard-00/seg-*")), "the live files are copied locally"
    finally:
        served.close()
        local.close()


def test_a_new_publish_is_seen_by_a_polling_service_and_by_a_listener(
    crawl: CrawlWriter, postgres_db: str, tmp_path: Path
) -> None:
    first = build_index(crawl.root, tmp_path / "work", shards=2, index_store=postgres_db)
    assert first.published and first.version == 1
    location = open_index_location(postgres_db, cache_dir=tmp_path / "server")
    assert isinstance(location, SharedIndexLocation)
    svc = SearchService(location, realtime=False)
    try:
        assert svc.snapshot().version == 1
        seen = location.current_token()
        heard: list[str | None] = []
        listener = threading.Thread(target=lambda: heard.append(location.wait(seen, 60)))
        listener.start()
        crawl.fetch(stdlib_pages(430)[400:], at=2.0e9)
        second = build_index(crawl.root, tmp_path / "work", index_store=postgres_db)
        listener.join(60)
        assert second.published and second.incremental and second.version == 2
        assert heard == ["manifest-000002.json"]
        svc.reload()
        assert svc.snapshot().version == 2 and svc.snapshot().live_docs == 430
    finally:
        svc.close()
        location.close()


def test_a_started_service_opens_an_announced_version_without_polling(
    crawl: CrawlWriter, postgres_db: str, tmp_path: Path
) -> None:
    build_index(crawl.root, tmp_path / "work", shards=1, index_store=postgres_db)
    svc = SearchService(index_location(tmp_path / "server", postgres_db), realtime=False)
    try:
        svc.start()
        svc._watcher.stop()  # only the listener is left to notice
        assert svc.snapshot().version == 1
        crawl.fetch(stdlib_pages(405)[400:], at=2.0e9)
        assert build_index(crawl.root, tmp_path / "work", index_store=postgres_db).published
        deadline = time.monotonic() + 60
        while (live := svc.live_version()) is None or live.version != 2:
            assert time.monotonic() < deadline, "the announced version was never opened"
            time.sleep(0.05)
        assert live.live_docs == 405
    finally:
        svc.close()


def test_an_indexer_on_another_machine_continues_incrementally_from_the_store(
    crawl: CrawlWriter, postgres_db: str, tmp_path: Path
) -> None:
    build_index(crawl.root, tmp_path / "machine-a", shards=1, index_store=postgres_db)
    crawl.fetch(stdlib_pages(420)[400:], at=2.0e9)
    report = build_index(crawl.root, tmp_path / "machine-b", index_store=postgres_db)
    assert report.published and report.incremental and report.version == 2
    assert report.added == 20
    location = open_index_location(postgres_db, cache_dir=tmp_path / "machine-c")
    assert location.versions() == [1, 2]
    snap = location.open()
    assert snap is not None and snap.live_docs == 420


def _flip_a_chunk(url: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "UPDATE vs_chunks SET data = overlay(data placing '\\xff'::bytea from 1 for 1) "
            "WHERE sha256 = (SELECT chunks[1] FROM vs_files WHERE path LIKE %s LIMIT 1)",
            ("%postings.bin",),
        )


def test_a_damaged_chunk_is_refused_as_damaged_not_served(
    base_crawl: Path, postgres_db: str, tmp_path: Path
) -> None:
    build_index(base_crawl, tmp_path / "work", shards=1, index_store=postgres_db)
    _flip_a_chunk(postgres_db)
    location = open_index_location(postgres_db, cache_dir=tmp_path / "server")
    with pytest.raises(Damaged, match="checksum"):
        location.open()
    assert not list((tmp_path / "server").glob("shard-00/seg-*/postings.bin"))


def test_versions_rollback_and_the_cli_on_the_shared_store(
    crawl: CrawlWriter,
    postgres_db: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("LOOKUP_SEARCH_INDEX_STORE", postgres_db)
    data = tmp_path / "data"
    assert main(["index", str(crawl.root), "--shards", "1", "--data-dir", str(data)]) == 0
    crawl.fetch(stdlib_pages(410)[400:], at=2.0e9)
    assert main(["index", str(crawl.root), "--data-dir", str(data)]) == 0
    capsys.readouterr()
    elsewhere = tmp_path / "other-data"  # another machine: nothing on its disk
    assert main(["index", "versions", "--data-dir", str(elsewhere)]) == 0
    shown: Any = capsys.readouterr().out
    assert "live" in shown and "previous (rollback target)" in shown
    assert main(["index", "rollback", "--data-dir", str(elsewhere)]) == 0
    location = open_index_location(postgres_db, cache_dir=tmp_path / "c")
    current = location.current()
    assert current is not None and current.version == 1 and current.live_docs == 400
