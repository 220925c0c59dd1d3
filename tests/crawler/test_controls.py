"""The crawl controls log, its fold, and the frontier's hold.

The log's contract runs against every backend of the seam's registry
(:data:`lookup.crawler.controls.BACKENDS`): a new backend registers its scheme there, says
below how to get a fresh, empty log of it (``FRESH``), and must pass unchanged.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lookup.crawler.controls import (
    BACKENDS,
    ControlCommand,
    ControlError,
    ControlRecord,
    ControlState,
    CrawlControls,
    backend,
    controls_url,
    open_crawl_controls,
    validate,
)
from lookup.crawler.controls.sqlite import SqliteCrawlControls
from lookup.crawler.frontier import Frontier, FrontierEntry, PolitenessPolicy
from lookup.crawler.state import crawl_state_url
from tests.contracts.seams import (
    Fresh,
    check_port_imports_no_backend,
    check_registered,
    fresh_url,
)


def _sqlite(tmp_path: Path) -> str:
    return controls_url(crawl_state_url(tmp_path))


#: scheme -> how to get the URL of a fresh, empty log: a function of a temp dir, or the
#: name of the fixture that gives a new database on a real server.
FRESH: dict[str, Fresh] = {"sqlite": _sqlite, "postgresql": "postgres_db"}


@pytest.fixture(params=list(BACKENDS))
def controls(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    ctl = open_crawl_controls(fresh_url(request, tmp_path, FRESH))
    try:
        yield ctl
    finally:
        ctl.close()


def test_every_registered_backend_is_a_controls_log() -> None:
    check_registered(BACKENDS, backend, CrawlControls)


def test_the_port_imports_no_backend() -> None:
    """``lookup.crawler.controls`` names its backends; it imports one only when a URL asks."""
    check_port_imports_no_backend("lookup.crawler.controls")


def test_unknown_schemes_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="sqlite"):
        open_crawl_controls("redis://localhost/0")


def test_log_versions_grow_and_since_reads_in_order(controls: Any) -> None:
    a = controls.issue(ControlCommand("block-host", "Shop.Sandbox.Test."))
    b = controls.issue(ControlCommand("set-delay", "news.sandbox.test:8080", 2.5))
    c = controls.issue(ControlCommand("recrawl", "HTTP://docs.sandbox.test/a/../b"))
    assert a.version < b.version < c.version
    assert a.target == "shop.sandbox.test"  # normalised
    assert c.target == "http://docs.sandbox.test/b"
    assert [r.version for r in controls.since(0)] == [a.version, b.version, c.version]
    assert [r.version for r in controls.since(a.version)] == [b.version, c.version]
    assert controls.since(c.version) == []


def test_the_global_ceiling_is_a_command_like_the_others(controls: Any) -> None:
    """``set-delay *`` (issue 28 item 17) is stored and read back by every backend."""
    a = controls.issue(ControlCommand("set-delay", "*", 1.5, "a complaint"))
    b = controls.issue(ControlCommand("set-delay", "*", None))
    c = controls.issue(ControlCommand("set-delay", "*", 4.0))
    got = [(r.command, r.target, r.value) for r in controls.since(0)]
    assert got == [("set-delay", "*", 1.5), ("set-delay", "*", None), ("set-delay", "*", 4.0)]
    assert a.version < b.version < c.version
    state = ControlState.of(controls.since(0))
    assert state.ceiling == 4.0 and state.floor_for("a.test", 0.1) == 4.0


def test_acks_keep_the_highest_version(controls: Any) -> None:
    controls.acknowledge("w1", 5)
    controls.acknowledge("w1", 3)  # a late, older ack never moves it back
    controls.acknowledge("w2", 1)
    got = {a.worker: a.version for a in controls.acks()}
    assert got == {"w1": 5, "w2": 1}


def test_concurrent_issuers_get_distinct_versions(controls: Any, tmp_path: Path) -> None:
    """Two writers at once (the API and the CLI): every command once, versions distinct."""
    url = getattr(controls, "url", None) or controls_url(crawl_state_url(tmp_path))
    others = [open_crawl_controls(url) for _ in range(3)]
    issued: list[int] = []
    lock = threading.Lock()

    def issue(ctl: Any, n: int) -> None:
        for i in range(20):
            rec = ctl.issue(ControlCommand("pause-host", f"h{n}-{i}.test"))
            with lock:
                issued.append(rec.version)

    threads = [threading.Thread(target=issue, args=(c, n)) for n, c in enumerate(others)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for c in others:
        c.close()
    assert len(set(issued)) == 60
    assert sorted(issued) == [r.version for r in controls.since(0)]


@pytest.mark.parametrize(
    ("cmd", "code"),
    [
        (ControlCommand("explode", "x"), "UNKNOWN_COMMAND"),
        (ControlCommand("block-host", ""), "BAD_HOST"),
        (ControlCommand("block-host", "a b.test"), "BAD_HOST"),
        (ControlCommand("block-host", "http://a.test/"), "BAD_HOST"),
        (ControlCommand("block-pattern", ""), "BAD_PATTERN"),
        (ControlCommand("block-pattern", "http://a.test/ x"), "BAD_PATTERN"),
        (ControlCommand("recrawl", "ftp://a.test/"), "BAD_URL"),
        (ControlCommand("set-delay", "a.test", -1.0), "BAD_DELAY"),
        (ControlCommand("set-delay", "a.test", 99999.0), "BAD_DELAY"),
    ],
)
def test_bad_commands_name_what_is_wrong(cmd: ControlCommand, code: str) -> None:
    with pytest.raises(ControlError) as info:
        validate(cmd)
    assert info.value.code == code


# -- the fold, against an independent replay -------------------------------------------

_HOSTS = ["a.test", "a.test:81", "b.test", "*"]
_PATTERNS = ["http://a.test/x*", "*private*"]
command = st.one_of(
    st.tuples(st.sampled_from(["block-host", "unblock-host", "pause-host", "resume-host"]),
              st.sampled_from(_HOSTS[:-1]), st.none()),
    st.tuples(st.sampled_from(["block-pattern", "unblock-pattern"]),
              st.sampled_from(_PATTERNS), st.none()),
    st.tuples(st.just("set-delay"), st.sampled_from(_HOSTS),
              st.one_of(st.none(), st.floats(0, 60))),
    st.tuples(st.sampled_from(["pause-crawl", "resume-crawl"]), st.just(""), st.none()),
)  # fmt: skip


def _replay(cmds: list[tuple[str, str, float | None]]) -> dict[str, Any]:
    """The oracle: for each target, the last command about it decides (no fold at all)."""
    last: dict[tuple[str, str], tuple[str, float | None]] = {}
    for c, t, v in cmds:
        family = c.removeprefix("un").split("-")[1] if c != "set-delay" else "delay"
        if c in ("pause-host", "resume-host"):
            family = "pause"
        if c in ("pause-crawl", "resume-crawl"):
            family = "crawl"
        last[(family, t)] = (c, v)
    delays = {t: v for (f, t), (c, v) in last.items() if f == "delay" and v is not None}
    return {
        "globalDelay": delays.get("*"),
        "blockedHosts": sorted(t for (f, t), (c, _) in last.items() if c == "block-host"),
        "blockedPatterns": sorted(t for (f, t), (c, _) in last.items() if c == "block-pattern"),
        "pausedHosts": sorted(t for (f, t), (c, _) in last.items() if c == "pause-host"),
        "delays": dict(
            sorted((t, v) for (f, t), (c, v) in last.items() if f == "delay" and v is not None)
        ),
        "crawlPaused": last.get(("crawl", ""), ("resume-crawl", None))[0] == "pause-crawl",
    }


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(cmds=st.lists(command, max_size=25), cut=st.integers(0, 25))
def test_incremental_fold_equals_the_replay(
    cmds: list[tuple[str, str, float | None]], cut: int, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A poller that reads ``since(v)`` in two pieces ends where a full replay does."""
    ctl = SqliteCrawlControls(tmp_path_factory.mktemp("ctl") / "controls.sqlite")
    try:
        for c, t, v in cmds:
            ctl.issue(ControlCommand(c, t, v))
        state = ControlState()
        for rec in ctl.since(0)[:cut]:
            state.apply(rec)
        for rec in ctl.since(state.version):
            state.apply(rec)
        got = state.to_json()
        got.pop("version")
        assert got == _replay(cmds)
        full = ControlState.of(ctl.since(0)).to_json()
        full.pop("version")
        assert full == got
    finally:
        ctl.close()


