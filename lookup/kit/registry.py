"""Scheme registries: the backends of a seam, named by URL scheme and imported when asked.

A seam's package keeps ``BACKENDS = {scheme: "module:Class"}`` next to its port and opens
a store from a URL with :func:`open_backend` (each class of ``BACKENDS`` has a ``from_url``
classmethod: :class:`Backend`) — so the port never imports an adapter (nor
its driver) until a URL names it, and adding a backend is one file plus one line there.
An unknown scheme is refused with the same words as
:func:`~lookup.kit.engines.storeurl.parse_store_url`, naming the accepted ones.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any, Protocol, TypeVar

from lookup.kit.engines.storeurl import StoreUrl, parse_store_url, spellings

__all__ = ["Backend", "backend_for", "load_backend", "open_backend"]

Port_co = TypeVar("Port_co", covariant=True)


class Backend(Protocol[Port_co]):
    """What a seam's ``BACKENDS`` names: a class that opens its port from a parsed URL
    (``Backend[LinkStore]``: one that opens a link store)."""

    def from_url(self, url: StoreUrl, **options: Any) -> Port_co:
        """The store ``url`` names, with the backend's ``options``."""
        ...


def load_backend(backends: Mapping[str, str], scheme: str) -> Any:
    """The object ``backends[scheme]`` names (``"package.module:Class"``), imported now.

    An unknown scheme raises ValueError naming the registered ones.
    """
    try:
        target = backends[scheme]
    except KeyError:
        raise ValueError(
            f"no backend for scheme {scheme!r}; expected one of: {spellings(tuple(backends))}"
        ) from None
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def backend_for(backends: Mapping[str, str], url: str) -> tuple[Any, StoreUrl]:
    """The backend a store URL names, and the parsed URL to open it with.

    An unknown scheme raises ValueError naming the registered ones (nothing is imported).
    """
    parsed = parse_store_url(url, tuple(backends))
    return load_backend(backends, parsed.scheme), parsed


def open_backend(backends: Mapping[str, str], url: str, *args: Any, **options: Any) -> Any:
    """What a store URL names, opened: its backend's ``from_url(parsed, *args, **options)``.

    An unknown scheme raises ValueError naming the registered ones (nothing is imported).
    """
    found, parsed = backend_for(backends, url)
    return found.from_url(parsed, *args, **options)
