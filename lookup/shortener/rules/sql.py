"""The rule store in SQL, written once for SQLite and PostgreSQL (no driver here).

One table, ``link_rules``: a row per link that has rules, holding the ordered list as
JSON. Replacing a link's rules is one upsert (or one delete for an empty list), so a
reader never sees half a list.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from contextlib import AbstractContextManager
from dataclasses import dataclass

from lookup.kit.engines.dialects import Connection, SqlDialect
from lookup.shortener.rules.model import Rule, decode_rules, encode_rules

__all__ = ["RuleDialect", "RuleSql", "SqlRuleStore"]


@dataclass(frozen=True)
class RuleDialect(SqlDialect):
    """What the rule statements spell per engine: the JSON column and how to read it."""

    json_type: str = "TEXT"
    json_value: str = "?"
    json_text: str = "rules"


_SCHEMA = """
CREATE TABLE IF NOT EXISTS link_rules (
    key        TEXT PRIMARY KEY,
    rules      {json_type} NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL
);
"""


class RuleSql:
    """Every statement of the rule store, rendered once for one dialect."""

    def __init__(self, dialect: RuleDialect) -> None:
        self.dialect = dialect
        self.schema = _SCHEMA.format(json_type=dialect.json_type)
        bind = dialect.bind
        self.get = bind(f"SELECT {dialect.json_text} FROM link_rules WHERE key = ?")
        self.put = bind(
            "INSERT INTO link_rules (key, rules, updated_at) "
            f"VALUES (?, {dialect.json_value}, ?) "
            "ON CONFLICT (key) DO UPDATE SET rules = excluded.rules, "
            "updated_at = excluded.updated_at"
        )
        self.delete = bind("DELETE FROM link_rules WHERE key = ?")
        self.some = bind("SELECT key FROM link_rules WHERE " + dialect.any_of.format(column="key"))
        self.ping = "SELECT 1"


class SqlRuleStore(ABC):
    """The rule store's operations over any engine a :class:`RuleDialect` describes."""

    sql: RuleSql

    @abstractmethod
    def _read(self) -> AbstractContextManager[Connection]: ...

    @abstractmethod
    def _write(self) -> AbstractContextManager[Connection]: ...

    def get(self, key: str) -> tuple[Rule, ...]:
        """The rules of ``key`` in order; () when it has none."""
        with self._read() as conn:
            row = conn.execute(self.sql.get, (key,)).fetchone()
        if row is None:
            return ()
        return decode_rules(json.loads(row[0]))

    def put(self, key: str, rules: tuple[Rule, ...], now: float) -> None:
        """Replace the rules of ``key`` in one statement (none: delete its row)."""
        with self._write() as conn:
            if rules:
                text = json.dumps(encode_rules(rules), separators=(",", ":"))
                conn.execute(self.sql.put, (key, text, now))
            else:
                conn.execute(self.sql.delete, (key,))

    def keys_with_rules(self, keys: list[str]) -> set[str]:
        """Which of ``keys`` have rules (one statement)."""
        if not keys:
            return set()
        with self._read() as conn:
            rows = conn.execute(self.sql.some, (self.sql.dialect.array(keys),)).fetchall()
        return {row[0] for row in rows}

    def ping(self) -> None:
        """Raise when the store cannot answer."""
        with self._read() as conn:
            conn.execute(self.sql.ping).fetchone()
