"""A crawl's WARC files reach the indexer through a version store: no shared filesystem."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lookup.cli import main
from lookup.kit.versionstore import open_version_store
from lookup.kit.versionstore.tree import mirror_current, publish_tree, tree_files
from lookup.search import SearchService, build_index, current_manifest
from lookup.search.crawlstore import CRAWL_LINE, copy_dir, is_store_url
from lookup.search.events import EVENTS_FILE
from lookup.search.shard import IndexVersion
from tests.search.corpus import CrawlWriter, stdlib_pages

_names = st.sampled_from(["a.bin", "warc/x.warc.gz", "warc/y.warc.gz", "events.jsonl", "d/e/f"])


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rounds=st.lists(st.dictionaries(_names, st.binary(max_size=300), min_size=1), max_size=3))
def test_a_mirror_equals_the_tree_published_last(rounds: list[dict[str, bytes]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = open_version_store(Path(tmp) / "store", chunk_size=64)
        src, mirror = Path(tmp) / "src", Path(tmp) / "mirror"
        for files in rounds:
            for rel, data in files.items():  # a tree only grows or changes, as a crawl does
                (src / rel).parent.mkdir(parents=True, exist_ok=True)
                (src / rel).write_bytes(data)
            publish_tree(store, "t/line", src, first=("events.jsonl",))
            assert publish_tree(store, "t/line", src) is None  # unchanged: nothing stored
            done = mirror_current(store, "t/line", mirror)
            assert done is not None and done[1] == mirror
            want = {rel: p.read_bytes() for rel, p in tree_files(src, ("**/*",)).items()}
            got = {rel: p.read_bytes() for rel, p in tree_files(mirror, ("**/*",)).items()}
            assert got == want
        if not rounds:
            assert mirror_current(store, "t/line", mirror) is None


def test_only_event_logs_and_warc_files_are_published_and_store_urls_are_told_apart(
    tmp_path: Path,
) -> None:
    root = tmp_path / "crawl"
    CrawlWriter(root).fetch(stdlib_pages(3))
    (root / "crawl.sqlite").write_bytes(b"state")
    (root / "warc" / ".partial.tmp").write_bytes(b"x")
    store = open_version_store(tmp_path / "store")
    from lookup.search.crawlstore import CRAWL_FILES

    info = publish_tree(store, CRAWL_LINE, root, include=CRAWL_FILES, first=(EVENTS_FILE,))
    assert info is not None and sorted(info.files) == [EVENTS_FILE, "warc/crawl-00001.warc.gz"]
    assert is_store_url("postgresql://u@h/db") and is_store_url("postgres://h/db")
    assert not is_store_url("/data/crawl") and not is_store_url("postgresql")


@pytest.mark.postgres
@pytest.mark.slow
def test_an_index_built_from_the_store_has_the_documents_of_the_directory_index(
    crawl: CrawlWriter,
    postgres_db: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["crawl-publish", str(crawl.root), "--to", postgres_db]) == 0
    assert "current" in capsys.readouterr().out
    assert main(["crawl-publish", str(crawl.root), "--to", postgres_db]) == 0
    assert "unchanged" in capsys.readouterr().out
    indexer = tmp_path / "indexer-data"  # another machine: the crawl is not on its disk
    assert main(["index", postgres_db, "--shards", "1", "--data-dir", str(indexer)]) == 0
    assert "full build" in capsys.readouterr().out
    direct = tmp_path / "direct"
    build_index(crawl.root, direct, shards=1)
    via_store, on_disk = IndexVersion.open(indexer / "search"), IndexVersion.open(direct)
    assert via_store is not None and on_disk is not None
    assert set(via_store.locations) == set(on_disk.locations) and len(on_disk.locations) == 400
    a, b = SearchService(indexer / "search", realtime=False), SearchService(direct, realtime=False)
    try:
        for q in ("heap queue", "socket", "regular expression"):
            assert a.search(q)["results"] == b.search(q)["results"]
    finally:
        a.close()
        b.close()
    # the crawl grows on the crawler's machine: published again, indexed incrementally
    crawl.fetch(stdlib_pages(415)[400:], at=2.0e9)
    assert main(["crawl-publish", str(crawl.root), "--to", postgres_db]) == 0
    assert main(["index", postgres_db, "--data-dir", str(indexer)]) == 0
    assert "incremental update" in capsys.readouterr().out
    manifest = current_manifest(indexer / "search")
    assert manifest is not None and manifest.live_docs == 415
    assert manifest.source.crawl_dir == str(copy_dir(indexer).resolve())


@pytest.mark.postgres
@pytest.mark.slow
def test_a_damaged_or_missing_crawl_in_the_store_is_refused(
    crawl: CrawlWriter, postgres_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["index", postgres_db, "--data-dir", str(tmp_path / "d0")]) == 1
    assert "no crawl is published" in capsys.readouterr().err
    assert main(["crawl-publish", str(tmp_path / "nothing"), "--to", postgres_db]) == 2
    assert main(["crawl-publish", str(crawl.root), "--to", postgres_db]) == 0
    import psycopg

    with psycopg.connect(postgres_db, autocommit=True) as conn:
        conn.execute(
            "UPDATE vs_chunks SET data = overlay(data placing '\\xff'::bytea from 1 for 1) "
            "WHERE sha256 = (SELECT chunks[1] FROM vs_files WHERE path LIKE 'warc/%%' LIMIT 1)"
        )
    capsys.readouterr()
    assert main(["index", postgres_db, "--data-dir", str(tmp_path / "d1")]) == 1
    assert "checksum" in capsys.readouterr().err
    assert not (tmp_path / "d1" / "search").exists()
