"""The whole HTTP API: every system's ``mount`` assembled into one ASGI app.

The assembly (hot-path dispatch, one error format, ``/healthz``) is
:func:`lookup.kit.asgi.build_app`; this module only names the systems, in order.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from starlette.types import ASGIApp

from lookup.kit.asgi import build_app
from lookup.kit.mounts import Mounts

#: ``"module:function"`` for every subsystem mounted into the app, in order.
#: Each function takes a :class:`~lookup.kit.mounts.Mounts` and registers what it serves.
SUBSYSTEMS: list[str] = [
    "lookup.shortener.http:mount",
    "lookup.geo.http:mount",
    "lookup.typeahead.http:mount",
    "lookup.search.http:mount",
    "lookup.crawler.http:mount",
]


def create_app(
    data_dir: str | os.PathLike[str] | None = None,
    *,
    base_url: str | None = None,
    subsystems: list[str | Callable[[Mounts], None]] | None = None,
) -> ASGIApp:
    """Build the whole HTTP API over the state in ``data_dir``.

    ``base_url`` is the public address of this server (used for short links);
    it defaults to ``$LOOKUP_PUBLIC_URL`` or ``http://127.0.0.1:8000``.
    """
    chosen = SUBSYSTEMS if subsystems is None else subsystems
    return build_app(data_dir, base_url=base_url, subsystems=list(chosen))


def app_factory() -> ASGIApp:
    """Entry point for ``uvicorn --factory lookup.server:app_factory`` (reads the environment)."""
    return create_app()
