"""Secrets a whole fleet must agree on: created once, then the same for every process.

The shortener's key permutation is keyed by a secret; two API processes with different
secrets would map two different ids to one key. The admin token and the HMAC keys (derived
from the same secret) must match across processes as well. A :class:`SecretStore` holds
such values by name and creates each one exactly once, atomically, whoever asks first.

This package is the seam. Its ``__init__`` is the port and imports no backend:
:class:`SecretStore`, the name rule (:func:`check_name`), :data:`BACKENDS` (the registry
``scheme → "module:Class"``) and :func:`open_secret_store`, which imports the backend a
URL names when it is called. The backends:

* :mod:`.file` — one file per name in a directory (mode 0600, created by writing a
  temporary file and hard-linking it into place, so concurrent starters agree): the
  embedded default, the data directory of one process or of processes sharing it. Its
  :func:`~.file.create_once` is the one atomic secret-file helper of the project;
* :mod:`.postgres` — a table in the fleet's shared database (``INSERT … ON CONFLICT DO
  NOTHING`` then ``SELECT``), for processes with different data directories.

Adding a backend is one file with a class that has ``from_url`` plus one line in
:data:`BACKENDS`; ``tests/contracts/test_secret_store_contract.py`` then runs against it.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable
from typing import Protocol, cast, runtime_checkable

from lookup.kit.engines.storeurl import StoreUrl
from lookup.kit.registry import load_backend, open_backend

__all__ = [
    "BACKENDS",
    "Backend",
    "SecretStore",
    "backend",
    "check_name",
    "open_secret_store",
    "random_bytes",
]

#: Each URL scheme and the class that serves it, imported when a URL names the scheme.
BACKENDS: dict[str, str] = {
    "file": "lookup.kit.secrets.file:FileSecretStore",
    "postgresql": "lookup.kit.secrets.postgres:PostgresSecretStore",
}

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


class Backend(Protocol):
    """What :data:`BACKENDS` names: a class that opens its store from a parsed URL."""

    def from_url(self, url: StoreUrl) -> SecretStore:
        """The store ``url`` names."""
        ...


def backend(scheme: str) -> Backend:
    """The class registered for ``scheme`` in :data:`BACKENDS`, imported now (ValueError
    naming the registered schemes for another)."""
    return cast(Backend, load_backend(BACKENDS, scheme))


def open_secret_store(url: str) -> SecretStore:
    """The secret store a URL names: ``file:///path/to/dir`` or ``postgresql://…``.

    An unknown scheme raises ValueError naming the registered ones.
    """
    return cast(SecretStore, open_backend(BACKENDS, url))
