"""``lookup capacity``: the table, the JSON, the generated flags and bad input."""

from __future__ import annotations

import dataclasses
import json

import pytest

from lookup import capacity as cap
from lookup.capacity.cli import parse_number
from lookup.cli import main


def test_shortener_table_and_driver(capsys) -> None:
    assert main(["capacity", "shortener"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split() == ["figure", "value", "how"]
    assert any(
        "Writes (new links)" in x and "38.6/s" in x and "100M / 2,592,000 s" in x for x in lines
    )
    assert any("Key length chosen" in x and "7 chars" in x for x in lines)
    assert any("Fill at 7 characters" in x and "0.341%" in x for x in lines)
    assert "6 TB" in out and "18 TB" in out
    assert lines[-1] == cap.shortener().driver()


@pytest.mark.parametrize("system", list(cap.PLANNERS))
def test_every_system_prints_every_row(system, capsys) -> None:
    assert main(["capacity", system]) == 0
    out = capsys.readouterr().out
    plan = cap.plan(system)
    for row in plan.rows():
        assert row.label in out and row.text in out and row.formula in out
    assert plan.driver() in out


@pytest.mark.parametrize("system", list(cap.PLANNERS))
def test_json_matches_the_library(system, capsys) -> None:
    assert main(["capacity", system, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    plan = cap.plan(system)
    assert doc["system"] == system
    assert doc["assumptions"] == dataclasses.asdict(plan.assumptions)
    assert doc["figures"] == pytest.approx(cap.figures(plan))
    assert [r["key"] for r in doc["rows"]] == [r.key for r in plan.rows()]
    assert doc["rows"][0]["text"] == plan.rows()[0].text
    assert doc["driver"] == plan.driver()


def test_flags_override_assumptions(capsys) -> None:
    argv = ["capacity", "shortener", "--links-per-month", "1M", "--replicas", "5", "--json"]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["assumptions"]["links_per_month"] == 1e6
    assert doc["assumptions"]["replicas"] == 5
    # 120M links: 62^5 ≈ 916M would be 13% full, 62^6 is 0.2% → six characters.
    assert doc["figures"]["links_total"] == 120e6
    assert doc["figures"]["key_length"] == 6
    assert doc["figures"]["replicated_storage_bytes"] == 120e6 * 500 * 5


def test_percent_and_suffix_inputs(capsys) -> None:
    assert (
        main(["capacity", "search", "--shard-slow-probability", "1%", "--shards", "10", "--json"])
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert doc["figures"]["fanout_tail_probability"] == pytest.approx(1 - 0.99**10)


def test_help_lists_every_assumption_with_its_default(capsys) -> None:
    for system, (cls, _) in cap.PLANNERS.items():
        with pytest.raises(SystemExit) as exc:
            main(["capacity", system, "--help"])
        assert exc.value.code == 0
        out = capsys.readouterr().out
        for f in dataclasses.fields(cls):
            assert "--" + f.name.replace("_", "-") in out
        assert "--json" in out
    with pytest.raises(SystemExit):
        main(["capacity", "crawler", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "pages fetched per month (default: 1G)" in out
    assert "seen-URL Bloom filter false-positive rate (default: 0.01)" in out
    assert "connections one async fetcher holds (default: 500)" in out


def test_help_defaults_parse_back_to_the_defaults() -> None:
    from lookup.capacity.cli import default_text

    for cls, _ in cap.PLANNERS.values():
        for f in dataclasses.fields(cls):
            assert parse_number(default_text(f)) == pytest.approx(f.default), f.name


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["capacity", "shortener", "--peak-factor", "-5"], "peak_factor must be greater than 0"),
        (["capacity", "shortener", "--peak-factor", "0"], "peak_factor must be greater than 0"),
        (["capacity", "shortener", "--links-per-month", "lots"], "not a number: 'lots'"),
        (["capacity", "shortener", "--links-per-month", "nan"], "not a finite number"),
        (["capacity", "crawler", "--fetch-seconds", "inf"], "not a finite number"),
        (["capacity", "shortener", "--replicas", "2.5"], "replicas must be a whole number"),
        (["capacity", "typeahead", "--edge-hit-ratio", "1.5"], "edge_hit_ratio must be less"),
        (["capacity", "crawler", "--bloom-fp-rate", "0"], "bloom_fp_rate must be greater"),
        (["capacity", "search", "--shards", "0"], "shards must be at least 1"),
        (["capacity", "teleporter"], "invalid choice"),
        (["capacity"], "required"),
        (["capacity", "shortener", "--no-such-flag", "1"], "unrecognized arguments"),
    ],
)
def test_bad_input_is_a_clear_error(argv, message, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("100M", 1e8),
        ("1e8", 1e8),
        ("100_000_000", 1e8),
        ("2.5k", 2500),
        ("1%", 0.01),
        ("3T", 3e12),
        ("20G", 20e9),
        (" 7 ", 7),
    ],
)
def test_parse_number(text, value) -> None:
    assert parse_number(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["", "%", "M", "1e400", "-inf", "abc", "1MM"])
def test_parse_number_rejects(text) -> None:
    with pytest.raises(ValueError):
        parse_number(text)
