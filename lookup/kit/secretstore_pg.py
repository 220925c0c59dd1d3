"""Old import path of the PostgreSQL secret store, kept for one release: use
:mod:`lookup.kit.secrets.postgres` (or :func:`lookup.kit.secrets.open_secret_store`).
"""

from __future__ import annotations

from lookup.kit.secrets.postgres import PostgresSecretStore

__all__ = ["PostgresSecretStore"]
