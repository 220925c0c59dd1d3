"""Writers of one process queue on an in-process lock (never on SQLite's sleeping busy
handler), and the WAL is checkpointed by a background thread, not inside commits."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from lookup.kit.dblock import WalCheckpointer, writer_lock
from lookup.shortener.model import Link
from lookup.shortener.store import KeyTaken, SqliteLinkStore


def _link(key: str, ident: int | None = None, now: float = 1_800_000_000.0) -> Link:
    return Link(key=key, id=ident, alias=ident is None, long_url=f"https://e.example/{key}",
                owner="o", created_at=now, updated_at=now)  # fmt: skip


def test_one_lock_per_database_file_however_it_is_spelled(tmp_path: Path) -> None:
    db = tmp_path / "links.sqlite3"
    db.touch()
    (tmp_path / "alias").symlink_to(tmp_path)
    spellings = [db, str(db), tmp_path / "." / "links.sqlite3", tmp_path / "alias" / db.name]
    assert len({id(writer_lock(p)) for p in spellings}) == 1
    assert writer_lock(tmp_path / "other.sqlite3") is not writer_lock(db)
    lock = writer_lock(db)
    with lock, lock:  # re-entrant: a writing helper may call another
        pass


def test_concurrent_writers_never_meet_sqlites_busy_handler(tmp_path: Path) -> None:
    """With ``busy_timeout`` 0, any two of this process's transactions that overlapped in
    SQLite would fail at once with "database is locked". None does: the in-process lock
    queues them. The oracle is the set of rows: every claim of a fresh key lands once,
    every claim of the shared alias but one is refused."""
    store = SqliteLinkStore(tmp_path / "links.sqlite3", busy_timeout_ms=0)
    errors: list[BaseException] = []
    taken: list[str] = []
    start = threading.Barrier(16)

    def writer(n: int) -> None:
        start.wait()
        for i in range(40):
            try:
                store.create(_link(f"k{n:02d}x{i:03d}", n * 1_000 + i), render=lambda _: {})
                if i % 10 == 0:
                    store.consume_click(f"k{n:02d}x{i:03d}", 1_800_000_000.0)
                try:
                    store.create(_link("shared"), render=lambda _: {})
                    taken.append(f"{n}")
                except KeyTaken:
                    pass
            except BaseException as exc:  # "database is locked" would land here
                errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(taken) == 1
    rows = sqlite3.connect(tmp_path / "links.sqlite3").execute("SELECT COUNT(*) FROM links")
    assert rows.fetchone()[0] == 16 * 40 + 1
    store.close()


def test_commits_do_not_checkpoint_and_the_background_thread_does(tmp_path: Path) -> None:
    db = tmp_path / "links.sqlite3"
    store = SqliteLinkStore(db)
    store.checkpointer.every_commits = 10_000  # only the timer or stop() may checkpoint
    store.checkpointer.interval_s = 3_600
    for i in range(1_200):  # far past SQLite's automatic 1,000-page checkpoint
        store.create(_link(f"a{i:05d}", i), render=lambda _: {})
    conn = store._conn()
    assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
    assert store.checkpointer.checkpoints == 0
    wal_frames = (os.path.getsize(str(db) + "-wal") - 32) // (4096 + 24)
    assert wal_frames > 1_000  # nothing copied the WAL back or reset it during those commits
    store.checkpointer.stop()  # what close() does: checkpoint what is left
    assert store.checkpointer.checkpoints == 1 and store.checkpointer.pages_checkpointed > 1_000
    assert store.get("a01199") is not None


def test_the_checkpointer_thread_wakes_after_enough_commits(tmp_path: Path) -> None:
    store = SqliteLinkStore(tmp_path / "links.sqlite3")
    store.checkpointer.every_commits = 50
    store.checkpointer.interval_s = 3_600  # so only the commit count can wake it
    for i in range(120):
        store.create(_link(f"b{i:05d}", i), render=lambda _: {})
    deadline = time.monotonic() + 30
    while store.checkpointer.checkpoints == 0:
        assert time.monotonic() < deadline, store.checkpointer.stats()
        time.sleep(0.02)
    assert store.checkpointer.failures == 0
    store.close()
    assert store.checkpointer._thread is None  # stopped with the store
    store.create(_link("again", 10_000), render=lambda _: {})  # a later commit restarts it
    assert store.checkpointer._thread is not None
    store.close()


def test_a_checkpointer_refuses_nonsense(tmp_path: Path) -> None:
    for bad in ({"every_commits": 0}, {"interval_s": 0}):
        with pytest.raises(ValueError):
            WalCheckpointer(tmp_path / "x.sqlite3", **bad)  # type: ignore[arg-type]


def test_a_database_from_before_scan_reasons_gains_the_column(tmp_path: Path) -> None:
    """Opening an older links database adds ``scan_reasons`` (empty) and keeps every row."""
    db = tmp_path / "links.sqlite3"
    first = SqliteLinkStore(db)
    first.create(_link("old1", 1), render=lambda _: {})
    first.close()
    conn = sqlite3.connect(db)
    conn.execute("ALTER TABLE links DROP COLUMN scan_reasons")  # as the first release left it
    conn.commit()
    conn.close()
    store = SqliteLinkStore(db)
    old = store.get("old1")
    assert old is not None and old.scan_reasons == () and old.long_url.endswith("/old1")
    _, new = store.update("old1", {"scan_reasons": ("a rule (+3)",)}, actor="scanner")
    assert new.scan_reasons == ("a rule (+3)",) == store.get("old1").scan_reasons  # type: ignore[union-attr]
    store.close()
