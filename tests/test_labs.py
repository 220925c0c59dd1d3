"""The dashboard's lab supervisor (``lookup/labs``), with real child processes.

A lab starts once per kind and key, stops, and leaves nothing behind at exit or on
SIGTERM; a new supervisor over the same data directory (a reloaded page in a restarted
dashboard) finds a running lab from the state file, and drops the entries whose
processes are gone — never signalling a pid the kernel has handed to another process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lookup.labs.core import (
    KINDS,
    STATE_FILE,
    Lab,
    LabRecord,
    LabSupervisor,
    RecordedLab,
    pid_alive,
    process_start,
)
from tests.conftest import _need_redis

SLEEPER = ["sleep", "600"]


@pytest.fixture
def sup(tmp_path: Path) -> Iterator[LabSupervisor]:
    supervisor = LabSupervisor(tmp_path / "data")
    yield supervisor
    supervisor.stop_all()


def _state(sup: LabSupervisor) -> list[dict[str, object]]:
    if not sup.path.exists():
        return []
    return list(json.loads(sup.path.read_text())["labs"])


def _gone(pid: int, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while pid_alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_a_second_start_returns_the_running_lab(sup: LabSupervisor) -> None:
    first = sup.start("process", "a", argv=SLEEPER, address="http://127.0.0.1:1")
    again = sup.start("process", "a", argv=SLEEPER)
    assert again is first and first.status() == "running"
    [pid] = first.pids()
    other = sup.start("process", "b", argv=SLEEPER)
    assert other is not first and other.pids() != [pid]
    assert sup.get("process", "a") is first
    entries = {(e["kind"], e["key"]): e for e in _state(sup)}
    assert set(entries) == {("process", "a"), ("process", "b")}
    assert entries["process", "a"]["pids"] == [[pid, process_start(pid)]]
    assert entries["process", "a"]["addresses"] == {"address": "http://127.0.0.1:1"}
    assert entries["process", "a"]["owner"] == os.getpid()


def test_stop_ends_the_process_and_forgets_the_lab(sup: LabSupervisor) -> None:
    lab = sup.start("process", argv=SLEEPER)
    [pid] = lab.pids()
    work = Path(lab.paths()[0])
    assert sup.stop("process") is True
    assert lab.status() == "stopped" and not pid_alive(pid) and not work.exists()
    assert sup.get("process") is None and _state(sup) == []
    assert sup.stop("process") is False


def test_stop_all_leaves_no_child(sup: LabSupervisor) -> None:
    labs = [sup.start("process", str(i), argv=SLEEPER) for i in range(3)]
    pids = [p for lab in labs for p in lab.pids()]
    assert len(pids) == 3 and all(pid_alive(p) for p in pids)
    sup.stop_all()
    assert not any(pid_alive(p) for p in pids)
    assert sup.labs() == [] and _state(sup) == []


def test_a_killed_child_is_reported_dead_and_a_start_replaces_it(sup: LabSupervisor) -> None:
    lab = sup.start("process", argv=SLEEPER)
    [pid] = lab.pids()
    os.kill(pid, signal.SIGKILL)
    lab.proc.wait(timeout=10)  # type: ignore[attr-defined]
    assert sup.get("process") is lab and lab.status() == "dead"
    assert _state(sup) == []  # a lab with no process left is not recorded
    fresh = sup.start("process", argv=SLEEPER)
    assert fresh is not lab and fresh.status() == "running" and lab.status() == "stopped"


def test_a_reload_finds_the_lab_from_the_state_file(tmp_path: Path) -> None:
    first = LabSupervisor(tmp_path / "data")
    lab = first.start("process", "drill", argv=SLEEPER, address="http://127.0.0.1:9")
    [pid] = lab.pids()
    # a new supervisor over the same directory: what a restarted dashboard makes
    second = LabSupervisor(tmp_path / "data")
    found = second.get("process", "drill")
    assert isinstance(found, RecordedLab)
    assert found.status() == "running" and found.pids() == [pid]
    assert found.addresses() == {"address": "http://127.0.0.1:9"}
    assert second.get("process", "drill") is found  # adopted once
    assert second.stop("process", "drill") is True
    lab.proc.wait(timeout=15)  # type: ignore[attr-defined]
    assert lab.status() == "dead" and _state(second) == []
    assert not Path(lab.paths()[0]).exists()  # its directory went with it
    first.stop_all()


def test_a_recorded_lab_is_replaced_by_a_start(tmp_path: Path) -> None:
    first = LabSupervisor(tmp_path / "data")
    old = first.start("process", argv=SLEEPER)
    [pid] = old.pids()
    second = LabSupervisor(tmp_path / "data")
    new = second.start("process", argv=SLEEPER)
    assert not isinstance(new, RecordedLab) and new.pids() != [pid]
    old.proc.wait(timeout=15)  # type: ignore[attr-defined]
    assert [e["pids"][0][0] for e in _state(second)] == new.pids()
    second.stop_all()
    first.stop_all()


def test_dead_entries_are_dropped_and_a_reused_pid_is_never_signalled(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    me = os.getpid()
    dead = subprocess.Popen(["true"])
    dead.wait()
    entries = [  # a gone dashboard's labs: one exited, one whose pid is now another process
        LabRecord("process", "exited", dead.pid, None, [(dead.pid, None)]),
        LabRecord("process", "reused", dead.pid, None, [(me, (process_start(me) or 0) + 1)]),
    ]
    (data / STATE_FILE).write_text(json.dumps({"labs": [e.__dict__ for e in entries]}))
    sup = LabSupervisor(data)
    assert sup.get("process", "exited") is None and sup.get("process", "reused") is None
    assert sup.recorded() == []
    sup.stop("process", "reused")  # must not signal this very process
    assert _state(sup) == []


def test_another_live_dashboards_lab_is_left_to_it(tmp_path: Path) -> None:
    other = subprocess.Popen(SLEEPER)  # stands for another dashboard process
    child = subprocess.Popen(SLEEPER)
    try:
        data = tmp_path / "data"
        data.mkdir()
        record = LabRecord("process", "", other.pid, process_start(other.pid),
                           [(child.pid, process_start(child.pid))])  # fmt: skip
        (data / STATE_FILE).write_text(json.dumps({"labs": [record.__dict__]}))
        sup = LabSupervisor(data)
        assert sup.get("process") is None
        assert [r.owner for r in sup.recorded()] == [other.pid]
        mine = sup.start("process", argv=SLEEPER)
        assert pid_alive(child.pid)
        assert {e["owner"] for e in _state(sup)} == {other.pid, os.getpid()}
        sup.stop_all()
        assert not any(pid_alive(p) for p in mine.pids())
        assert [e["owner"] for e in _state(sup)] == [other.pid]
    finally:
        for proc in (other, child):
            proc.kill()
            proc.wait()


def test_a_lab_that_fails_to_start_leaves_nothing(sup: LabSupervisor) -> None:
    with pytest.raises(FileNotFoundError):
        sup.start("process", argv=["/nonexistent/lookup-lab-binary"])
    assert sup.get("process") is None and _state(sup) == []
    with pytest.raises(ValueError, match="no lab kind"):
        sup.start("no-such-kind")


_DASHBOARD = """
import sys, time
from lookup.labs import supervisor
sup = supervisor(sys.argv[1])
labs = [sup.start("process", str(i), argv=["sleep", "600"]) for i in range(2)]
print(" ".join(str(p) for lab in labs for p in lab.pids()), flush=True)
if sys.argv[2] == "wait":
    sys.stdin.read()
