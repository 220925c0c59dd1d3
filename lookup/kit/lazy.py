"""Lazy re-exports for package ``__init__`` files (PEP 562).

A system's ``__init__`` names its public API without importing it: the module behind a
name is imported the first time the name is used. So importing one light module
(``lookup.shortener.keys``) no longer drags in the HTTP stack, numpy and every
sibling, while ``from lookup.shortener import ShortenerService`` keeps working.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, exports: dict[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``; ``exports`` maps name → module."""

    def __getattr__(name: str) -> Any:
        try:
            module = exports[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        if module == package:  # a submodule named in the table: the module itself
            value: Any = importlib.import_module(f"{package}.{name}")
        else:
            value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)  # later lookups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted(set(exports) | set(vars(sys.modules[package])))

    return __getattr__, __dir__
