"""The whole HTTP API: every system's ``mount`` assembled into one ASGI app.

The assembly (hot-path dispatch, one error format, ``/healthz``) is
:func:`lookup.kit.asgi.build_app`; this module only names the systems, in order.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from starlette.types import ASGIApp

from lookup.kit.asgi import build_app
from lookup.kit.hostguard import AllowedHosts, HostGuard
from lookup.kit.mounts import Mounts
from lookup.kit.serving import PublicBindGuard

#: uvicorn's exit code for a worker that failed to start: its supervisor then stops rather
#: than starting the worker again (``uvicorn.config.STARTUP_FAILURE``).
STARTUP_FAILURE = 3

#: ``"module:function"`` for every subsystem mounted into the app, in order.
#: Each function takes a :class:`~lookup.kit.mounts.Mounts` and registers what it serves.
SUBSYSTEMS: list[str] = [
    "lookup.shortener.http:mount",
    "lookup.geo.http:mount",
    "lookup.typeahead.http:mount",
    "lookup.search.http:mount",
    "lookup.crawler.http:mount",
]

#: Per subsystem: its name in ``/healthz`` and the paths it serves. A system that cannot
#: mount (or start) is mounted as damaged: these paths answer 503 with what is wrong and
#: what to do, while the other systems serve (:mod:`lookup.kit.failsafe`). The shortener's
#: ``/`` stands for its redirects: any path no other route claims.
SYSTEMS: dict[str, tuple[str, tuple[str, ...]]] = {
    "lookup.shortener.http:mount": ("shortener", ("/v1/links", "/v1/tokens", "/v1/shortener", "/")),
    "lookup.geo.http:mount": ("places", ("/v1/search", "/v1/places")),
    "lookup.typeahead.http:mount": ("typeahead", ("/v1/suggest", "/v1/searches", "/v1/typeahead")),
    "lookup.search.http:mount": ("search", ("/search",)),
    "lookup.crawler.http:mount": ("crawler", ("/crawler",)),
}


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
    return build_app(data_dir, base_url=base_url, subsystems=list(chosen), systems=SYSTEMS)


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


#: The server locks this process holds, by data directory (a factory called twice in one
#: process reuses its lock; the descriptor stays open until the process ends).
_HELD_LOCKS: dict[Path, Any] = {}


def _hold_server_lock(data_dir: Path, cli: dict[str, Any] | None) -> None:
    """Take ``data_dir``'s server lock for this process's life, or stop with the reason."""
    from lookup import settings
    from lookup.kit.serverlock import ServerLock, ServerLockRefused, shares_state

    if data_dir in _HELD_LOCKS:
        return
    shared = shares_state(settings.get("shortener_store"), settings.get("cache_url"))
    url = ""
    if cli is not None and cli.get("host") and not (cli.get("fd") or cli.get("uds")):
        host = str(cli["host"]).strip("[]")
        url = f"http://[{host}]:{cli['port']}" if ":" in host else f"http://{host}:{cli['port']}"
    # a worker process of ``uvicorn --workers N`` (spawned by its supervisor)
    worker = multiprocessing.parent_process() is not None
    try:
        lock = ServerLock(data_dir, shared=shared, url=url, worker=worker)
        _HELD_LOCKS[data_dir] = lock.acquire()
    except ServerLockRefused as exc:
        print(exc, file=sys.stderr, flush=True)
        raise SystemExit(STARTUP_FAILURE) from None


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

    Like ``lookup serve`` it holds ``<data-dir>/server.lock`` for the process's life
    (:mod:`lookup.kit.serverlock`): over an embedded data directory it must be the only
    server — ``uvicorn --workers N`` included, whose workers would each cache links the
    others change — so a second one stops with a message and uvicorn's start-up failure
    code (3), which makes uvicorn's supervisor stop instead of restarting it.
    """
    from lookup import settings
    from lookup.kit.admin import configured_admin_token, public_bind_refusal
    from lookup.kit.integrity import data_dir_problem
    from lookup.kit.mounts import resolve_data_dir

    data_dir = resolve_data_dir(None)
    unwritable = data_dir_problem(data_dir)
    if unwritable:
        raise SystemExit(f"uvicorn --factory: {unwritable}")
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
    _hold_server_lock(data_dir, cli)  # before any store is opened
    bind_host = str(cli["host"]) if cli is not None and cli.get("host") else None
    return HostGuard(
        PublicBindGuard(create_app(data_dir), configured_admin_token(data_dir)),
        AllowedHosts.from_settings(bind_host),
    )
