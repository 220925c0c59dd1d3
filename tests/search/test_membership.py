"""Shard membership without a server: the record's parsing, the view's diffing, and the
watcher's rules (keep the last view while etcd fails, flag it stale, ignore an older
revision, tell the owner only about real changes)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.search.membership import (
    PREFIX,
    BadRecord,
    MemberRecord,
    MembershipWatcher,
    diff,
    member_key,
    parse_key,
    parse_view,
)

addresses = st.from_regex(r"\A(http://)?127\.0\.0\.1:[1-9][0-9]{0,4}\Z")
records = st.builds(
    MemberRecord,
    address=addresses,
    shard=st.integers(0, 63),
    replica=st.integers(0, 7),
    version=st.integers(0, 10**9),
    pid=st.integers(1, 2**22),
    started=st.floats(0, 4e9, allow_nan=False),
)
views = st.lists(records, max_size=12).map(lambda rs: {r.slot: r for r in rs})


def _record(shard: int = 0, replica: int = 0, version: int = 1) -> MemberRecord:
    return MemberRecord(f"127.0.0.1:{8000 + shard * 10 + replica}", shard, replica, version,
                        100 + replica, 1_700_000_000.5)  # fmt: skip


@given(records)
def test_a_record_survives_its_json(record: MemberRecord) -> None:
    assert MemberRecord.from_json(record.to_json()) == record
    assert MemberRecord.from_json(record.to_json().encode()) == record
    assert parse_key(record.key()) == record.slot
    assert set(json.loads(record.to_json())) == {
        "address", "shard", "replica", "version", "pid", "started"
    }  # fmt: skip


@given(st.one_of(st.text(max_size=40), st.binary(max_size=40)))
def test_garbage_is_a_bad_record_never_another_error(raw: Any) -> None:
    try:
        MemberRecord.from_json(raw)
    except BadRecord:
        pass


@pytest.mark.parametrize(
    "fields",
    [
        {"shard": -1},
        {"shard": 1.5},
        {"shard": True},
        {"replica": "1"},
        {"version": None},
        {"address": ""},
        {"address": "a b"},
        {"address": "x" * 600},
        {"started": "now"},
        {"started": float("inf")},
        {"pid": -3},
    ],
)
def test_a_record_with_a_bad_field_is_refused(fields: dict[str, Any]) -> None:
    data = {**_record().to_dict(), **fields}
    with pytest.raises(BadRecord):
        MemberRecord.from_json(json.dumps(data))


def test_a_record_missing_a_field_or_not_an_object_is_refused() -> None:
    data = _record().to_dict()
    del data["version"]
    with pytest.raises(BadRecord, match="version"):
        MemberRecord.from_json(json.dumps(data))
    with pytest.raises(BadRecord):
        MemberRecord.from_json("[1, 2]")
    assert MemberRecord.from_json(json.dumps({**_record().to_dict(), "started": 5})).started == 5.0


@pytest.mark.parametrize(
    "key",
    [
        "/lookup/other/0/1",
        PREFIX + "0",
        PREFIX + "0/1/2",
        PREFIX + "a/1",
        PREFIX + "-1/1",
        PREFIX + "0/",
        PREFIX + "٣/1",  # a digit, but not an ASCII one
        PREFIX + "5000/0",
    ],
)
def test_keys_that_are_not_a_slot_are_refused(key: str) -> None:
    with pytest.raises(BadRecord):
        parse_key(key)


def test_parse_view_skips_malformed_values_and_records_under_another_slot() -> None:
    good, other = _record(0, 0), _record(1, 1)
    rows = [
        (good.key(), good.to_json().encode()),
        (member_key(0, 1), other.to_json().encode()),  # the value names slot (1, 1)
        (member_key(2, 0), b"{not json"),
        (PREFIX + "junk", good.to_json().encode()),
    ]
    view, skipped = parse_view(rows)
    assert view == {(0, 0): good}
    assert skipped == [member_key(0, 1), member_key(2, 0), PREFIX + "junk"]


@given(views, views)
def test_a_diff_applied_to_the_old_view_gives_the_new(old: Any, new: Any) -> None:
    change = diff(old, new)
    applied = {s: r for s, r in old.items() if r not in change.left}
    applied.update({r.slot: r for r in change.joined + change.changed})
    assert applied == new
    joined = {r.slot for r in change.joined}
    left = {r.slot for r in change.left}
    changed = {r.slot for r in change.changed}
    assert not (joined & left) and not (joined & changed) and not (left & changed)
    assert bool(change) == (old != new)
    assert not diff(new, new)


@given(views, views)
def test_a_diff_reversed_swaps_joins_and_leaves(old: Any, new: Any) -> None:
    there, back = diff(old, new), diff(new, old)
    assert there.joined == back.left and there.left == back.joined
    assert {r.slot for r in there.changed} == {r.slot for r in back.changed}


class FakeEtcd:
    """The two calls the watcher makes (``get_url``, ``post`` of a range), from a dict."""

    def __init__(self) -> None:
        self.kvs: dict[str, str] = {}
        self.revision = 1
        self.fail: Exception | None = None
        self.calls = 0

    def get_url(self, path: str) -> str:
        return path

    def put(self, record: MemberRecord) -> None:
        self.kvs[record.key()] = record.to_json()
        self.revision += 1

    def delete(self, key: str) -> None:
        self.kvs.pop(key)
        self.revision += 1

    def post(self, url: str, json: Any = None) -> Any:
        self.calls += 1
        assert url == "/kv/range"
        if self.fail is not None:
            raise self.fail
        enc = base64.b64encode
        kvs = [{"key": enc(k.encode()).decode(), "value": enc(v.encode()).decode()}
               for k, v in sorted(self.kvs.items())]  # fmt: skip
        return {"header": {"revision": str(self.revision)}, "kvs": kvs}


class Hand:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_watcher_reports_changes_once_and_keeps_the_view_while_etcd_fails() -> None:
    etcd, hand = FakeEtcd(), Hand()
    seen: list[list[MemberRecord]] = []
    watcher = MembershipWatcher(etcd, interval=0.5, on_change=seen.append,  # type: ignore[arg-type]
                                monotonic=hand)  # fmt: skip
    assert watcher.stale() and watcher.age() is None  # never answered yet
    a, b = _record(0, 0), _record(1, 0)
    etcd.put(a)
    etcd.put(b)
    assert {r.slot for r in watcher.poll().joined} == {(0, 0), (1, 0)}
    assert seen == [[a, b]] and not watcher.stale()
    assert not watcher.poll() and len(seen) == 1  # nothing changed: no call

    etcd.put(a.with_version(2))
    change = watcher.poll()
    assert change.changed == (a.with_version(2),) and seen[-1] == [a.with_version(2), b]

    etcd.fail = ConnectionError("etcd is away")
    etcd.delete(b.key())
    hand.now += 7.0
    assert not watcher.poll()
    shot = watcher.snapshot()
    assert shot["stale"] and shot["ageSeconds"] == 7.0 and "etcd is away" in shot["error"]
    assert [(m["shard"], m["replica"]) for m in shot["members"]] == [(0, 0), (1, 0)]

    etcd.fail = None
    assert watcher.poll().left == (b,)
    assert not watcher.stale() and watcher.members() == [a.with_version(2)]


def test_an_answer_older_than_the_view_is_ignored_and_a_slow_poll_reads_stale() -> None:
    etcd, hand = FakeEtcd(), Hand()
    watcher = MembershipWatcher(etcd, interval=0.5, monotonic=hand)  # type: ignore[arg-type]
    etcd.put(_record(0, 0))
    etcd.put(_record(0, 1))
    watcher.poll()
    etcd.revision -= 5  # an answer from behind the one applied (e.g. a lagging member)
    etcd.kvs.clear()
    assert not watcher.poll() and len(watcher.members()) == 2
    hand.now += watcher.stale_after + 0.1  # no poll answered for that long
    assert watcher.stale()


def test_an_on_change_that_raises_does_not_stop_the_view(caplog: Any) -> None:
    etcd = FakeEtcd()

    def broken(_members: list[MemberRecord]) -> None:
        raise RuntimeError("owner bug")

    watcher = MembershipWatcher(etcd, on_change=broken)  # type: ignore[arg-type]
    etcd.put(_record(3, 0))
    assert watcher.poll().joined
    assert watcher.members() == [_record(3, 0)]
    assert "on_change failed" in caplog.text


@settings(max_examples=40)
@given(st.lists(views, min_size=1, max_size=6))
def test_the_watcher_follows_any_sequence_of_views(sequence: list[Any]) -> None:
    etcd = FakeEtcd()
    seen: list[list[MemberRecord]] = []
    watcher = MembershipWatcher(etcd, on_change=seen.append)  # type: ignore[arg-type]
    last: dict[Any, MemberRecord] = {}
    calls = 0
    for view in sequence:
        etcd.kvs = {r.key(): r.to_json() for r in view.values()}
        etcd.revision += 1
        watcher.poll()
        calls += view != last
        last = view
        assert watcher.members() == [view[s] for s in sorted(view)]
    assert len(seen) == calls


def test_the_commands_refuse_bad_input_before_touching_etcd(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from lookup.cli import main as lookup_main
    from lookup.search.membership import main

    monkeypatch.delenv("LOOKUP_ETCD_URL", raising=False)
    assert lookup_main(["search", "members"]) == 2
    assert "LOOKUP_ETCD_URL" in capsys.readouterr().err
    assert main(["register", "--shard", "0", "--replica", "0", "--address", "a:1"]) == 2
    monkeypatch.setenv("LOOKUP_ETCD_URL", "http://127.0.0.1:1")
    bad = ["register", "--shard", "-1", "--replica", "0", "--address", "127.0.0.1:1"]
    assert main(bad) == 2
    assert "shard" in capsys.readouterr().err


def test_a_watcher_for_a_url_polls_at_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOKUP_SEARCH_MEMBERS_POLL", "0.25")
    watcher = MembershipWatcher.for_url("http://127.0.0.1:1")
    assert watcher.interval == 0.25 and watcher.stale_after == 1.0
    with pytest.raises(ValueError):
        MembershipWatcher.for_url("etcd://nowhere")
