"""The hot blocklist's embedded file and what the cache over a source promises.

The contract every source keeps is in ``tests/contracts/test_typeahead_blocklist_contract.py``;
this file holds what only the file does (a hand-edited file survives API edits) and how
:class:`HotBlocklist` behaves when its source fails, and which source a server opens.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx
import pytest

from lookup.errors import Unavailable
from lookup.server import create_app
from lookup.typeahead.blocklist import open_hot_term_source
from lookup.typeahead.blocklist.file import FileHotTermSource
from lookup.typeahead.filters import HotBlocklist
from lookup.typeahead.http import install
from lookup.typeahead.pipeline import blocklist_path, open_hot_blocklist
from lookup.typeahead.serving import SuggestService
from tests.conftest import serve_in_thread


def test_api_edits_keep_an_operators_comments_and_lines(tmp_path: Path) -> None:
    path = tmp_path / "blocklist.txt"
    path.write_text("# kept by hand\nOld  Phrase\n\x00junk\n\n", encoding="utf-8")
    source = FileHotTermSource(path)
    assert source.terms() == ["old phrase"]
    assert source.edit(["new phrase"], ["old phrase"]) == (["new phrase"], ["old phrase"])
    assert path.read_text(encoding="utf-8") == "# kept by hand\n\x00junk\n\nnew phrase\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".blocklist.txt.lock", "blocklist.txt"]


def test_a_new_file_starts_with_its_explanation(tmp_path: Path) -> None:
    path = tmp_path / "typeahead" / "blocklist.txt"
    FileHotTermSource(path).edit(["some phrase"], [])
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("# hot blocklist") and lines[1:] == ["some phrase"]


def test_file_urls_and_plain_paths_name_the_same_file(tmp_path: Path) -> None:
    path = tmp_path / "my list.txt"
    by_url = open_hot_term_source(path.resolve().as_uri())
    assert isinstance(by_url, FileHotTermSource) and by_url.path == path.resolve()
    by_path = open_hot_term_source(str(path))
    assert isinstance(by_path, FileHotTermSource) and by_path.path == path
    with pytest.raises(ValueError, match="names no file"):
        open_hot_term_source("file:///")


class FlakySource(FileHotTermSource):
    """A file source whose server can be 'down' (reads raise Unavailable)."""

    down = False

    def stamp(self) -> object:
        if self.down:
            raise Unavailable("the typeahead blocklist is unavailable")
        return super().stamp()


def test_a_source_that_cannot_be_read_keeps_the_last_list(tmp_path: Path) -> None:
    source = FlakySource(tmp_path / "blocklist.txt")
    hot = HotBlocklist(source=source)
    hot.add(["leaked answers"])
    source.down = True
    FileHotTermSource(source.path).edit(["cheat codes"], [])  # another process edits
    assert hot.refresh() is False and hot.read_errors == 1
    assert hot.blocks("leaked answers today")  # still enforced, never an empty list
    source.down = False
    assert hot.refresh() is True and hot.hot_terms == ["cheat codes", "leaked answers"]


def test_without_a_source_the_hot_phrases_live_in_memory() -> None:
    hot = HotBlocklist(None)
    assert hot.add(["Some Phrase"]) == ["some phrase"] and hot.blocks("about some phrase")
    assert hot.refresh() is False and hot.describe() == "memory"
    assert hot.remove("some phrase") is True and hot.remove("some phrase") is False


def test_the_setting_names_the_list_a_server_opens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LOOKUP_TYPEAHEAD_BLOCKLIST", raising=False)
    default = open_hot_blocklist(tmp_path / "data")
    assert default.path == blocklist_path(tmp_path / "data")
    elsewhere = tmp_path / "shared" / "list.txt"
    monkeypatch.setenv("LOOKUP_TYPEAHEAD_BLOCKLIST", elsewhere.resolve().as_uri())
    chosen = open_hot_blocklist(tmp_path / "data")
    chosen.add(["one phrase"])
    assert chosen.describe() == elsewhere.resolve().as_uri() and elsewhere.exists()
    assert not blocklist_path(tmp_path / "data").exists()
    monkeypatch.setenv("LOOKUP_TYPEAHEAD_BLOCKLIST", "redis://127.0.0.1:1/0")
    with pytest.raises(ValueError, match="postgresql"):
        open_hot_blocklist(tmp_path / "data")


class StallingSource(FileHotTermSource):
    """A file source whose store stalls (every read waits ``stall_s``) while ``stalled``
    is set: a database server that has stopped answering."""

    stall_s = 5.0

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.stalled = threading.Event()

    def stamp(self) -> object:
        if self.stalled.is_set():
            time.sleep(self.stall_s)
        return super().stamp()


def test_suggestions_answer_while_the_blocklists_store_stalls(data_dir: Path) -> None:
    source = StallingSource(blocklist_path(data_dir))
    service = SuggestService.from_data_dir(data_dir)
    service.blocklist = HotBlocklist(source=source)
    victim = service.lookup("i", "en-IN").suggestions[0]
    service.blocklist.add([victim])
    app = create_app(data_dir, subsystems=[lambda m: install(m, service)])
    with serve_in_thread(app) as base, httpx.Client(base_url=base, timeout=30) as http:
        source.stalled.set()  # the poller's next look at the list waits 5 s
        slowest = 0.0
        deadline = time.monotonic() + 2 * StallingSource.stall_s
        while time.monotonic() < deadline:
            t0 = time.monotonic()
            r = http.get("/v1/suggest", params={"q": "i", "market": "en-IN"})
            slowest = max(slowest, time.monotonic() - t0)
            assert r.status_code == 200 and victim not in r.json()["suggestions"]
            time.sleep(0.05)
        source.stalled.clear()
    assert slowest < 1.0, f"a suggestion waited {slowest:.1f} s for the stalled blocklist"