def test_host_targets_without_a_port_cover_every_port() -> None:
    state = ControlState.of([ControlRecord(1, 0.0, "block-host", "a.test", None, "")])
    assert state.host_blocked("a.test:8080") == "a.test"
    assert state.host_blocked("aa.test") is None
    assert state.holds("a.test") and not state.holds("b.test")
    state.apply(ControlRecord(2, 0.0, "set-delay", "b.test", 3.0, ""))
    state.apply(ControlRecord(3, 0.0, "set-delay", "b.test:81", 1.0, ""))
    assert state.delay_for("b.test:80") == 3.0 and state.delay_for("b.test:81") == 1.0


# -- the frontier's hold and delay floor -----------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def _frontier(clock: Clock) -> Frontier:
    f = Frontier(PolitenessPolicy(min_delay=1.0, delay_factor=0.0), clock=clock)
    for host, ip in (("a.test", "10.0.0.1"), ("b.test", "10.0.0.2")):
        for i in range(3):
            f.add(FrontierEntry(f"http://{host}/{i}", f"{host}{i}", host), ip)
        f.robots_known(host, crawl_delay=None)
    return f


def test_a_held_host_is_never_leased_until_woken() -> None:
    clock = Clock()
    f = _frontier(clock)
    held = {"a.test"}
    f.held = lambda h: h in held
    leased = []
    for _ in range(10):
        clock.t += 1.5
        while (lease := f.lease()) is not None:
            leased.append(lease.host)
            f.complete(lease, 0.0)
    assert leased == ["b.test"] * 3
    assert f.lease_host("a.test", "10.0.0.1") is None  # no out-of-turn hop either
    held.clear()
    f.wake_held()
    lease = f.lease()
    assert lease is not None and lease.host == "a.test"


