"""The fold on Dask distributed equals the single-process fold (issue 26).

The oracle is :meth:`ScoreBoard.fold` itself on the same events: scores and hour traffic
to 1e-12 relative, distinct users, their remembered hashes and the learned retype pairs
exactly (the pairs in the same order, which decides which of two learned keys wins).
One small local cluster serves the whole module.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lookup.cli import main
from lookup.kit.engines.ports import free_port
from lookup.typeahead import querylog
from lookup.typeahead.aggregate import (
    USER_CAP,
    EventBatch,
    ScoreBoard,
    events_from_table,
    read_query_log,
)
from lookup.typeahead.clusterfold import (
    BuildProgress,
    ClusterFolder,
    ClusterFoldError,
    Gate,
    dask_client,
    fold_on_dask,
    local_cluster,
)
from lookup.typeahead.pipeline import run, searches_path, snapshot_root, state_path
from lookup.typeahead.serving import SuggestService
from lookup.typeahead.snapshot import open_snapshot_store

from .conftest import Clock

DAY = 86400
T0 = 1_790_000_000
ROOT = Path(__file__).resolve().parents[2]
#: Tests that start or use the module's Dask cluster (seconds to start): left out of the
#: inner loop, as the drills are by their names.
uses_dask = pytest.mark.slow


@pytest.fixture(scope="module")
def scheduler() -> Iterator[str]:
    """One two-worker local cluster for the module (Dask's start takes seconds)."""
    with local_cluster() as cluster:
        yield cluster.scheduler_address


@pytest.fixture(scope="module")
def client(scheduler: str) -> Iterator[Any]:
    with dask_client(scheduler) as c:
        yield c


@pytest.fixture(scope="module")
def log_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A generated two-week log of a few thousand events (retypes, bots, picks, caps)."""
    path = tmp_path_factory.mktemp("clusterfold") / "log.parquet"
    return querylog.write(querylog.generate(4000, 11), path)


def assert_same(got: ScoreBoard, want: ScoreBoard) -> None:
    """The boards agree: scores to 1e-12 relative; users and typos exactly."""
    assert sorted(got.markets) == sorted(want.markets)
    for m, w in want.markets.items():
        g = got.markets[m]
        assert g.queries == w.queries, m
        np.testing.assert_allclose(g.score, w.score, rtol=1e-12, atol=0)
        assert np.array_equal(g.users, w.users), m
        assert g.user_sets == w.user_sets, m
        assert g.typos == w.typos, m
        assert list(g.typos) == list(w.typos), m  # first appearance decides between keys
        np.testing.assert_allclose(g.hour_traffic, w.hour_traffic, rtol=1e-12, atol=0)
        assert (g.period, g.as_of, g.events) == (w.period, w.as_of, w.events), m


def batch_of(rows: list[tuple[int, str, str, str, bool, bool]]) -> EventBatch:
    ts, market, query, user, bot, picked = zip(*rows, strict=True) if rows else ([],) * 6
    return events_from_table(
        pa.table(
            {
                "ts": pa.array(list(ts), pa.int64()),
                "market": pa.array(list(market), pa.string()),
                "query": pa.array(list(query), pa.string()),
                "user_id": pa.array(list(user), pa.string()),
                "is_bot": pa.array(list(bot), pa.bool_()),
                "picked": pa.array(list(picked), pa.bool_()),
            }
        )
    )


@uses_dask
def test_the_generated_log_folds_to_the_same_state(client: Any, log_path: Path) -> None:
    batch = read_query_log(log_path)
    want = ScoreBoard()
    want_reports = want.fold(batch, bot_weight=0.25, picked_weight=0.5)
    seen: list[BuildProgress] = []
    got = ScoreBoard()
    reports = fold_on_dask(
        got, batch, client, bot_weight=0.25, picked_weight=0.5, progress=seen.append
    )
    assert reports == want_reports
    assert_same(got, want)
    # the log reaches the caps: users settled at USER_CAP, and learned retypes
    assert any((s.users == USER_CAP).any() for s in got.markets.values())
    assert sum(len(s.typos) for s in got.markets.values()) > 20
    # the scores are not only close: every one sees the same operations in the same order
    for m, w in want.markets.items():
        assert np.array_equal(got.markets[m].score, w.score)
    assert seen[0].tasks_done == 0 and seen[-1].tasks_done == seen[-1].tasks_total > 2
    assert seen[-1].workers_alive == 2 and seen[-1].scheduler == client.scheduler.address


@uses_dask
def test_a_pair_retyped_by_more_users_than_the_cap_keeps_the_same_users(client: Any) -> None:
    rows = []
    for u in range(USER_CAP + 40):
        t = T0 + u * 1000
        rows.append((t, "en-IN", "iphnoe", f"u{u}", False, False))
        rows.append((t + 5, "en-IN", "iphone", f"u{u}", False, False))
        rows.append((t + 9, "en-IN", "samsnug", f"u{u}", False, False))
        rows.append((t + 20, "en-IN", "samsung", f"u{u}", False, u % 3 == 0))
    first, rest = batch_of(rows[:40]), batch_of(rows)
    want, got = ScoreBoard(), ScoreBoard()
    for board in (want, got):
        board.fold(first)  # some hashes are remembered before the cluster folds the rest
    want.fold(rest)
    fold_on_dask(got, rest, client, partitions=3)
    assert_same(got, want)
    typos = got.markets["en-IN"].typos
    assert {len(v) for v in typos.values()} == {USER_CAP}


def test_a_query_reaching_the_cap_in_a_later_batch_stays_at_the_cap() -> None:
    # The single-process fold once restarted an empty set for the users after the one
    # that reached the cap, and wrote their small count over it (64 became 31).
    old = [(T0 + u, "en-IN", "ipl", f"u{u}", False, False) for u in range(50)]
    new = [(T0 + DAY + u, "en-IN", "ipl", f"v{u}", False, False) for u in range(40)]
    board = ScoreBoard()
    board.fold(batch_of(old))
    assert board.markets["en-IN"].users[0] == 50
    board.fold(batch_of(old + new))
    assert board.markets["en-IN"].users[0] == USER_CAP
    assert 0 not in board.markets["en-IN"].user_sets


@uses_dask
def test_incremental_folds_count_every_event_once(client: Any, log_path: Path) -> None:
    batch = read_query_log(log_path)
    # cut at a quiet minute (no retype can span it), so part 1 + part 2 == all at once
    ts = np.sort(batch.ts)
    gaps = np.flatnonzero(np.diff(ts) > 300)
    cut = int(ts[gaps[len(gaps) // 2] + 1])
    part1 = batch.before(cut)
    want = ScoreBoard()
    want.fold(batch)
    got = ScoreBoard()
    fold_on_dask(got, part1, client)
    reports = fold_on_dask(got, batch, client)  # the whole log again: only part 2 is new
    assert sum(r.skipped_old for r in reports) == len(part1)
    assert sum(r.events for r in reports) == len(batch) - len(part1)
    for m, w in want.markets.items():
        g = got.markets[m]
        index = {q: i for i, q in enumerate(g.queries)}
        order = [index[q] for q in w.queries]
        np.testing.assert_allclose(g.score[order], w.score, rtol=1e-12, atol=0)
        assert np.array_equal(g.users[order], w.users)
        pairs = {(g.queries[a], g.queries[b]): v for (a, b), v in g.typos.items()}
        assert pairs == {(w.queries[a], w.queries[b]): v for (a, b), v in w.typos.items()}
        np.testing.assert_allclose(g.hour_traffic, w.hour_traffic, rtol=1e-12, atol=0)
        assert (g.as_of, g.events) == (w.as_of, w.events)
    before = {m: (s.score.copy(), s.events, s.as_of) for m, s in got.markets.items()}
    again = fold_on_dask(got, batch, client)  # a rerun over the same log adds nothing
    assert sum(r.events for r in again) == 0
    for m, (score, events, as_of) in before.items():
        s = got.markets[m]
        assert np.array_equal(s.score, score) and (s.events, s.as_of) == (events, as_of)


#: Searches in a few busy minutes of four days (every day a decay period), each maybe
#: followed by the same user's retype within the 120 s window.
QUERIES = ["abcd", "abdc", "abce", "hello", "helo", "xyz", "xy", "  Hello "]
searches_st = st.lists(
    st.tuples(
        st.builds(lambda day, s: day * DAY + s, st.integers(0, 3), st.integers(0, 600)),
        st.sampled_from(["en-IN", "hi-IN"]),
        st.sampled_from(QUERIES),
        st.integers(0, 6),
        st.booleans(),
        st.booleans(),
        st.one_of(st.none(), st.tuples(st.integers(1, 150), st.sampled_from(QUERIES))),
    ),
    max_size=50,
)


def rows_of(searches: list[Any]) -> list[tuple[int, str, str, str, bool, bool]]:
    rows = []
    for t, market, query, u, bot, picked, retype in searches:
        rows.append((T0 + t, market, query, f"u{u}", bot and u == 6, picked))
        if retype is not None:
            rows.append((T0 + t + retype[0], market, retype[1], f"u{u}", bot and u == 6, False))
    return rows


@uses_dask
@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(searches=searches_st, cut=st.integers(0, 4 * DAY), parts=st.integers(1, 5))
def test_random_small_logs_fold_alike(
    client: Any, searches: list[Any], cut: int, parts: int
) -> None:
    rows = rows_of(searches)
    first = batch_of([r for r in rows if r[0] < T0 + cut])
    batch = batch_of(rows)
    want, got = ScoreBoard(), ScoreBoard()
    for board in (want, got):  # a saved state from an earlier build, then the new log
        board.fold(first, bot_weight=0.5, picked_weight=0.25)
    want_reports = want.fold(batch, bot_weight=0.5, picked_weight=0.25)
    reports = fold_on_dask(got, batch, client, bot_weight=0.5, picked_weight=0.25, partitions=parts)
    assert reports == want_reports
    assert_same(got, want)


def snapshot_view(data_dir: Path) -> dict[str, Any]:
    """Each market's current snapshot minus its version and build time, and its answers."""
    store = open_snapshot_store(snapshot_root(data_dir))
    out: dict[str, Any] = {}
    for market in store.names():
        snap = store.open(market)
        assert snap is not None
        header = {k: v for k, v in snap.header.items() if k not in ("version", "built_at")}
        prefixes = sorted({s[:i] for s in snap.strings() for i in range(1, len(s) + 1)})
        out[market] = (header, {p: snap.suggest(p) for p in prefixes})
    return out


@uses_dask
def test_the_build_on_dask_publishes_the_same_snapshots(
    scheduler: str, log_path: Path, tmp_path: Path
) -> None:
    # searches submitted over HTTP after the log: the build folds them too, on Dask
    end = int(read_query_log(log_path).ts.max())
    searches = "ts,market,query,user_id,picked\n" + "".join(
        f"{end + 60 * (i + 1)},en-IN,{q},s{i % 7},{i % 2}\n"
        for i, q in enumerate(["zebra crossing", "zebra crosing", "zebra crossing"] * 5)
    )
    for name in ("local", "dask"):
        (tmp_path / name / "typeahead").mkdir(parents=True)
        searches_path(tmp_path / name).write_text(searches)
    clock = Clock(end + 86400.0)
    local = run(tmp_path / "local", log_path, clock=clock)
    assert local.ok and local.cluster is None  # the embedded default: no Dask
    assert sum(f.events for f in local.folded) == len(read_query_log(log_path)) + 15
    lines: list[str] = []
    seen: list[BuildProgress] = []
    on_dask = run(
        tmp_path / "dask",
        log_path,
        dask=scheduler,
        progress=lines.append,
        on_cluster=seen.append,
        clock=clock,
    )
    assert on_dask.ok
    assert snapshot_view(tmp_path / "dask") == snapshot_view(tmp_path / "local")
    assert on_dask.cluster is not None
    assert on_dask.cluster["tasks_done"] == on_dask.cluster["tasks_total"] > 0
    assert on_dask.cluster["workers_alive"] == 2
    assert seen[-1].to_dict() == on_dask.cluster
    assert any(line.startswith("dask: ") for line in lines)
    assert [f.events for f in on_dask.folded] == [f.events for f in local.folded]
    saved_local = ScoreBoard.load(state_path(tmp_path / "local"))
    assert_same(ScoreBoard.load(state_path(tmp_path / "dask")), saved_local)


@uses_dask
def test_the_setting_sends_the_build_to_the_scheduler(
    scheduler: str, log_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOKUP_TYPEAHEAD_DASK_SCHEDULER", scheduler)
    result = run(tmp_path, log_path)
    assert result.ok and result.cluster is not None
    assert result.cluster["scheduler"] == scheduler


@uses_dask
def test_cli_build_on_a_scheduler(
    scheduler: str, log_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["typeahead", "build", "--log", str(log_path), "--data-dir", str(tmp_path)]
    assert main([*args, "--scheduler", scheduler, "--quiet", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and report["cluster"]["tasks_done"] == report["cluster"]["tasks_total"]
    with pytest.raises(SystemExit) as exc:
        main([*args, "--scheduler", "http://127.0.0.1:1"])
    assert exc.value.code == 2
    assert "tcp://HOST:PORT" in capsys.readouterr().err


def test_cli_says_when_the_cluster_failed(
    log_path: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(*_a: Any, **_k: Any) -> None:
        raise ClusterFoldError("the Dask scheduler went away; nothing was published")

    monkeypatch.setattr("lookup.typeahead.cli.run", broken)
    args = ["typeahead", "build", "--log", str(log_path), "--data-dir", str(tmp_path), "--dask"]
    assert main(args) == 3
    assert "the Dask scheduler went away" in capsys.readouterr().err


def test_the_management_api_reports_a_failed_cluster_as_503(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lookup import errors
    from lookup.typeahead.building import build_snapshots

    def broken(*_a: Any, **_k: Any) -> None:
        raise ClusterFoldError("the Dask scheduler went away; nothing was published")

    monkeypatch.setattr("lookup.typeahead.building.run", broken)
    state_path(tmp_path).parent.mkdir(parents=True)
    state_path(tmp_path).touch()  # a later build: no query log needed
    with pytest.raises(errors.Unavailable) as failed:
        build_snapshots(tmp_path, lambda *_a: None)  # type: ignore[arg-type]
    assert failed.value.code == "CLUSTER_FAILED"
    assert "went away" in failed.value.message


def test_the_setting_accepts_a_scheduler_local_or_off() -> None:
    from lookup import settings as knobs
    from lookup.settings import SettingError

    def read(value: str) -> str:
        return str(
            knobs.get("typeahead_dask_scheduler", {"LOOKUP_TYPEAHEAD_DASK_SCHEDULER": value})
        )

    assert read("tcp://10.0.0.5:8786") == "tcp://10.0.0.5:8786"
    assert read(" local ") == "local" and read("off") == "" and read("") == ""
    for bad in ("http://x:1", "tcp://:8786", "tcp://host", "tcp://host:0", "tcp://host:x"):
        with pytest.raises(SettingError):
            read(bad)


# --------------------------------------------------------------------------- drills


def wait_until(what: str, ok: Callable[[], bool], timeout: float = 180.0) -> None:
    """Wait for a condition (the machine is loaded: generous, and no fixed sleep)."""
    deadline = time.monotonic() + timeout
    while not ok():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout:g}s for {what}")
        time.sleep(0.05)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_sigkill_of_a_worker_mid_build_drill(
    scheduler: str, client: Any, log_path: Path, tmp_path: Path
) -> None:
    """A worker killed while it folds: Dask reruns its tasks, the snapshot is the same."""
    assert run(tmp_path / "local", log_path).ok
    client.wait_for_workers(2, timeout=180)
    gate = Gate(tmp_path / "gate")
    killed: list[int] = []
    seen: list[BuildProgress] = []

    def kill_one_worker(status: BuildProgress) -> None:
        seen.append(status)
        if killed:
            return
        # every task waits at the gate: two arrivals = both single-threaded workers busy
        wait_until("both workers to start a fold task", lambda: gate.arrivals() >= 2)
        pid = sorted(client.run(os.getpid).values())[0]
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)
        gate.open()

    with ClusterFolder(scheduler, gate=gate, on_progress=kill_one_worker) as folder:
        result = run(tmp_path / "dask", log_path, fold=folder)
    assert killed and not alive(killed[0])
    assert seen[0].tasks_done == 0 and seen[-1].tasks_done == seen[-1].tasks_total
    assert gate.arrivals() > 2  # the killed worker's task ran again elsewhere
    assert result.ok
    assert snapshot_view(tmp_path / "dask") == snapshot_view(tmp_path / "local")


@pytest.fixture
def cli_cluster(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A scheduler and a worker started with Dask's own commands on free loopback ports
    (processes of their own, so a test can kill the scheduler)."""
    dask = str(Path(sys.executable).with_name("dask"))
    address = f"tcp://127.0.0.1:{free_port()}"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    log = open(tmp_path / "dask.log", "wb")  # noqa: SIM115 - closed at teardown
    common: dict[str, Any] = {"env": env, "stdout": log, "stderr": subprocess.STDOUT}
    scheduler = subprocess.Popen(
        [dask, "scheduler", "--host", "127.0.0.1", "--port", address.rsplit(":", 1)[1],
         "--dashboard-address", f"127.0.0.1:{free_port()}"],
        **common,
    )  # fmt: skip
    worker = subprocess.Popen(
        [dask, "worker", address, "--nthreads", "1", "--no-nanny", "--host", "127.0.0.1",
         "--worker-port", str(free_port()), "--no-dashboard", "--death-timeout", "60"],
        **common,
    )  # fmt: skip
    try:
        from distributed import Client

        with Client(address, timeout=180, set_as_default=False) as probe:
            probe.wait_for_workers(1, timeout=180)
        yield address, scheduler
    finally:
        for proc in (worker, scheduler):
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=60)
        log.close()


def test_sigkill_of_the_scheduler_mid_build_drill(
    scheduler: str,
    cli_cluster: tuple[str, subprocess.Popen[bytes]],
    log_path: Path,
    tmp_path: Path,
) -> None:
    """The scheduler killed mid-build: the build fails loudly, nothing is saved or
    published, the current snapshot keeps serving, and a rerun succeeds."""
    address, dask_scheduler = cli_cluster
    data = tmp_path / "data"
    assert run(data, log_path).ok  # what serves before the drill
    store = open_snapshot_store(snapshot_root(data))
    before = {m: (store.current(m), store.versions(m)) for m in store.names()}
    state_bytes = state_path(data).read_bytes()
    service = SuggestService.from_data_dir(data)
    answer = service.lookup("w", "en-IN", 10).body()
    gate = Gate(tmp_path / "gate")

    def kill_the_scheduler(status: BuildProgress) -> None:
        if dask_scheduler.poll() is None:
            wait_until("a fold task to start", lambda: gate.arrivals() >= 1)
            dask_scheduler.send_signal(signal.SIGKILL)
            dask_scheduler.wait(timeout=60)

    with pytest.raises(ClusterFoldError) as failed:
        with ClusterFolder(address, gate=gate, on_progress=kill_the_scheduler) as folder:
            run(data, log_path, fresh=True, force=True, fold=folder)
    assert address in str(failed.value) and "nothing was published" in str(failed.value)
    assert {m: (store.current(m), store.versions(m)) for m in store.names()} == before
    assert state_path(data).read_bytes() == state_bytes
    assert not list((data / "typeahead" / "staging").glob("*.tmp"))
    assert service.lookup("w", "en-IN", 10).body() == answer  # still serving
    # a rerun (on a live cluster) folds from scratch again and publishes the same content
    view = snapshot_view(data)
    rerun = run(data, log_path, fresh=True, force=True, dask=scheduler)
    assert rerun.ok
    assert snapshot_view(data) == view
