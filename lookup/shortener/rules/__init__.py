"""Redirect rules of links (issue 27 item 2): the seam that keeps them, and its port.

The rules live in a table of their own, ``link_rules`` (one row per link with rules: the
ordered list as JSON), beside the links in the same database — the embedded SQLite file or
the fleet's PostgreSQL — and never as columns of ``links``. The redirect does not read
them: the resolver loads a link's rules with the link, on a cache miss only, and caches
them as part of the :class:`~lookup.shortener.model.Link` (``Link.rules``), so a cached
redirect of a link with rules costs no store read, and a change of its rules drops every
cached copy exactly as a change of the link does.

This ``__init__`` is the port: :class:`RuleStore`, :data:`BACKENDS` (``scheme →
"module:Class"``) and :func:`open_rule_store`; it imports no backend. The model, the
parser and the routes are :mod:`.model`, :mod:`.parse`, :mod:`.http`.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from lookup.kit.registry import open_backend
from lookup.shortener.rules.model import Rule

__all__ = ["BACKENDS", "RuleStore", "open_rule_store"]

#: Each URL scheme and the class that serves it, imported when a URL names the scheme.
BACKENDS: dict[str, str] = {
    "sqlite": "lookup.shortener.rules.sqlite:SqliteRuleStore",
    "postgresql": "lookup.shortener.rules.postgres:PostgresRuleStore",
}


@runtime_checkable
class RuleStore(Protocol):
    """Where each link's ordered rules are kept."""

    def get(self, key: str) -> tuple[Rule, ...]:
        """The rules of ``key`` in order; () when it has none."""
        ...

    def put(self, key: str, rules: tuple[Rule, ...], now: float) -> None:
        """Replace the rules of ``key`` (an empty tuple removes them)."""
        ...

    def keys_with_rules(self, keys: list[str]) -> set[str]:
        """Which of ``keys`` have rules."""
        ...

    def ping(self) -> None:
        """Raise when the store cannot answer."""
        ...

    def close(self) -> None:
        """Let go of the connections (they reopen on next use)."""
        ...


def open_rule_store(url: str, **options: Any) -> RuleStore:
    """The rule store a URL names (``sqlite:///…/links.sqlite3``, ``postgresql://…``)."""
    return open_backend(BACKENDS, url, **options)  # type: ignore[no-any-return]
