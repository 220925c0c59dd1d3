"""Query-parameter helpers: defaults, parsing, ranges and the 400 they raise."""

from __future__ import annotations

import pytest

from lookup.kit.http import ApiError, bool_param, choice_param, float_param, int_param


def _refused(call, *args, **kw) -> ApiError:  # type: ignore[no-untyped-def]
    with pytest.raises(ApiError) as info:
        call(*args, **kw)
    assert info.value.status == 400
    return info.value


def test_booleans() -> None:
    for raw in ("1", "true", " YES ", "on"):
        assert bool_param({"x": raw}, "x") is True
    for raw in ("0", "false", "No", "off", ""):
        assert bool_param({"x": raw}, "x", True) is False
    assert bool_param({}, "x") is False and bool_param({}, "x", None) is None
    err = _refused(bool_param, {"x": "maybe" * 20}, "x")
    assert err.code == "INVALID_PARAMETER"
    assert err.message == f"x must be true or false, got {('maybe' * 20)[:40]!r}"


def test_numbers() -> None:
    assert float_param({"lat": "12.5"}, "lat") == 12.5
    assert float_param({"lat": "  "}, "lat", 3.0) == 3.0
    assert _refused(float_param, {}, "lat", required=True).message == "lat is required"
    assert _refused(float_param, {"lat": "north"}, "lat").message == (
        "lat must be a number, got 'north'"
    )
    assert _refused(float_param, {"lat": "nan"}, "lat").message == "lat must be a finite number"
    assert float_param({"d": "10000"}, "d", low=1, high=10_000) == 10_000.0
    for raw in ("0", "10001", "inf", "nan"):
        err = _refused(float_param, {"d": raw}, "d", low=1, high=10_000)
        assert err.message == "d must be between 1 and 10000"
    assert _refused(float_param, {"d": "soon"}, "d", low=1, high=10_000).message == (
        "d must be a number between 1 and 10000"
    )


def test_integers() -> None:
    assert int_param({"page": "3"}, "page", 1) == 3 and int_param({}, "page", 1) == 1
    assert _refused(int_param, {"page": "two"}, "page", 1).message == (
        "page must be an integer, got 'two'"
    )
    assert int_param({"limit": "500"}, "limit", 100, low=1, high=500) == 500
    for raw in ("0", "501", "x", "1.5", "²"):
        err = _refused(int_param, {"limit": raw}, "limit", 100, low=1, high=500)
        assert err.message == "limit must be an integer from 1 to 500"
    assert _refused(int_param, {"n": "9"}, "n", code="INVALID_LIMIT", high=5).code == (
        "INVALID_LIMIT"
    )


def test_choices() -> None:
    assert choice_param({}, "index", ("geohash", "scan"), "geohash") == "geohash"
    assert choice_param({"index": ""}, "index", ("geohash", "scan"), "geohash") == "geohash"
    assert choice_param({"index": "scan"}, "index", ("geohash", "scan"), "geohash") == "scan"
    err = _refused(choice_param, {"index": "rtree"}, "index", ("geohash", "scan"), "geohash")
    assert err.message == "index must be one of geohash, scan, got 'rtree'"
