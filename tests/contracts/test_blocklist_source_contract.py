"""The BlocklistSource contract, written once and run against every implementation.

What the shortener's :class:`~lookup.shortener.urls.Blocklist` relies on: edits report
what they changed, the stamp moves on every real edit (and only then may a reader skip
re-reading), a second opener — another process of the fleet — sees an edit after its
next check, and concurrent editors lose nothing. The backends come from the seam's
registry (:data:`lookup.shortener.blocklist.BACKENDS`): a new backend registers its scheme
there, says below how to get a fresh, empty list of it (``FRESH``), and must pass
unchanged.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lookup.shortener.blocklist import (
    BACKENDS,
    BlocklistSource,
    backend,
    open_blocklist_source,
)
from lookup.shortener.urls import Blocklist
from tests.contracts.seams import (
    Fresh,
    check_port_imports_no_backend,
    check_registered,
    fresh_url,
)


def _file(tmp_path: Path) -> str:
    return (tmp_path / "blocklist.txt").resolve().as_uri()


#: scheme -> how to get the URL of a fresh, empty list: a function of a temp dir, or the
#: name of the fixture that gives a new database on a real server.
FRESH: dict[str, Fresh] = {"file": _file, "postgresql": "postgres_db"}


def clean(line: str) -> str:
    return line.split("#", 1)[0].strip().lower()


@pytest.fixture(params=list(BACKENDS))
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return fresh_url(request, tmp_path, FRESH)


def test_every_registered_backend_is_a_blocklist_source() -> None:
    check_registered(BACKENDS, backend, BlocklistSource)


def test_the_port_imports_no_backend() -> None:
    """``lookup.shortener.blocklist`` names its backends; it imports one only when a URL
    asks."""
    check_port_imports_no_backend("lookup.shortener.blocklist")


@pytest.fixture
def opener(url: str) -> Iterator[Callable[[], BlocklistSource]]:
    """Opens sources on ``url`` (each one a process of the fleet); closes them after."""
    opened: list[BlocklistSource] = []

    def open_one() -> BlocklistSource:
        opened.append(open_blocklist_source(url))
        return opened[-1]

    yield open_one
    for source in opened:
        source.close()


def test_the_factory_gives_a_blocklist_source(opener: Callable[[], BlocklistSource]) -> None:
    source = opener()
    assert isinstance(source, BlocklistSource)
    assert "@" not in source.describe()
    assert source.entries(clean) == frozenset()


def test_unknown_schemes_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="postgresql"):
        open_blocklist_source("redis://127.0.0.1:1/0")


def test_edits_report_what_changed_and_move_the_stamp(
    opener: Callable[[], BlocklistSource],
) -> None:
    source = opener()
    before = source.stamp()
    assert source.edit(["a.example", "b.example"], [], clean) == (["a.example", "b.example"], [])
    after_add = source.stamp()
    assert after_add != before
    assert source.entries(clean) == {"a.example", "b.example"}
    # Adding what is there and removing what is not changes nothing.
    assert source.edit(["a.example"], ["zz.example"], clean) == ([], [])
    assert source.edit(["c.example"], ["a.example"], clean) == (["c.example"], ["a.example"])
    assert source.stamp() != after_add
    assert source.entries(clean) == {"b.example", "c.example"}


def test_a_second_opener_sees_the_edits(opener: Callable[[], BlocklistSource]) -> None:
    one, two = opener(), opener()
    seen = two.stamp()
    one.edit(["shared.example"], [], clean)
    assert two.stamp() != seen
    assert two.entries(clean) == {"shared.example"}


def test_concurrent_editors_lose_nothing(opener: Callable[[], BlocklistSource]) -> None:
    sources = [opener() for _ in range(4)]
    start = threading.Barrier(4)

    def edit(i: int) -> None:
        start.wait()
        for j in range(10):
            sources[i].edit([f"d{i}-{j}.example"], [], clean)

    threads = [threading.Thread(target=edit, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sources[0].entries(clean) == {f"d{i}-{j}.example" for i in range(4) for j in range(10)}


def test_a_blocklist_over_the_source_follows_another_processes_edit(
    opener: Callable[[], BlocklistSource],
) -> None:
    now = [0.0]
    reader = Blocklist(source=opener(), builtin=[], clock=lambda: now[0])
    writer = Blocklist(source=opener(), builtin=[])
    assert reader.match("www.bad.example") is None
    result = writer.edit(["Bad.Example."], [])
    assert result["added"] == ["bad.example"]
    assert reader.match("www.bad.example") is None  # not re-checked yet: cached
    now[0] += 5.0
    assert reader.match("www.bad.example") == "bad.example"
    assert reader.version == writer.version
