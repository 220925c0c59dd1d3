"""``lookup typeahead build|suggest|snapshots`` and the data-set registry entry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lookup.cli import main
from lookup.datasets import DATASETS


def write_csv(path: Path, rows: list[tuple[str, str, str, str]]) -> Path:
    path.write_text(
        "ts,market,query,user_id\n" + "".join(",".join(r) + "\n" for r in rows), encoding="utf-8"
    )
    return path


def small_log(path: Path) -> Path:
    rows = []
    for u in range(8):
        rows.append((f"2026-10-01T1{u}:00:00Z", "en-IN", "ipl live score", f"u{u}"))
        rows.append((f"2026-10-02T1{u}:00:00+05:30", "en-IN", "IPhone 17", f"u{u}"))
        rows.append((str(1_790_000_000 + u), "hi-IN", "मौसम", f"u{u}"))
    rows.append(("2026-10-02T10:00:00Z", "en-IN", "ipl auction", "u1"))  # one user only
    return write_csv(path, rows)


def test_build_from_any_csv_then_suggest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = small_log(tmp_path / "log.csv")
    data = tmp_path / "data"
    assert main(["typeahead", "build", "--log", str(log), "--data-dir", str(data), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "en-IN" in out and "published" in out
    assert main(["typeahead", "suggest", "ip", "--data-dir", str(data)]) == 0
    body = json.loads(capsys.readouterr().out)
    # 8 searches each, but the iPhone ones are a day newer so they decayed less;
    # "ipl auction" had one user and is filtered
    assert body["suggestions"] == ["iphone 17", "ipl live score"]
    assert main(["typeahead", "suggest", "मौ", "--market", "hi-IN", "--data-dir", str(data)]) == 0
    assert json.loads(capsys.readouterr().out)["suggestions"] == ["मौसम"]
    assert main(["typeahead", "snapshots", "--data-dir", str(data)]) == 0
    assert "(current)" in capsys.readouterr().out
    # building again folds nothing new (the log was folded) and republishes
    args = ["typeahead", "build", "--log", str(log), "--data-dir", str(data), "--json", "--quiet"]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert all(f["events"] == 0 and f["skipped_old"] > 0 for f in report["folded"])


def test_build_errors_are_clear(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = str(tmp_path / "data")
    assert main(["typeahead", "build", "--data-dir", data]) == 2
    assert "lookup datasets build typeahead" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    bad.write_text("ts,query\n1,a\n")
    assert main(["typeahead", "build", "--log", str(bad), "--data-dir", data]) == 2
    assert "user_id" in capsys.readouterr().err
    assert main(["typeahead", "suggest", "ip", "--data-dir", data]) == 2
    assert "lookup typeahead build" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["typeahead", "build", "--min-users", "0", "--data-dir", data])
    with pytest.raises(SystemExit):
        main(["typeahead", "suggest", "ip", "--limit", "11", "--data-dir", data])


def test_refused_build_exits_1_and_keeps_the_old_snapshot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "data")
    assert main(["typeahead", "build", "--log", str(small_log(tmp_path / "a.csv")),
                 "--data-dir", data, "--quiet"]) == 0  # fmt: skip
    capsys.readouterr()
    # a later log in which everyone searches something else: the probes see nothing sensible
    rows = [(f"2026-11-01T10:0{u}:00Z", "en-IN", f"zz other {k}", f"u{u}")
            for u in range(8) for k in range(2)]  # fmt: skip
    log = write_csv(tmp_path / "b.csv", rows)
    args = ["typeahead", "build", "--log", str(log), "--data-dir", data, "--fresh", "--quiet"]
    assert main(args) == 1
    assert "REFUSED" in capsys.readouterr().out
    assert main(["typeahead", "suggest", "ip", "--data-dir", data]) == 0
    assert "ipl live score" in capsys.readouterr().out
    assert main(args + ["--force"]) == 0  # a deliberate change of data set


def test_registered_as_a_data_set(tmp_path: Path) -> None:
    ds = DATASETS["typeahead"]
    assert not ds.is_built(tmp_path)
    path = ds.build(tmp_path, events=5_000, seed=1, progress=False)
    assert path == ds.path(tmp_path) and path.exists() and ds.is_built(tmp_path)
    assert set(ds.options) >= {"events", "seed"}
