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


#: The app-wide error body, for documenting routes the framework does not see.
ERROR_BODY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"error": {"type": "string"}, "message": {"type": "string"}},
    "required": ["error", "message"],
}


def json_doc(description: str, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    """An OpenAPI response object with a JSON body (the error body by default)."""
    body = schema if schema is not None else ERROR_BODY_SCHEMA
    return {"description": description, "content": {"application/json": {"schema": body}}}


def query_doc(name: str, description: str, schema: dict[str, Any]) -> dict[str, Any]:
    """An OpenAPI query parameter object (optional)."""
    return {"name": name, "in": "query", "required": False, "description": description,
            "schema": schema}  # fmt: skip


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
    #: OpenAPI path items of the hot-path routes, which the framework does not see:
    #: merged into ``/openapi.json`` so a client finds them documented with the rest.
    fast_route_docs: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Prometheus collectors read when ``/metrics`` is scraped (``kit/metrics.py``).
    metrics: list[Any] = field(default_factory=list)
