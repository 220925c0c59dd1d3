"""Case-insensitive keys and short domains in the SQL link store (issue 27, items 3 and 6).

The ``links`` table carries two columns for them:

* ``fold`` — the key as every spelling finds it: ``lower(key)`` (a key on another domain
  is stored as ``key@domain``, so the fold holds the domain too). A unique index on it
  makes the claim of ``IPL-Final`` fail while ``ipl-final`` is taken: one conditional
  insert still decides, whatever the case.
* ``domain`` — the short domain of the link (``""``: the default one), for listings.

**Links from before the rule.** On open, rows without a fold get one: for each group of
keys that fold alike, the oldest row (then the smallest key) takes ``lower(key)`` and
answers to every spelling; each younger one takes ``'!' || key``, a value no spelling
folds to, so it keeps answering to its exact spelling only (:meth:`get` tries the exact
key first). Nothing is renamed — click counts, audit rows and other tables keyed by the
stored key stay attached. The store reports those exact-only keys
(:meth:`FoldedLinks.exact_only_keys`); the resolver caches them under ``'!' || key``.

``domain_redirects`` holds Shlink's "invalid short URL redirect" per domain: where a
visitor goes for a key that is missing, expired or deleted on that domain.
"""

from __future__ import annotations

import logging
from abc import abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

from lookup.kit.engines.dialects import Connection, SqlDialect

log = logging.getLogger("lookup.shortener.links")

#: The prefix of a fold that only its exact spelling reaches (no key starts with it).
EXACT_ONLY = "!"

#: Columns the case rule and the domains added (their definitions per engine).
FOLD_COLUMNS = {"fold": "TEXT", "domain": "TEXT NOT NULL DEFAULT ''"}

#: What the rule needs once its columns exist (``{real}``: the engine's float type).
FOLD_SCHEMA = """
CREATE UNIQUE INDEX IF NOT EXISTS links_by_fold ON links(fold);
CREATE TABLE IF NOT EXISTS domain_redirects (
    domain       TEXT PRIMARY KEY,
    invalid_url  TEXT NOT NULL,
    updated_at   {real} NOT NULL
);
"""

#: Give every row without a fold its fold: the oldest of each group of keys that fold
#: alike takes ``lower(key)`` (unless a row with a fold has it already), the others
#: ``'!' || key``.
FILL_FOLDS = (
    "UPDATE links SET fold = CASE WHEN w.rn = 1 THEN lower(links.key)"
    f" ELSE '{EXACT_ONLY}' || links.key END"
    " FROM (SELECT key, row_number() OVER (PARTITION BY lower(key)"
    " ORDER BY CASE WHEN fold IS NULL THEN 1 ELSE 0 END, created_at, key) AS rn"
    " FROM links WHERE lower(key) IN (SELECT lower(key) FROM links WHERE fold IS NULL)) AS w"
    " WHERE links.key = w.key AND links.fold IS NULL"
)
#: Whether any row still needs its fold (the index on ``fold`` answers it).
NEEDS_FOLDS = "SELECT 1 FROM links WHERE fold IS NULL LIMIT 1"


class DomainSql:
    """The statements of the case rule and the domains, for one dialect."""

    def __init__(self, dialect: SqlDialect, columns: str) -> None:
        b = dialect.bind
        self.by_key_or_fold = b(
            f"SELECT {columns} FROM links WHERE key = ?"
            f" UNION ALL SELECT {columns} FROM links WHERE fold = ?"
        )
        self.by_fold = b(f"SELECT {columns} FROM links WHERE fold = ?")
        self.exact_only = (
            f"SELECT key FROM links WHERE substr(fold, 1, 1) = '{EXACT_ONLY}' ORDER BY key"
        )
        self.redirects = "SELECT domain, invalid_url FROM domain_redirects ORDER BY domain"
        self.set_redirect = b(
            "INSERT INTO domain_redirects (domain, invalid_url, updated_at) VALUES (?, ?, ?)"
            " ON CONFLICT (domain) DO UPDATE SET invalid_url = excluded.invalid_url,"
            " updated_at = excluded.updated_at"
        )
        self.drop_redirect = b("DELETE FROM domain_redirects WHERE domain = ?")


def fill_folds(conn: Connection) -> list[str]:
    """Fold the rows from before the case rule (a no-op when none is left); returns the
    keys that now answer to their exact spelling only, and logs them."""
    if conn.execute(NEEDS_FOLDS).fetchone() is None:
        return []
    conn.execute(FILL_FOLDS)
    keys = [
        str(r[0])
        for r in conn.execute(
            f"SELECT key FROM links WHERE substr(fold, 1, 1) = '{EXACT_ONLY}' ORDER BY key"
        ).fetchall()
    ]
    if keys:
        log.warning(
            "%d short keys differ only by case from an older key; each keeps answering to "
            "its exact spelling only: %s",
            len(keys),
            ", ".join(keys[:20]) + (" …" if len(keys) > 20 else ""),
        )
    return keys


def pick(rows: Sequence[Sequence[Any]], key: str) -> Sequence[Any] | None:
    """Of the rows found by exact key or by fold, the exact one first."""
    for row in rows:
        if row[0] == key:
            return row
    return rows[0] if rows else None


class FoldedLinks:
    """The link store's operations for case-insensitive keys and domains (mixed into
    :class:`~lookup.shortener.links.sql.SqlLinkStore`)."""

    domain_sql: DomainSql
    clock: Any

    @abstractmethod
    def _read(self) -> AbstractContextManager[Connection]: ...

    @abstractmethod
    def _write(self) -> AbstractContextManager[Connection]: ...

    def exact_only_keys(self) -> list[str]:
        """Keys from before the case rule that only their exact spelling reaches."""
        with self._read() as conn:
            return [str(r[0]) for r in conn.execute(self.domain_sql.exact_only).fetchall()]

    def domain_redirects(self) -> dict[str, str]:
        """Each domain's "invalid short URL" redirect (``""``: the default domain)."""
        with self._read() as conn:
            rows = conn.execute(self.domain_sql.redirects).fetchall()
        return {str(d): str(u) for d, u in rows}

    def set_domain_redirect(self, domain: str, url: str | None) -> None:
        """Set (or, with None, remove) where a missing key of ``domain`` sends a visitor."""
        with self._write() as conn:
            if url is None:
                conn.execute(self.domain_sql.drop_redirect, (domain,))
            else:
                conn.execute(self.domain_sql.set_redirect, (domain, url, self.clock()))
