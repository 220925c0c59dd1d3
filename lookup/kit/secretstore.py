"""Secrets a whole fleet must agree on: created once, then the same for every process.

The shortener's key permutation is keyed by a secret; two API processes with different
secrets would map two different ids to one key. The admin token and the HMAC keys (derived
from the same secret) must match across processes as well. A :class:`SecretStore` holds
such values by name and creates each one exactly once, atomically, whoever asks first:

* :class:`FileSecretStore` — one file per name in a directory (mode 0600, created by
  writing a temporary file and hard-linking it into place, so concurrent starters agree):
  the embedded default, the data directory of one process or of processes sharing it;
* :class:`~lookup.kit.secretstore_pg.PostgresSecretStore` — a table in the fleet's shared
  database (``INSERT … ON CONFLICT DO NOTHING`` then ``SELECT``), for processes with
  different data directories, as on different machines.

:func:`open_secret_store` picks one from a URL (``file:///dir`` or ``postgresql://…``).
"""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Protocol, runtime_checkable
from urllib.parse import unquote, urlsplit

from lookup.kit.storeurl import parse_store_url

__all__ = ["FileSecretStore", "SecretStore", "open_secret_store", "random_bytes"]

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def random_bytes(n: int = 32) -> Callable[[], bytes]:
    """A maker of ``n`` random bytes (for :meth:`SecretStore.get_or_create`)."""
    return lambda: secrets.token_bytes(n)


def check_name(name: str) -> str:
    """``name`` if it is a valid secret name (letters, digits, ``._-``), else ValueError."""
    if not _NAME.fullmatch(name):
        raise ValueError(f"invalid secret name {name!r} (letters, digits, '.', '_', '-')")
    return name


@runtime_checkable
class SecretStore(Protocol):
    """Named secrets, each created once: every caller, in any process, gets the same value."""

    def describe(self) -> str:
        """Where the secrets live (a directory's URL, a server without its credentials)."""
        ...

    def get_or_create(self, name: str, make: Callable[[], bytes]) -> bytes:
        """The value stored under ``name``; if there is none, store ``make()`` — unless
        another caller stored one first, whose value is then returned."""
        ...


class FileSecretStore:
    """One file per secret in ``directory`` (mode 0600); atomic creation by hard link."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def describe(self) -> str:
        return self.directory.resolve().as_uri()

    def get_or_create(self, name: str, make: Callable[[], bytes]) -> bytes:
        target = self.directory / check_name(name)
        if not target.exists():
            self.directory.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(make())
                    fh.flush()
                    os.fsync(fh.fileno())
                try:
                    os.link(tmp, target)
                except FileExistsError:
                    pass  # another process won the race; use its value
            finally:
                tmp.unlink(missing_ok=True)
        return target.read_bytes()


def open_secret_store(url: str) -> SecretStore:
    """The secret store a URL names: ``file:///path/to/dir`` or ``postgresql://…``."""
    parsed = parse_store_url(url, ("file", "postgresql"))
    if parsed.scheme == "postgresql":
        from lookup.kit.secretstore_pg import PostgresSecretStore

        return PostgresSecretStore(parsed.url)
    path = unquote(urlsplit(parsed.url).path)
    if not path:
        raise ValueError(f"file URL {url!r} names no directory (file:///path/to/dir)")
    return FileSecretStore(path)
