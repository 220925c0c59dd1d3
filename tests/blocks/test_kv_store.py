"""The node store: sibling merging, last-write-wins, hints, and what survives a reopen."""

from __future__ import annotations

from pathlib import Path

import pytest

from lookup.blocks.kv.store import SqliteNodeStore, merge_versions, open_node_store
from lookup.kit.storeurl import sqlite_url


def v(clock: dict[str, int], value: str | None, ts: float = 0.0, lww: bool = False) -> dict:
    return {"clock": clock, "value": value, "ts": ts, "lww": lww}


def test_put_keeps_siblings_and_drops_ancestors(tmp_path: Path) -> None:
    store = SqliteNodeStore(tmp_path / "n.sqlite3")
    assert store.put("k", [v({"a": 1}, "x")])
    assert store.put("k", [v({"b": 1}, "y")])
    assert sorted(x["value"] for x in store.get("k")) == ["x", "y"]
    assert store.put("k", [v({"a": 1, "b": 1}, "xy")])
    assert [x["value"] for x in store.get("k")] == ["xy"]
    assert not store.put("k", [v({"a": 1}, "x")])  # an ancestor changes nothing
    store.close()


def test_last_write_wins_keeps_the_highest_timestamp() -> None:
    kept = merge_versions(
        [v({"a": 1}, "old", ts=10, lww=True)], [v({"b": 1}, "new-but-slow-clock", ts=5, lww=True)]
    )
    assert [x["value"] for x in kept] == ["old"]


def test_hints_and_data_survive_reopening(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path / "n.sqlite3")
    store = open_node_store(url)
    store.put("k", [v({"a": 1}, "x")])
    store.add_hint("n2", "k", [v({"a": 1}, "x")])
    store.close()
    again = open_node_store(url)
    assert again.get("k")[0]["value"] == "x"
    assert again.hint_targets() == {"n2": 1}
    ((hint_id, key, versions),) = again.hints_for("n2")
    again.drop_hint(hint_id)
    assert again.hint_targets() == {} and key == "k" and versions[0]["value"] == "x"
    assert set(again.digests()) == {"k"} and again.count() == 1
    again.close()


def test_an_unknown_store_url_is_refused() -> None:
    with pytest.raises(ValueError, match="sqlite"):
        open_node_store("redis://127.0.0.1/0")


def test_a_node_without_its_cluster_file_exits_with_a_clear_message(tmp_path: Path) -> None:
    import subprocess
    import sys

    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "lookup.blocks.kv.node",
            "--name",
            "n1",
            "--cluster",
            str(tmp_path / "missing.json"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "cannot read node 'n1'" in proc.stderr and "Traceback" not in proc.stderr
