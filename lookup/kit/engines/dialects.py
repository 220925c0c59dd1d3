"""SQL written once for several engines: what a store's statements need that knows no domain.

A seam whose SQL is shared by its backends (the link store's ``links/sql.py``, the click
counts' ``clickcounts/sql.py``) writes each statement with ``?`` for a parameter and
renders it for an engine through a :class:`SqlDialect` — its own dataclass extends this
one with what else its statements spell differently. What every store spells the same
way on one engine (the placeholder, "any of a list" and how that list is passed) is
said once here, in :data:`ENGINES`. The statements run on a
:class:`Connection`: what those stores use of a DB-API connection, which sqlite3's and
psycopg's both fit (this module imports neither driver).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = [
    "ENGINES",
    "Connection",
    "Cursor",
    "Engine",
    "SqlDialect",
    "bind_placeholders",
    "executemany",
    "json_array",
]


class Cursor(Protocol):
    """What the stores use of a DB-API cursor."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def executemany(self, statement: str, rows: Iterable[Sequence[Any]], /) -> object: ...

    def close(self) -> object: ...


class Connection(Protocol):
    """What the stores use of a DB-API connection (sqlite3's and psycopg's both fit)."""

    def execute(self, statement: str, params: Sequence[Any] = ..., /) -> Cursor: ...

    def cursor(self) -> Cursor: ...


def executemany(conn: Connection, statement: str, rows: Iterable[Sequence[Any]]) -> None:
    """Run ``statement`` once per row of ``rows`` on a cursor of ``conn``, closed after."""
    with closing(conn.cursor()) as cur:
        cur.executemany(statement, rows)


def bind_placeholders(statement: str, placeholder: str) -> str:
    """``statement`` with each ``?`` spelled ``placeholder`` (``%s`` for psycopg).

    A statement with a ``%`` or with ``?`` inside a quoted literal is refused
    (ValueError): rewriting it would change what it says.
    """
    if placeholder == "?":
        return statement
    literals = statement.split("'")[1::2]
    if "%" in statement or any("?" in text for text in literals):
        raise ValueError(f"cannot rewrite the placeholders of {statement!r}")
    return statement.replace("?", placeholder)


def json_array(values: Sequence[Any]) -> str:
    """A list passed to SQLite as JSON text (read back by ``json_each``)."""
    return json.dumps(list(values))


@dataclass(frozen=True)
class Engine:
    """What every store spells the same way on one SQL engine."""

    #: How the engine's driver marks a parameter (``?`` or ``%s``).
    placeholder: str
    #: "``{column}`` is one of the list ``?``", and how that list is passed.
    any_of: str
    array: Callable[[Sequence[Any]], Any]


#: The engines the stores run on, by the name a :class:`SqlDialect` gives.
ENGINES: Mapping[str, Engine] = {
    "sqlite": Engine(
        placeholder="?", any_of="{column} IN (SELECT value FROM json_each(?))", array=json_array
    ),
    "postgresql": Engine(placeholder="%s", any_of="{column} = ANY(?)", array=list),
}


@dataclass(frozen=True)
class SqlDialect:
    """How one SQL engine spells what every shared statement may need; a store's own
    dialect adds the rest. ``name`` is one of :data:`ENGINES`."""

    name: str

    def __post_init__(self) -> None:
        if self.name not in ENGINES:
            raise ValueError(f"no SQL engine {self.name!r}; expected one of {sorted(ENGINES)}")

    @property
    def placeholder(self) -> str:
        """How the engine's driver marks a parameter (``?`` or ``%s``)."""
        return ENGINES[self.name].placeholder

    @property
    def any_of(self) -> str:
        """The condition "``{column}`` is one of the list ``?``" (see :attr:`array`)."""
        return ENGINES[self.name].any_of

    @property
    def array(self) -> Callable[[Sequence[Any]], Any]:
        """How a list is passed where :attr:`any_of` takes it."""
        return ENGINES[self.name].array

    def bind(self, statement: str) -> str:
        """``statement`` with each ``?`` spelled as this engine's placeholder."""
        return bind_placeholders(statement, self.placeholder)
