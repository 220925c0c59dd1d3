"""Every secret file of the project is made one way (``kit/secrets/file.py:create_once``):
mode 0600, atomic, the same value for every process that starts at once."""

from __future__ import annotations

import ast
import multiprocessing
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from lookup.kit.ids import load_or_create_secret
from lookup.kit.secrets.file import FileSecretStore, create_once, read_or_create_secret
from tests.sourcetree import parse_file

ROOT = Path(__file__).resolve().parents[2]


def _random() -> bytes:
    return os.urandom(32)


#: The project's ways to get a secret file, each as "read or make the file at this path".
MAKERS: dict[str, Callable[[Path], object]] = {
    "secret store": lambda p: FileSecretStore(p.parent).get_or_create(p.name, _random),
    "text secret": read_or_create_secret,
    "key permutation secret": load_or_create_secret,
}


@pytest.mark.parametrize("way", sorted(MAKERS))
def test_each_way_makes_an_owner_only_file_once(way: str, tmp_path: Path) -> None:
    path = tmp_path / "deep" / "dir" / "secret"
    first = MAKERS[way](path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert MAKERS[way](path) == first
    assert list(path.parent.iterdir()) == [path]  # no temporary file left behind


def _race(path: str, out: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    out.put(create_once(path, _random))


def test_processes_starting_together_agree_on_one_value(tmp_path: Path) -> None:
    path = str(tmp_path / "raced")
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_race, args=(path, out)) for _ in range(4)]
    for p in procs:
        p.start()
    got = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=120)
    assert len(set(got)) == 1 and Path(path).read_bytes() == got[0]


def test_the_atomic_secret_file_is_written_in_one_place() -> None:
    """``O_EXCL`` + hard link is the secret-file recipe; it lives in ``create_once`` only."""
    makers = []
    for path in sorted((ROOT / "lookup").rglob("*.py")):
        tree = parse_file(path)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in ("O_EXCL", "link"):
                if isinstance(node.value, ast.Name) and node.value.id == "os":
                    makers.append(path.relative_to(ROOT).as_posix())
    # the version store's cache hard-links checked, immutable chunks into place (not a
    # secret, and never O_EXCL): one more place, on purpose
    assert sorted(set(makers)) == [
        "lookup/kit/secrets/file.py",
        "lookup/kit/versionstore/cache.py",
    ], makers
