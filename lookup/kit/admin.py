"""The admin token: the one bearer token of every mutating management endpoint.

It is ``$LOOKUP_ADMIN_TOKEN`` when set, else a random token created once in the data
directory (``<data-dir>/shortener/admin.token``, mode 0600: the shortener made it first,
and a server keeps the token it has) and read by every system and by the dashboard,
which shares the data directory. :func:`is_admin` compares in constant time.
"""

from __future__ import annotations

import functools
import hmac
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lookup import errors, settings

ADMIN_TOKEN_ENV = settings.SETTINGS["admin_token"].env
#: Where the token file lives inside the data directory.
TOKEN_DIR = "shortener"


def load_admin_token(
    directory: str | os.PathLike[str], environ: dict[str, str] | None = None
) -> str:
    """The admin token: ``$LOOKUP_ADMIN_TOKEN``, else ``<dir>/admin.token`` (created once, 0600)."""
    token = settings.get("admin_token", environ)
    if token:
        return str(token)
    path = Path(directory) / "admin.token"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(secrets.token_urlsafe(32) + "\n")
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another process made it first; use theirs
        finally:
            tmp.unlink(missing_ok=True)
    return path.read_text(encoding="ascii").strip()


def server_admin_token(data_dir: str | os.PathLike[str]) -> str:
    """The admin token of the server over ``data_dir`` (see the module docstring)."""
    return load_admin_token(Path(data_dir) / TOKEN_DIR)


def admin_token_of(mounts: Any) -> Callable[[], str]:
    """The admin token of the server being assembled, read on first use: the one a system
    published on the app (``api.state.admin_token``: the shortener's, which a fleet keeps
    in its shared secret store), else :func:`server_admin_token` of the data directory."""

    @functools.cache
    def token() -> str:
        published = getattr(mounts.api.state, "admin_token", None)
        return str(published) if published else server_admin_token(mounts.data_dir)

    return token


def is_admin(authorization: str | None, token: str) -> bool:
    """Whether an ``Authorization: Bearer ...`` header carries the admin token."""
    if not authorization or not token:
        return False
    scheme, _, value = authorization.strip().partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(
        value.strip().encode(), token.encode()
    )


def require_admin(authorization: str | None, token: str) -> None:
    """Refuse a management call without the admin token: 401 ``UNAUTHORIZED`` when no
    ``Authorization`` header came, 403 ``FORBIDDEN`` when it carries another token."""
    if authorization is None:
        raise errors.Unauthorized("send Authorization: Bearer <admin token>", code="UNAUTHORIZED")
    if not is_admin(authorization, token):
        raise errors.Forbidden("this endpoint needs the admin token", code="FORBIDDEN")


#: The OpenAPI ``responses`` of an admin endpoint's refusals.
ADMIN_RESPONSES: dict[int | str, dict[str, str]] = {
    401: {"description": "UNAUTHORIZED: no admin token"},
    403: {"description": "FORBIDDEN: not the admin token"},
}

__all__ = [
    "ADMIN_RESPONSES",
    "ADMIN_TOKEN_ENV",
    "TOKEN_DIR",
    "admin_token_of",
    "is_admin",
    "load_admin_token",
    "require_admin",
    "server_admin_token",
]
