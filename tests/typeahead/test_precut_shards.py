"""``lookup typeahead build --shards N`` builds each published snapshot's shard set side by
side (lookup/typeahead/shardbuild.py), on the Dask workers when the fold runs there.

Oracle: the shard set sharded serving cuts from the same snapshot when it starts
(:func:`~lookup.typeahead.sharding.ensure_shard_sets`) — the same arrays, strings, scores,
metadata and plan in every file, only each file's own write time differs — and serving
finds the pre-built set current and cuts nothing.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from lookup.cli import main as lookup_main
from lookup.typeahead.pipeline import run
from lookup.typeahead.shardbuild import precut_hook
from lookup.typeahead.sharding import ensure_shard_sets, shard_sets_root
from lookup.typeahead.snapshot import open_snapshot_store
from tests.typeahead.conftest import Built
from tests.typeahead.test_shardbuild import assert_same_files


def _cut_by_serving(data_dir: Path, n: int) -> Path:
    """What serve-shards cuts from the same snapshots, in a copy of the data directory."""
    other = data_dir.parent / "oracle"
    shutil.copytree(data_dir, other)
    shutil.rmtree(shard_sets_root(other, n), ignore_errors=True)
    return ensure_shard_sets(other, n)


@pytest.mark.parametrize("dask", [None, "local"], ids=["process-pool", "dask"])
def test_a_build_with_shards_writes_the_set_serving_would_cut(
    data_dir: Path, built: Built, dask: str | None
) -> None:
    said: list[str] = []
    result = run(data_dir, built.log_path, fresh=True, force=True, dask=dask or "",
                 on_published=precut_hook(data_dir, 2), progress=said.append)  # fmt: skip
    assert result.ok and all(m.published for m in result.markets)
    assert sum("2 shards of" in line for line in said) == len(result.markets)
    assert any(line.startswith("dask:") for line in said) == bool(dask)
    built, oracle = shard_sets_root(data_dir, 2), _cut_by_serving(data_dir, 2)
    store = open_snapshot_store(data_dir / "typeahead" / "snapshots")
    assert sorted(p.name for p in built.iterdir()) == sorted(store.names())
    for market in store.names():
        # the plan's cost shares come from float64 scores here, float32 in a snapshot
        assert_same_files(built / market, oracle / market, 2, plan_exact=False)
    cutting: list[str] = []  # serving finds every market cut already
    ensure_shard_sets(data_dir, 2, progress=cutting.append)
    assert not [line for line in cutting if "cutting" in line]


def test_the_cli_takes_shards_and_refuses_a_bad_count(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["typeahead", "build", "--force", "--quiet", "--data-dir", str(data_dir)]
    assert lookup_main([*argv, "--shards", "3"]) == 0
    assert (shard_sets_root(data_dir, 3) / "en-IN" / "plan.json").exists()
    with pytest.raises(SystemExit) as exit_:
        lookup_main([*argv, "--shards", "-1"])
    assert exit_.value.code == 2
    assert "--shards" in capsys.readouterr().err
