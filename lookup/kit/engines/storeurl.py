"""The URLs that pick a store's backend: ``sqlite:///path``, ``memory:``, later the servers.

Every factory ``open_<thing>(url)`` parses its URL here, so every seam accepts the same
spellings and refuses an unknown one with the same clear message.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

__all__ = ["StoreUrl", "parse_store_url", "spellings", "sqlite_url"]


@dataclass(frozen=True)
class StoreUrl:
    """A parsed store URL: its scheme, and the file path for ``sqlite``."""

    scheme: str
    url: str
    path: Path | None = None


def sqlite_url(path: str | os.PathLike[str]) -> str:
    """The ``sqlite:///`` URL of a file (absolute)."""
    return f"sqlite:///{Path(path).expanduser().resolve().as_posix().lstrip('/')}"


def parse_store_url(url: str, accepted: tuple[str, ...] = ("sqlite", "memory")) -> StoreUrl:
    """Parse ``url``; raise ValueError naming the accepted schemes when it is not one of them.

    ``sqlite:///abs/path`` and ``sqlite:relative/path`` give a file path; a bare path
    (no scheme) counts as ``sqlite``; ``memory:`` has no path.
    """
    text = str(url).strip()
    if not text:
        raise ValueError(f"empty store URL; expected one of: {spellings(accepted)}")
    if "://" not in text and not text.startswith("memory:") and ":" not in text.split("/")[0]:
        text = sqlite_url(text)
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if scheme == "postgres":
        scheme = "postgresql"
    if scheme not in accepted:
        raise ValueError(f"unsupported store URL {url!r}; expected one of: {spellings(accepted)}")
    if scheme == "sqlite":
        raw = text.split(":", 1)[1]
        raw = raw[2:] if raw.startswith("//") else raw
        raw = "/" + raw.lstrip("/") if raw.startswith("//") else raw  # sqlite:////abs too
        if not raw or raw == "/":
            raise ValueError(f"sqlite URL {url!r} names no file (sqlite:///path/to/file)")
        return StoreUrl("sqlite", text, Path(raw).expanduser())
    return StoreUrl(scheme, text)


def spellings(accepted: tuple[str, ...]) -> str:
    """How each accepted scheme is written, for error messages."""
    examples = {
        "sqlite": "sqlite:///path/to/file",
        "memory": "memory:",
        "postgresql": "postgresql://user@host/db",
        "redis": "redis://host:6379/0",
        "file": "file:///path/to/dir",
        "solo": "solo:",
    }
    return ", ".join(examples.get(s, f"{s}://...") for s in accepted)
