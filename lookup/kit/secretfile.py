"""A secret kept in a file of the data directory: made once at random, mode 0600, shared.

Two processes starting together agree on one value: each writes its own temporary
file and hard-links it into place; the loser reads the winner's.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

__all__ = ["read_or_create_secret"]


def read_or_create_secret(path: str | os.PathLike[str], nbytes: int = 32) -> str:
    """The secret in ``path`` (stripped), creating it with ``nbytes`` random bytes first."""
    path = Path(path)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(secrets.token_urlsafe(nbytes) + "\n")
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another process made it first; use theirs
        finally:
            tmp.unlink(missing_ok=True)
    return path.read_text(encoding="ascii").strip()
