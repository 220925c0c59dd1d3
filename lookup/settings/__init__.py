"""Every knob of the workbench, declared once: name, environment variable, type, default, unit.

Nothing else in ``lookup/`` or ``app/`` reads the environment (a test over the source tree
enforces it): code asks ``settings.get("data_dir")``, which reads the variable at call
time, so a test or a child process that sets it is seen at once. ``lookup settings``
prints the whole table with the current values.

A value that does not parse raises :class:`SettingError` naming the variable, the value and
what it accepts — a clear message at start-up, never a traceback deep inside a service.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from lookup.settings import blocks, crawler, front, places, search, shortener, typeahead
from lookup.settings.base import Setting, SettingError

__all__ = ["SETTINGS", "Setting", "SettingError", "child_environ", "describe", "get"]

#: Every setting by name, in the order ``lookup settings`` prints them.
SETTINGS: dict[str, Setting] = {
    s.name: s
    for s in [
        *front.KNOBS,
        *shortener.KNOBS,
        *typeahead.KNOBS,
        *places.KNOBS,
        *blocks.KNOBS,
        *crawler.KNOBS,
        *search.KNOBS,
    ]
}


def get(name: str, environ: Mapping[str, str] | None = None) -> Any:
    """The current value of setting ``name`` (read from the environment now)."""
    try:
        setting = SETTINGS[name]
    except KeyError:
        raise KeyError(f"unknown setting {name!r}; known: {', '.join(sorted(SETTINGS))}") from None
    return setting.read(environ)


def describe(environ: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """Every setting with its current value, for ``lookup settings`` and the docs."""
    rows = []
    for s in SETTINGS.values():
        try:
            value: Any = s.read(environ)
        except SettingError as exc:
            value = f"INVALID ({exc})"
        if s.kind == "secret" and value:
            value = "(set)"
        rows.append(
            {
                "name": s.name,
                "env": s.env,
                "value": value,
                "default": s.default,
                "unit": s.unit,
                "help": s.help,
            }
        )
    return rows


def child_environ(**overrides: str) -> dict[str, str]:
    """This process's environment with ``overrides`` (by env name), for a child process."""
    env = dict(os.environ)
    env.update(overrides)
    return env
