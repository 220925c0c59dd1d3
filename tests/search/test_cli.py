"""``lookup index``: the real command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from lookup.cli import main
from lookup.search import SearchService, current_manifest
from tests.search.corpus import CrawlWriter


def test_index_builds_into_the_data_dir_and_updates_incrementally(
    crawl: CrawlWriter,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from lookup.search import manifest

    monkeypatch.setattr(manifest, "DURABLE", True)  # the real command fsyncs what it publishes
    data = tmp_path / "data"
    assert main(["index", str(crawl.root), "--shards", "2", "--data-dir", str(data)]) == 0
    out, err = capsys.readouterr()
    assert "full build" in out and "live documents 400" in out
    assert "indexing pages" in err and "100.0%" in err  # progress
    manifest = current_manifest(data / "search")
    assert manifest is not None and manifest.shards == 2 and manifest.live_docs == 400
    assert main(["index", str(crawl.root), "--data-dir", str(data)]) == 0
    assert "incremental update" in capsys.readouterr().out
    svc = SearchService(data / "search", realtime=False)
    assert svc.search("heap")["results"]
    svc.close()


def test_index_to_an_explicit_out_dir(
    crawl: CrawlWriter, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "elsewhere"
    assert main(["index", str(crawl.root), "--out", str(out), "--optimize"]) == 0
    m = current_manifest(out)
    assert m is not None and m.shards == 4 and all(len(s) == 1 for s in m.segments)


def test_index_errors_are_messages_not_tracebacks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["index", str(tmp_path / "nothing"), "--data-dir", str(tmp_path)]) == 2
    assert "no events.jsonl" in capsys.readouterr().err
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "events.jsonl").write_text("")
    assert main(["index", str(tmp_path / "c"), "--shards", "0", "--data-dir", str(tmp_path)]) == 2
    assert "--shards" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["index"])
