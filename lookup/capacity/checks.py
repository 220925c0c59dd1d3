"""Input validation: every assumption and helper argument is checked against one rule.

An assumptions class is a frozen dataclass whose fields are declared with
:func:`assume` or :func:`fraction`; the field carries its help text and its rule in
its metadata, so the CLI's flags and the dashboard's inputs check the same rule.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import field, fields
from typing import Any, Literal, overload


@overload
def check(
    name: str,
    value: Any,
    *,
    minimum: float | None = ...,
    inclusive: bool = ...,
    maximum: float | None = ...,
    max_inclusive: bool = ...,
    integer: Literal[True],
) -> int: ...
@overload
def check(
    name: str,
    value: Any,
    *,
    minimum: float | None = ...,
    inclusive: bool = ...,
    maximum: float | None = ...,
    max_inclusive: bool = ...,
    integer: Literal[False] = ...,
) -> float: ...
@overload
def check(
    name: str,
    value: Any,
    *,
    minimum: float | None = ...,
    inclusive: bool = ...,
    maximum: float | None = ...,
    max_inclusive: bool = ...,
    integer: bool = ...,
) -> int | float: ...
def check(
    name: str,
    value: Any,
    *,
    minimum: float | None = 0.0,
    inclusive: bool = False,
    maximum: float | None = None,
    max_inclusive: bool = True,
    integer: bool = False,
) -> int | float:
    """Validate one number and return it as a plain ``int``/``float``.

    Raises ``ValueError`` naming the value and the rule it broke.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a number, got {value!r}")
    number = float(value)
    if math.isnan(number):
        raise ValueError(f"{name} must be a number, got NaN")
    if math.isinf(number):
        raise ValueError(f"{name} must be finite, got {number}")
    if integer and not number.is_integer():
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    if minimum is not None:
        if inclusive and number < minimum:
            raise ValueError(f"{name} must be at least {minimum:g}, got {value!r}")
        if not inclusive and number <= minimum:
            raise ValueError(f"{name} must be greater than {minimum:g}, got {value!r}")
    if maximum is not None:
        if max_inclusive and number > maximum:
            raise ValueError(f"{name} must be at most {maximum:g}, got {value!r}")
        if not max_inclusive and number >= maximum:
            raise ValueError(f"{name} must be less than {maximum:g}, got {value!r}")
    return int(number) if integer else number


def assume(
    default: float,
    help: str,
    *,
    minimum: float | None = 0.0,
    inclusive: bool = False,
    maximum: float | None = None,
    max_inclusive: bool = True,
    integer: bool = False,
) -> Any:
    """A dataclass field carrying its help text and validation rule in its metadata."""
    rule = {
        "minimum": minimum,
        "inclusive": inclusive,
        "maximum": maximum,
        "max_inclusive": max_inclusive,
        "integer": integer,
    }
    return field(default=default, metadata={"help": help, "rule": rule})


def fraction(default: float, help: str, *, allow_zero: bool = True, allow_one: bool = False) -> Any:
    """An assumption that is a share of something: between 0 and 1."""
    return assume(
        default,
        help,
        minimum=0.0,
        inclusive=allow_zero,
        maximum=1.0,
        max_inclusive=allow_one,
    )


class Validated:
    """Mixin: validates every field of a frozen assumptions dataclass on creation."""

    def __post_init__(self) -> None:
        for f in fields(self):  # type: ignore[arg-type]
            rule = f.metadata.get("rule")
            if rule is None:
                continue
            value = check(f.name, getattr(self, f.name), **rule)
            object.__setattr__(self, f.name, value)


def validate_assumption(cls: type, name: str, value: Any) -> int | float:
    """Check one value against the rule of assumption ``name`` of ``cls``; return it cleaned.

    Raises ``ValueError`` with a message naming the assumption and the rule.
    """
    for f in fields(cls):
        if f.name == name and "rule" in f.metadata:
            return check(name, value, **f.metadata["rule"])
    raise ValueError(f"{cls.__name__} has no assumption {name!r}")
