"""A build publishes to the shared (PostgreSQL) snapshot store, and a server with no copy of
the data directory's snapshots serves what the directory store serves.

Setting ``typeahead_snapshot_store`` names the store; the oracle is the same data
directory served from its own snapshot files.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from lookup.typeahead.pipeline import run, snapshot_root
from lookup.typeahead.serving import SuggestService
from lookup.typeahead.snapshot import open_snapshot_store


def test_a_build_publishes_to_the_shared_store_and_a_server_serves_from_it(
    data_dir: Path, postgres_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    oracle = SuggestService.from_data_dir(data_dir)
    monkeypatch.setenv("LOOKUP_TYPEAHEAD_SNAPSHOT_STORE", postgres_db)
    monkeypatch.setenv("LOOKUP_TYPEAHEAD_SNAPSHOT_CACHE", str(tmp_path / "cache"))
    result = run(data_dir, force=True)
    assert result.ok, result.to_dict()
    shared = open_snapshot_store(postgres_db)
    assert shared.names() == oracle.store.names()
    for market in shared.names():
        current = shared.current(market)
        assert current is not None and shared.versions(market) == [current]
    shutil.rmtree(snapshot_root(data_dir))  # nothing left on disk to serve from
    served = SuggestService.from_data_dir(data_dir)
    try:
        for q, market in [("ip", "en-IN"), ("i", "en-IN"), ("", "en-IN"), ("क्", "hi-IN")]:
            got, want = served.lookup(q, market).body(), oracle.lookup(q, market).body()
            assert got["suggestions"] == want["suggestions"], (q, market)
            assert got["version"] == shared.current(market)
    finally:
        served.close()
        oracle.close()


def test_a_damaged_chunk_of_the_current_snapshot_is_reported_with_an_intact_one_to_activate(
    postgres_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lookup.kit.versionstore import ChecksumError
    from lookup.typeahead.snapshot import snapshot_damage
    from tests.contracts.test_snapshot_store_contract import typeahead_directory

    monkeypatch.setenv("LOOKUP_TYPEAHEAD_SNAPSHOT_CACHE", str(tmp_path / "cache"))
    h = typeahead_directory(None, tmp_path)  # type: ignore[arg-type]  # needs no fixture
    store = open_snapshot_store(postgres_db)
    old, new = h.versions[:2]
    for v in (old, new):
        store.publish("en-IN", v, h.candidate("en-IN", v))
    with store.versions_store.pool.connection() as conn:  # type: ignore[union-attr]
        conn.execute(
            "UPDATE vs_chunks SET data = set_byte(data, 100, get_byte(data, 100) # 1) "
            "WHERE sha256 = (SELECT chunks[1] FROM vs_files WHERE version = %s)",
            (new,),
        )
    with pytest.raises(ChecksumError) as exc:
        store.open("en-IN")
    damage = snapshot_damage(store, "en-IN", new, exc.value)
    assert "damaged" in str(damage) and "checksum" in str(damage)
    assert old in str(damage.remedy)
    assert store.open("en-IN", old) is not None  # the intact one still loads
