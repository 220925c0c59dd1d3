"""Secrets in files (``file:///dir``): the embedded default, and the one atomic secret file.

:func:`create_once` is how every secret file of the project is made — the secret store's
files, the admin token, the places cursor key, the key permutation's secret: written to a
temporary file of mode 0600 (``O_EXCL``), flushed to disk, then hard-linked into place.
A link never replaces an existing file, so of processes starting together exactly one
value lands and every one of them reads that one; a reader never sees half a file.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from pathlib import Path
from urllib.parse import unquote, urlsplit

from lookup.kit.engines.storeurl import StoreUrl
from lookup.kit.secrets import check_name

__all__ = ["FileSecretStore", "create_once", "read_or_create_secret"]


def create_once(path: str | os.PathLike[str], make: Callable[[], bytes]) -> bytes:
    """The bytes in ``path``; if there is no such file, ``make()`` is written there first —
    unless another process made it first, whose value is then returned.

    The file is mode 0600; its directory is created when missing.
    """
    target = Path(path)
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
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


def read_or_create_secret(path: str | os.PathLike[str], nbytes: int = 32) -> str:
    """The text secret in ``path`` (stripped), made first from ``nbytes`` random bytes
    (URL-safe text) when missing: the admin token, the places cursor key."""
    made = create_once(path, lambda: (secrets.token_urlsafe(nbytes) + "\n").encode("ascii"))
    return made.decode("ascii").strip()


class FileSecretStore:
    """One file per secret in ``directory`` (mode 0600); atomic creation by hard link."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    @classmethod
    def from_url(cls, url: StoreUrl) -> FileSecretStore:
        """The store in the directory ``url`` names (``file:///path/to/dir``)."""
        path = unquote(urlsplit(url.url).path)
        if not path:
            raise ValueError(f"file URL {url.url!r} names no directory (file:///path/to/dir)")
        return cls(path)

    def describe(self) -> str:
        return self.directory.resolve().as_uri()

    def get_or_create(self, name: str, make: Callable[[], bytes]) -> bytes:
        return create_once(self.directory / check_name(name), make)
