"""``lookup crawl --workers N``'s exit status and report when a worker is lost (issue 24,
item 10): the command answers 0 when the others took over and finished the crawl, and
non-zero only when the crawl could not complete. The store is a stand-in here (its three
questions: grants, current owners, open work); the kill -9 drill in
``test_fleet_drills.py`` asks the same of a real fleet."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest

from lookup import cli
from lookup.crawler.fleet import CrawlFleet, judge_fleet


class FakeStore:
    def __init__(self, open_work: int) -> None:
        self.work = open_work

    def grants(self) -> list[tuple[int, int, str, float]]:
        # w2 held partitions 1, 3 and 4; it handed 3 to w3 when the fleet balanced (before
        # its last request, at 5.0); after its death w3 took 1 and w1 took 4.
        return [(0, 1, "w1", 1.0), (1, 2, "w2", 1.0), (2, 3, "w3", 1.0), (4, 4, "w2", 1.0),
                (3, 5, "w2", 1.0), (3, 6, "w3", 2.0), (1, 7, "w3", 9.0),
                (4, 8, "w1", 9.5)]  # fmt: skip

    def last_fetch_by_worker(self) -> dict[str, float]:
        return {"w1": 20.0, "w2": 5.0, "w3": 20.0}

    def partition_epochs(self) -> dict[int, tuple[int, str]]:
        return {0: (1, "w1"), 1: (7, "w3"), 2: (3, "w3"), 3: (6, "w3"), 4: (8, "w1")}

    def open_work(self) -> int:
        return self.work

    def close(self) -> None:
        pass


def _run_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, codes: dict[str, int],
                 store: Any) -> int:  # fmt: skip
    monkeypatch.setattr(CrawlFleet, "start_all", lambda self, n: list(codes))
    monkeypatch.setattr(CrawlFleet, "wait", lambda self, timeout=None: dict(codes))
    monkeypatch.setattr(CrawlFleet, "open_store", lambda self: store, raising=False)
    monkeypatch.setattr(signal, "signal", lambda *_a: None)  # leave pytest's handlers be
    return cli.main([
        "crawl", "http://127.0.0.1:9/", "--out", str(tmp_path), "--quiet",
        "--store", "postgresql://nobody@127.0.0.1:9/none", "--coordinator", "etcd://127.0.0.1:9",
        "--workers", str(len(codes)),
    ])  # fmt: skip


def test_a_killed_worker_whose_partitions_were_taken_over_and_finished_exits_0(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = _run_command(monkeypatch, tmp_path, {"w1": 0, "w2": -9, "w3": 0}, FakeStore(0))
    out = capsys.readouterr().out
    assert code == 0, out
    assert "worker w2: exit -9" in out  # the per-worker lines stay as they were
    assert (
        "fleet: worker w2 lost (killed by SIGKILL); its 2 partitions were taken over "
        "by w1 (1), w3 (1)" in out
    ), out
    assert "fleet: crawl completed" in out, out


def test_a_crawl_left_unfinished_by_a_lost_worker_exits_1(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = _run_command(monkeypatch, tmp_path, {"w1": 0, "w2": -9, "w3": 0}, FakeStore(7))
    out = capsys.readouterr().out
    assert code == 1, out
    assert "fleet: crawl not completed: 7 URLs queued or in flight" in out, out


def test_every_worker_failing_or_the_store_unreadable_is_not_a_completed_crawl() -> None:
    assert judge_fleet({"w1": 2, "w2": 2}, FakeStore(0)).exit_code == 1  # nobody finished

    class Away(FakeStore):
        def open_work(self) -> int:
            raise OSError("connection refused")

    lost = judge_fleet({"w1": 0, "w2": -9}, Away(0))
    assert lost.exit_code == 1
    assert any("cannot tell" in line for line in lost.lines())
    assert judge_fleet({"w1": 0, "w2": 0}, None).exit_code == 0  # nothing lost: as before
