"""Shared typeahead fixtures: one small generated log, folded and published once per session."""

from __future__ import annotations

import pickle
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from lookup.typeahead import querylog
from lookup.typeahead.aggregate import ScoreBoard, read_query_log
from lookup.typeahead.filters import DEFAULT_BLOCKLIST, TermBlocklist
from lookup.typeahead.pipeline import BuildConfig, MarketBuild, compile_market, run, state_path
from tests.conftest import shared_build

EVENTS = 50_000
SEED = 7


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, t: float = 1_800_000_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


@dataclass
class Built:
    """A data directory with the small log and published snapshots, plus what went in."""

    data_dir: Path
    log: querylog.QueryLog
    log_path: Path
    config: BuildConfig
    board: ScoreBoard
    builds: dict[str, MarketBuild]


def _log_copy(data_dir: Path) -> Path:
    """The generated log, pickled beside the shared data directory (not in it: tests copy
    the directory) so that a worker need not generate it again."""
    return data_dir.with_name(data_dir.name + ".log.pickle")


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    config = BuildConfig()

    def build(data_dir: Path) -> None:
        log = querylog.generate(EVENTS, SEED)
        result = run(data_dir, querylog.write(log, querylog.log_path(data_dir)), config=config)
        assert result.ok, result.to_dict()
        _log_copy(data_dir).write_bytes(pickle.dumps(log))

    data_dir = shared_build(tmp_path_factory, "typeahead-data", build)
    log = pickle.loads(_log_copy(data_dir).read_bytes())
    path = querylog.log_path(data_dir)
    board = ScoreBoard.load(state_path(data_dir))
    blocklist = TermBlocklist(DEFAULT_BLOCKLIST)
    builds = {m: compile_market(s, blocklist, config) for m, s in board.markets.items()}
    return Built(data_dir, log, path, config, board, builds)


@pytest.fixture
def data_dir(built: Built, tmp_path: Path) -> Path:
    """A private copy of the built data directory (tests may deploy, block, roll back)."""
    target = tmp_path / "data"
    shutil.copytree(built.data_dir, target)
    return target


@pytest.fixture(scope="session")
def small_events(built: Built):  # type: ignore[no-untyped-def]
    """The log read back through the pipeline's reader."""
    return read_query_log(built.log_path)
