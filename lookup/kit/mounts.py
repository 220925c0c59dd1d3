"""The contract between the HTTP edge and a system: what a system's ``mount`` fills in.

It sits below both (in ``kit``) so the edge imports systems and never the reverse: a
system's ``mount(mounts)`` adds routes, start-up/shut-down hooks and a health probe.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from starlette.routing import BaseRoute

from lookup import settings


def resolve_data_dir(value: str | os.PathLike[str] | None = None) -> Path:
    """The data directory: an explicit value, else ``$LOOKUP_DATA_DIR``, else ``./data``."""
    chosen = value or settings.get("data_dir")
    return Path(chosen).expanduser().resolve()


@dataclass
class Mounts:
    """What a subsystem's ``mount`` function receives and fills in."""

    data_dir: Path
    base_url: str
    api: FastAPI
    fast_routes: list[BaseRoute] = field(default_factory=list)
    on_startup: list[Callable[[], Awaitable[None] | None]] = field(default_factory=list)
    on_shutdown: list[Callable[[], Awaitable[None] | None]] = field(default_factory=list)
    health: dict[str, Callable[[], dict[str, Any]]] = field(default_factory=dict)