def test_refused_urls_are_turned_away_without_a_lease() -> None:
    clock = Clock()
    f = _frontier(clock)
    f.refuses = lambda e: e.url.endswith("/1")
    got = []
    for _ in range(10):
        clock.t += 1.5
        while (lease := f.lease()) is not None:
            if lease.entry is not None:
                got.append(lease.entry.url)
            f.complete(lease, 0.0)
    assert sorted(got) == sorted(f"http://{h}/{i}" for h in ("a.test", "b.test") for i in (0, 2))
    assert sorted(e.url for e in f.turned_away) == ["http://a.test/1", "http://b.test/1"]
    assert len(f) == 0


def test_an_operator_delay_replaces_min_delay_and_delays_the_running_pause() -> None:
    clock = Clock()
    f = _frontier(clock)
    f.held = lambda h: h != "a.test"
    lease = f.lease()
    assert lease is not None
    assert f.complete(lease, 0.0) == 1.0  # the policy's min_delay
    floors: dict[str, float] = {"a.test": 5.0}
    f.delay_floor = floors.get
    f.stretch_pause("a.test")
    assert f.hosts["a.test"].ready_at == pytest.approx(clock.t + 5.0)
    clock.t += 5.0
    lease = f.lease()
    assert lease is not None
    assert f.complete(lease, 0.0) == 5.0
    floors["a.test"] = 0.2  # a faster rate: below min_delay, on request
    clock.t += 5.0
    lease = f.lease()
    assert lease is not None
    assert f.complete(lease, 0.0) == pytest.approx(0.2)


# -- applied by a real crawl of the sandbox (in this process) ----------------------------


def test_controls_issued_before_the_start_hold_from_the_first_request(
    web: Any, tmp_path: Path
) -> None:
    """A blocked host gets not even robots.txt, a blocked pattern no URL, a delayed host
    its pause between answers (judged from the sandbox's log), and the cuts are recorded."""
    from lookup.crawler import crawl
    from lookup.crawler.steering import BLOCK_RULE
    from tests.crawler.conftest import test_config

    out = tmp_path / "c"
    ctl = open_crawl_controls(controls_url(crawl_state_url(out)))
    try:
        ctl.issue(ControlCommand("block-host", "news.sandbox.test"))
        ctl.issue(ControlCommand("block-pattern", "http://shop.sandbox.test*/*cart*"))
        ctl.issue(ControlCommand("set-delay", "docs.sandbox.test", 0.3))
        web.log.clear()
        report = crawl(test_config(out, web, max_pages=150))
        acks = ctl.acks()
    finally:
        ctl.close()
    log = web.log.entries()
    assert not [e for e in log if e.host == "news.sandbox.test"]
    assert not [e for e in log if e.host == "shop.sandbox.test" and "cart" in e.target]
    docs = sorted((e for e in log if e.host == "docs.sandbox.test"), key=lambda e: e.start)
    assert len(docs) >= 3
    # after robots.txt (whose own pause is the policy's) every gap is the operator's 0.3 s
    gaps = [b.start - a.end for a, b in zip(docs[1:], docs[2:], strict=False)]
    assert min(gaps) >= 0.3 - 0.01, gaps
    assert report.traps.get(BLOCK_RULE, 0) >= 1
    assert acks and acks[0].version == 3
