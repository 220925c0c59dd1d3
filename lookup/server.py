"""The whole HTTP API: every system's ``mount`` assembled into one ASGI app.

The assembly (hot-path dispatch, one error format, ``/healthz``) is
:func:`lookup.kit.asgi.build_app`; this module only names the systems, in order.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from starlette.types import ASGIApp

from lookup.kit.asgi import build_app
from lookup.kit.mounts import Mounts
from lookup.kit.serving import PublicBindGuard

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


def _uvicorn_cli_options() -> dict[str, Any] | None:
    """The options of the ``uvicorn`` command running us (its click context), if any."""
    try:
        import click
    except ImportError:  # pragma: no cover - uvicorn depends on click
        return None
    ctx = click.get_current_context(silent=True)
    callback = getattr(getattr(ctx, "command", None), "callback", None)
    if ctx is None or getattr(callback, "__module__", "") != "uvicorn.main":
        return None
    return dict(ctx.params)


def app_factory() -> ASGIApp:
    """Entry point for ``uvicorn --factory lookup.server:app_factory`` (reads the environment).

    Makes the checks ``lookup serve`` makes. Under the ``uvicorn`` command the factory sees
    its options (click's context): a non-loopback ``--host`` without an admin token, or
    uvicorn's proxy headers on while ``LOOKUP_TRUST_FORWARDED_FOR`` trusts no proxy (uvicorn
    would then take any loopback client's ``X-Forwarded-For`` as its address), stop it with a
    message. Where the bind address is not known (``--workers``, ``--fd``, ``--uds``, or
    ``uvicorn.run`` from code) :class:`~lookup.kit.serving.PublicBindGuard` answers 503 to
    requests that arrive on a non-loopback address instead. uvicorn's limits are its own
    there: pass ``--http lookup.kit.serving:HttpProtocol`` for the header limits and read
    timeouts ``lookup serve`` sets.
    """
    from lookup import settings
    from lookup.kit.admin import configured_admin_token, public_bind_refusal
    from lookup.kit.mounts import resolve_data_dir

    data_dir = resolve_data_dir(None)
    cli = _uvicorn_cli_options()
    if cli is not None:
        problems = []
        if cli.get("host") and not cli.get("fd") and not cli.get("uds"):
            problems.append(public_bind_refusal(str(cli["host"]), data_dir, "uvicorn --factory"))
        if cli.get("proxy_headers", True) and not settings.get("trust_forwarded_for"):
            problems.append(
                "uvicorn --factory: uvicorn's proxy headers are on (its default), so it would "
                "take the client address from X-Forwarded-For although "
                "LOOKUP_TRUST_FORWARDED_FOR trusts no proxy: any client could pick its own "
                "rate-limit identity. Pass --no-proxy-headers, or name your proxy in "
                "LOOKUP_TRUST_FORWARDED_FOR and the same in --forwarded-allow-ips."
            )
        message = "\n".join(p for p in problems if p)
        if message:
            raise SystemExit(message)
    return PublicBindGuard(create_app(data_dir), configured_admin_token(data_dir))

