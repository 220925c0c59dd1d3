"""The HotTermSource contract, written once and run against every implementation.

What the typeahead :class:`~lookup.typeahead.filters.HotBlocklist` relies on: edits apply
to what is stored now and report what they changed, the stamp moves on every real edit
(and only then may a reader skip re-reading), a second opener — another process — sees
an edit at its next check, and concurrent editors, threads or processes, lose nothing.
The backends come from the seam's registry (:data:`lookup.typeahead.blocklist.BACKENDS`):
a new backend registers its scheme there, says below how to get a fresh, empty list of it
(``FRESH``), and must pass unchanged.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lookup.typeahead.blocklist import BACKENDS, HotTermSource, backend, open_hot_term_source
from lookup.typeahead.filters import DEFAULT_BLOCKLIST, HotBlocklist
from tests.contracts.seams import (
    Fresh,
    check_port_imports_no_backend,
    check_registered,
    fresh_url,
)

ROOT = Path(__file__).resolve().parents[2]


def _file(tmp_path: Path) -> str:
    return (tmp_path / "typeahead" / "blocklist.txt").resolve().as_uri()


#: scheme -> how to get the URL of a fresh, empty list: a function of a temp dir, or the
#: name of the fixture that gives a new database on a real server.
FRESH: dict[str, Fresh] = {"file": _file, "postgresql": "postgres_db"}


@pytest.fixture(params=list(BACKENDS))
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return fresh_url(request, tmp_path, FRESH)


def test_every_registered_backend_is_a_hot_term_source() -> None:
    check_registered(BACKENDS, backend, HotTermSource)


def test_the_port_imports_no_backend() -> None:
    """``lookup.typeahead.blocklist`` names its backends; it imports one only when a URL
    asks."""
    check_port_imports_no_backend("lookup.typeahead.blocklist")


@pytest.fixture
def opener(url: str) -> Iterator[Callable[[], HotTermSource]]:
    """Opens sources on ``url`` (each one a process of the fleet); closes them after."""
    opened: list[HotTermSource] = []

    def open_one() -> HotTermSource:
        opened.append(open_hot_term_source(url))
        return opened[-1]

    yield open_one
    for source in opened:
        source.close()


def test_the_factory_gives_an_empty_source(opener: Callable[[], HotTermSource]) -> None:
    source = opener()
    assert isinstance(source, HotTermSource)
    assert "@" not in source.describe()
    assert source.terms() == []


def test_unknown_schemes_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="postgresql"):
        open_hot_term_source("redis://127.0.0.1:1/0")


def test_edits_report_what_changed_and_move_the_stamp(
    opener: Callable[[], HotTermSource],
) -> None:
    source = opener()
    before = source.stamp()
    assert source.edit(["fake exam papers", "leaked answers"], []) == (
        ["fake exam papers", "leaked answers"], [],
    )  # fmt: skip
    after_add = source.stamp()
    assert after_add != before
    assert source.terms() == ["fake exam papers", "leaked answers"]
    # Adding what is there and removing what is not changes nothing, not even the stamp.
    assert source.edit(["leaked answers"], ["never added"]) == ([], [])
    assert source.stamp() == after_add
    assert source.edit(["cheat codes"], ["leaked answers"]) == (["cheat codes"], ["leaked answers"])
    assert source.stamp() != after_add
    assert source.terms() == ["cheat codes", "fake exam papers"]
    # A phrase both added and removed in one edit is only removed.
    assert source.edit(["cheat codes", "new one"], ["cheat codes"]) == (
        ["new one"],
        ["cheat codes"],
    )
    assert source.terms() == ["fake exam papers", "new one"]


def test_a_second_opener_sees_the_edits(opener: Callable[[], HotTermSource]) -> None:
    one, two = opener(), opener()
    seen = two.stamp()
    one.edit(["shared phrase"], [])
    assert two.stamp() != seen
    assert two.terms() == ["shared phrase"]
    assert two.edit([], ["shared phrase"]) == ([], ["shared phrase"])
    assert one.terms() == []


def test_concurrent_editors_lose_nothing(opener: Callable[[], HotTermSource]) -> None:
    sources = [opener() for _ in range(4)]
    doomed = [f"doomed {i}" for i in range(20)]
    sources[0].edit(doomed, [])
    start = threading.Barrier(4)
    removed: list[str] = []

    def edit(i: int) -> None:
        start.wait()
        for j in range(10):
            sources[i].edit([f"thread {i} phrase {j}"], [])
            if i % 2:  # two of the threads also remove what the first one added
                removed.extend(sources[i].edit([], [doomed[(i // 2) * 10 + j]])[1])

    threads = [threading.Thread(target=edit, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(removed) == sorted(doomed)
    assert set(sources[0].terms()) == {
        f"thread {i} phrase {j}" for i in range(4) for j in range(10)
    }


EDITOR = """
import sys
from lookup.typeahead.blocklist import open_hot_term_source
source = open_hot_term_source(sys.argv[1])
sys.stdin.readline()  # every editor starts at once
for j in range(25):
    assert source.edit([f"process {sys.argv[2]} phrase {j}"], []) == (
        [f"process {sys.argv[2]} phrase {j}"], [])
source.close()
"""


def test_concurrent_processes_lose_nothing(url: str) -> None:
    editors = [
        subprocess.Popen(
            [sys.executable, "-c", EDITOR, url, str(k)], cwd=ROOT, stdin=subprocess.PIPE
        )
        for k in range(3)
    ]
    for p in editors:
        assert p.stdin is not None
        p.stdin.write(b"go\n")
        p.stdin.close()
    assert [p.wait(timeout=120) for p in editors] == [0, 0, 0]
    source = open_hot_term_source(url)
    try:
        assert set(source.terms()) == {
            f"process {k} phrase {j}" for k in range(3) for j in range(25)
        }
    finally:
        source.close()


def test_a_hot_blocklist_over_the_source_follows_another_processes_edit(
    opener: Callable[[], HotTermSource],
) -> None:
    reader = HotBlocklist(source=opener())
    writer = HotBlocklist(source=opener())
    assert reader.blocks("how to make a bomb at home")  # the built-in phrases always apply
    assert not reader.blocks("buy leaked answers here")
    v0 = reader.version
    assert writer.add(["Leaked  Answers"]) == ["leaked answers"]
    assert writer.blocks("buy leaked answers here")  # the writer at once
    assert not reader.blocks("buy leaked answers here")  # the reader at its next check
    assert reader.refresh() is True
    assert reader.version > v0 and reader.blocks("buy leaked answers here")
    assert reader.refresh() is False  # nothing moved: nothing re-read
    assert reader.remove("leaked answers") is True
    assert writer.refresh() is True and not writer.blocks("buy leaked answers here")
    assert writer.remove("leaked answers") is False
    with pytest.raises(ValueError, match="built-in"):
        writer.remove(DEFAULT_BLOCKLIST[0])
