"""The check every test of an old import path makes, written once: a module kept as an
alias for one release gives the very objects of the modules that now hold them."""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence


def check_alias(old: str, moved: Mapping[str, Sequence[str]]) -> None:
    """The module ``old`` gives each name of ``moved`` (new module → names) as the same
    object the new module has, and its ``__all__`` is exactly those names."""
    alias = importlib.import_module(old)
    for new, names in moved.items():
        module = importlib.import_module(new)
        for name in names:
            assert getattr(alias, name) is getattr(module, name), f"{old}.{name}"
    assert sorted(alias.__all__) == sorted(n for names in moved.values() for n in names)
