"""The admin token every mutating management endpoint asks for, in one place.

The token is ``$LOOKUP_ADMIN_TOKEN``, else the file ``<data-dir>/shortener/admin.token``
(the place the shortener has always kept it, so an existing token and the dashboard's
copy keep working), created once with a random value, mode 0600. A request proves it
holds the token with ``Authorization: Bearer <token>``: no header is 401, a wrong one 403.
"""

from __future__ import annotations

import functools
import hmac
import ipaddress
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lookup import errors, settings
from lookup.kit.secrets.file import read_or_create_secret

__all__ = [
    "ADMIN_RESPONSES",
    "ADMIN_TOKEN_ENV",
    "admin_token_of",
    "require_admin",
    "server_admin_token",
    "admin_token_path",
    "check_admin",
    "configured_admin_token",
    "is_admin",
    "is_loopback_host",
    "load_admin_token",
    "load_admin_token_in",
    "public_bind_refusal",
]


ADMIN_TOKEN_ENV = settings.SETTINGS["admin_token"].env
#: The OpenAPI ``responses`` of an admin endpoint's refusals.
ADMIN_RESPONSES: dict[int | str, dict[str, str]] = {
    401: {"description": "UNAUTHORIZED: no admin token"},
    403: {"description": "FORBIDDEN: not the admin token"},
}


def admin_token_path(data_dir: str | os.PathLike[str]) -> Path:
    """Where the generated admin token lives under a data directory."""
    return Path(data_dir) / "shortener" / "admin.token"


def configured_admin_token(
    data_dir: str | os.PathLike[str], environ: dict[str, str] | None = None
) -> str:
    """The admin token if one is configured (environment or an existing file), else ``""``."""
    token = settings.get("admin_token", environ)
    if token:
        return str(token)
    path = admin_token_path(data_dir)
    try:
        return path.read_text(encoding="ascii").strip()
    except OSError:
        return ""


def load_admin_token(
    data_dir: str | os.PathLike[str], environ: dict[str, str] | None = None
) -> str:
    """The admin token, creating the file with a random one on first use."""
    return load_admin_token_in(admin_token_path(data_dir).parent, environ)


def load_admin_token_in(
    directory: str | os.PathLike[str], environ: dict[str, str] | None = None
) -> str:
    """The admin token: configured, else ``<directory>/admin.token`` (created once, 0600).

    For a token kept somewhere other than a data directory's ``shortener/`` (the servers
    ``lookup up`` starts keep theirs in their own directory)."""
    token = settings.get("admin_token", environ)
    return str(token) if token else read_or_create_secret(Path(directory) / "admin.token")


def is_admin(authorization: str | None, token: str) -> bool:
    """Whether an ``Authorization: Bearer ...`` header carries the admin token."""
    if not authorization or not token:
        return False
    scheme, _, value = authorization.strip().partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(
        value.strip().encode(), token.encode()
    )


def check_admin(authorization: str | None, token: str, what: str = "this endpoint") -> None:
    """Raise 401 without credentials and 403 with the wrong ones."""
    if not authorization:
        raise errors.Unauthorized(
            f"{what} needs Authorization: Bearer <admin token>", code="UNAUTHORIZED"
        )
    if not is_admin(authorization, token):
        raise errors.Forbidden(f"{what} needs the admin token", code="FORBIDDEN")


def is_loopback_host(host: str) -> bool:
    """Is a bind address loopback only (``127.0.0.0/8``, ``::1``, ``localhost``)?"""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False  # a name that may resolve anywhere


def public_bind_refusal(host: str, data_dir: str | os.PathLike[str], command: str) -> str:
    """Why a server must not listen on ``host`` over ``data_dir`` (``""``: it may).

    A non-loopback address without an admin token configured is refused: the management
    endpoints would be guarded by a token nobody was given. ``command`` names the caller
    in the message (``lookup serve``, ``uvicorn --factory``)."""
    if is_loopback_host(host) or configured_admin_token(data_dir):
        return ""
    return (
        f"{command}: refusing to listen on {host} (not a loopback address) without an "
        "admin token configured: the management endpoints would be guarded by a token "
        f"nobody was given. Set {ADMIN_TOKEN_ENV} (or write one to "
        f"{admin_token_path(data_dir)}), or bind 127.0.0.1."
    )


def server_admin_token(data_dir: str | os.PathLike[str]) -> str:
    """The admin token of the server over ``data_dir`` (:func:`load_admin_token`)."""
    return load_admin_token(data_dir)


def require_admin(authorization: str | None, token: str) -> None:
    """Refuse a management call without the admin token (:func:`check_admin`)."""
    check_admin(authorization, token)


def admin_token_of(mounts: Any) -> Callable[[], str]:
    """The admin token of the server being assembled, read on first use: the one a system
    published on the app (``api.state.admin_token``: the shortener's, which a fleet keeps
    in its shared secret store), else :func:`load_admin_token` of the data directory."""

    @functools.cache
    def token() -> str:
        published = getattr(mounts.api.state, "admin_token", None)
        return str(published) if published else load_admin_token(mounts.data_dir)

    return token