"""


@pytest.mark.parametrize("how", ["exit", "SIGTERM"])
def test_a_dashboard_process_that_ends_leaves_no_lab_running(tmp_path: Path, how: str) -> None:
    argv = [sys.executable, "-c", _DASHBOARD, str(tmp_path / "data")]
    proc = subprocess.Popen([*argv, "wait" if how == "SIGTERM" else "exit"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert proc.stdout is not None
    pids = [int(p) for p in proc.stdout.readline().split()]
    assert len(pids) == 2
    if how == "SIGTERM":
        proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    left = [p for p in pids if not _gone(p)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert left == []
    assert json.loads((tmp_path / "data" / STATE_FILE).read_text()) == {"labs": []}


@pytest.mark.redis
def test_a_redis_lab_serves_and_stops(sup: LabSupervisor) -> None:
    _need_redis()
    import redis

    lab = sup.start("redis", "cache")
    url = lab.addresses()["url"]
    client = redis.Redis.from_url(url)
    try:
        assert client.ping() is True
    finally:
        client.close()
    [pid] = lab.pids()
    assert sup.start("redis", "cache") is lab
    sup.stop("redis", "cache")
    assert not pid_alive(pid)


@settings(max_examples=12, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["start", "stop", "kill"]), st.sampled_from("ab")),
                max_size=6))  # fmt: skip
def test_the_state_file_lists_exactly_the_running_labs(
    tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[str, str]]
) -> None:
    sup = LabSupervisor(tmp_path_factory.mktemp("labs"))
    try:
        for op, key in ops:
            if op == "start":
                sup.start("process", key, argv=SLEEPER)
            elif op == "stop":
                sup.stop("process", key)
            elif (lab := sup.get("process", key)) is not None and lab.alive():
                os.kill(lab.pids()[0], signal.SIGKILL)
                lab.proc.wait(timeout=10)  # type: ignore[attr-defined]
        running = {lab.key: lab.pids() for lab in sup.labs() if lab.status() == "running"}
        sup.get("process", "a")  # any call refreshes the file
        recorded = {e["key"]: [p for p, _ in e["pids"]] for e in _state(sup)}
        assert recorded == running
    finally:
        sup.stop_all()


def test_an_index_build_is_followed_to_its_end(sup: LabSupervisor, tmp_path: Path) -> None:
    """``lookup index`` of a directory with no crawl: the lab's output is followed line by
    line from any reader, and the build is reported failed once it exits."""
    lab = sup.start("index-build", "x", out_dir=tmp_path / "no-crawl", data_dir=tmp_path / "d")
    lines = list(lab.follow())  # type: ignore[attr-defined]
    assert lines and lab.status() == "failed"
    assert list(lab.follow(since=len(lines) - 1)) == lines[-1:]  # type: ignore[attr-defined]
    assert sup.get("index-build", "x") is lab and _state(sup) == []


def test_progress_lines_of_lookup_index() -> None:
    from lookup.labs.indexbuild import progress_of

    got = progress_of("  segments   42.5%  1,234/2,938")
    assert got is not None and got.stage == "segments" and got.count == "1,234/2,938"
    assert abs(got.fraction - 0.425) < 1e-9
    assert progress_of("indexed 10 pages") is None


class GatedLab(Lab):
    """A lab whose start waits for the test to open ``gate`` (no process)."""

    kind = "gated"

    def __init__(self, key: str = "", *, gate: threading.Event, entered: threading.Event) -> None:
        super().__init__(key)
        self.gate, self.entered, self.started = gate, entered, False

    def start(self) -> None:
        self.entered.set()
        self.started = self.gate.wait(120)

    def close(self) -> None:
        self.started = False

    def pids(self) -> list[int]:
        return []

    def alive(self) -> bool:
        return self.started


def test_a_slow_start_holds_up_no_other_lab(tmp_path: Path) -> None:
    sup = LabSupervisor(tmp_path / "data", kinds={**KINDS, "gated": "tests.test_labs:GatedLab"})
    gate, entered = threading.Event(), threading.Event()
    slow = threading.Thread(
        target=sup.start, args=("gated",), kwargs={"gate": gate, "entered": entered}
    )
    slow.start()
    try:
        assert entered.wait(30)
        started: list[Lab] = []
        meanwhile = threading.Thread(
            target=lambda: started.append(sup.start("process", argv=SLEEPER))
        )
        meanwhile.start()
        meanwhile.join(60)  # (a start behind the gated one would wait for its 120 s)
        assert started, "a second lab waited for the first one's start"
        other = started[0]
        assert sup.get("process") is other and other.status() == "running"
    finally:
        gate.set()
        slow.join(30)
    gated = sup.get("gated")
    assert gated is not None and gated.status() == "running"
    sup.stop_all()
    assert gated.status() == "stopped" and other.status() == "stopped"
