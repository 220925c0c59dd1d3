"""The link store: the shortener's source of truth, and the write path's atomic operations.

This package is the seam. Its ``__init__`` is the port — what the service, the resolver
and the scanner use — and imports no backend:

* :class:`LinkStore`, the operations; every uniqueness decision is one conditional write;
* the records a caller passes and gets (:class:`IdempotencyClaim`, :class:`CreateResult`)
  and the refusals (:class:`StoreError` and its kinds);
* :data:`BACKENDS`, the registry ``scheme → "module:Class"``, and :func:`open_link_store`,
  which imports the backend a URL names when it is called.

The backends: :mod:`.sqlite` (embedded default, one file) and :mod:`.postgres` (one
database shared by a fleet), both thin over :mod:`.sql`, which holds the statements of
both dialects, written once, and the operations in :class:`~.sql.SqlLinkStore`.

Adding a backend is one file plus one registry line: write ``links/<engine>.py`` with a
class that implements :class:`LinkStore` (a SQL engine subclasses
:class:`~.sql.SqlLinkStore` with its :class:`~.sql.Dialect` and connections), add its
scheme to :data:`BACKENDS`, and say in ``tests/contracts/test_link_store_contract.py``
how to make an empty one; the contract then runs against it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias, cast, runtime_checkable

from lookup.kit.registry import Backend as SeamBackend
from lookup.kit.registry import load_backend, open_backend
from lookup.shortener.model import Link, Status

__all__ = [
    "BACKENDS",
    "UPDATABLE",
    "Backend",
    "CreateResult",
    "Gone",
    "IdempotencyClaim",
    "IdempotencyMismatch",
    "KeyTaken",
    "LinkMissing",
    "LinkQuery",
    "LinkStore",
    "NotOwner",
    "StoreError",
    "backend",
    "open_link_store",
]

#: Each URL scheme and the class that serves it, imported when a URL names the scheme.
BACKENDS: dict[str, str] = {
    "sqlite": "lookup.shortener.links.sqlite:SqliteLinkStore",
    "postgresql": "lookup.shortener.links.postgres:PostgresLinkStore",
}

#: Columns a caller may change through :meth:`LinkStore.update`.
UPDATABLE = frozenset(
    {
        "long_url",
        "expires_at",
        "max_clicks",
        "redirect_type",
        "max_age",
        "password_hash",
        "tags",
        "status",
        "status_reason",
        "scan_verdict",
        "scan_reasons",
        "forward_query",
        "forward_path",
    }
)


class StoreError(Exception):
    """Base of the store's refusals."""


class KeyTaken(StoreError):
    """The key is already claimed (by a link or a tombstone)."""


class IdempotencyMismatch(StoreError):
    """The Idempotency-Key was already used with a different request body."""


class LinkMissing(StoreError):
    """No link has this key."""


class NotOwner(StoreError):
    """The caller does not own the link."""


class Gone(StoreError):
    """The link is a tombstone; it can no longer change."""


@dataclass(frozen=True)
class IdempotencyClaim:
    """A create's Idempotency-Key, scoped to its owner, with a digest of the request body."""

    scope: str
    key: str
    body_hash: str


@dataclass(frozen=True)
class CreateResult:
    """Either the new link and its response, or a replay of the original response."""

    response: dict[str, Any]
    link: Link | None
    replayed: bool


@dataclass(frozen=True)
class LinkQuery:
    """Which of an owner's links a listing wants, and in which order of creation.

    ``terms``: each is a lower-case piece of text the key or the destination must contain
    (any of them; a search term and its percent-encoded spelling); ``created_from`` is
    inclusive and ``created_to`` exclusive (epoch seconds); ``ascending`` lists oldest first.
    """

    tag: str | None = None
    status: Status | None = None
    terms: tuple[str, ...] = ()
    created_from: float | None = None
    created_to: float | None = None
    ascending: bool = False
    #: Only links on this short domain (``""``: the default one); None: every domain.
    domain: str | None = None


@runtime_checkable
class LinkStore(Protocol):
    """The link store's operations: every uniqueness decision is one conditional write.

    Implementations must give exactly one winner among concurrent claims of a key
    (:meth:`create` raises :class:`KeyTaken` for the others), replay or refuse a reused
    Idempotency-Key (:class:`IdempotencyMismatch`), keep tombstones forever, and admit
    exactly ``max_clicks`` clicks of a link across every process (:meth:`consume_click`).
    """

    def create(
        self,
        link: Link,
        *,
        idempotency: IdempotencyClaim | None = None,
        render: Callable[[Link], dict[str, Any]],
        actor: str | None = None,
    ) -> CreateResult:
        """Claim ``link.key`` and store the link (and its rendered response) atomically."""
        ...

    def find_replay(self, idempotency: IdempotencyClaim) -> dict[str, Any] | None:
        """The stored response of a live claim with the same body; mismatch raises."""
        ...

    def update(
        self,
        key: str,
        changes: dict[str, Any],
        *,
        actor: str | None,
        action: str = "update",
        expected_owner: str | None = None,
        check_owner: bool = False,
        allow_tombstone: bool = False,
    ) -> tuple[Link, Link]:
        """Change columns of one link, audited; returns ``(old, new)``."""
        ...

    def tombstone(
        self,
        key: str,
        status: Status,
        *,
        actor: str | None,
        reason: str | None = None,
        expected_owner: str | None = None,
        check_owner: bool = False,
    ) -> tuple[Link, Link]:
        """Turn a link into a tombstone (DELETED or EXPIRED, no URL); the key stays taken."""
        ...

    def consume_click(self, key: str, now: float) -> Link | None:
        """Spend one click of a budgeted link (one conditional write), or None if refused."""
        ...

    def expire_due(self, now: float) -> list[str]:
        """Tombstone links past their date or click budget; returns their keys."""
        ...

    def purge_idempotency(self, now: float) -> int:
        """Forget idempotency records older than the TTL; returns how many."""
        ...

    def get(self, key: str) -> Link | None:
        """The link or tombstone stored under ``key``, else the one ``key`` folds to
        (keys are case-insensitive: ``IPL-Final`` finds ``ipl-final``)."""
        ...

    def get_folded(self, folded: str) -> Link | None:
        """The link whose case-folded key is ``folded`` (``'!' + key`` for a key from
        before the case rule that answers to its exact spelling only)."""
        ...

    def exact_only_keys(self) -> list[str]:
        """Keys from before the case rule that differ only by case from an older one:
        each answers to its exact spelling only."""
        ...

    def domain_redirects(self) -> dict[str, str]:
        """Each short domain's "invalid short URL" redirect (``""``: the default domain)."""
        ...

    def set_domain_redirect(self, domain: str, url: str | None) -> None:
        """Set, or with None remove, where a missing key of ``domain`` sends a visitor."""
        ...

    def list_owner(
        self,
        owner: str,
        *,
        limit: int = 50,
        before: tuple[float, str] | None = None,
        tag: str | None = None,
        status: Status | None = None,
    ) -> list[Link]:
        """An owner's links, newest first, after the ``(created_at, key)`` cursor."""
        ...

    def iter_links(
        self, *, after: str = "", limit: int = 500, statuses: tuple[Status, ...] = (Status.ACTIVE,)
    ) -> list[Link]:
        """A page of links in key order after ``after`` (the scanner's sweep)."""
        ...

    def query_owner(
        self,
        owner: str,
        query: LinkQuery,
        *,
        limit: int = 50,
        after: tuple[float, str] | None = None,
    ) -> list[Link]:
        """An owner's links that match ``query``, by ``(created_at, key)`` in the query's
        direction, strictly after the ``after`` position."""
        ...

    def owner_keys(self, owner: str, query: LinkQuery) -> list[tuple[str, float]]:
        """``(key, created_at)`` of every link of ``owner`` that matches ``query``."""
        ...

    def get_many(self, keys: Sequence[str]) -> list[Link]:
        """The links stored under ``keys`` (in no particular order; unknown keys left out)."""
        ...

    def audit(self, key: str) -> list[dict[str, Any]]:
        """A link's change history, oldest first."""
        ...

    def token_owner(self, token_hash: str) -> tuple[str, bool] | None:
        """``(owner, revoked)`` recorded for a token's hash; None for a token never
        rotated or revoked (its owner is its own hash)."""
        ...

    def revoke_token(self, token_hash: str, owner: str, now: float) -> bool:
        """Revoke a token standing for ``owner``; False if it was revoked already."""
        ...

    def rotate_token(self, old_hash: str, new_hash: str, owner: str, now: float) -> bool:
        """In one transaction: revoke ``old_hash`` and record ``new_hash`` for ``owner``.
        Exactly one of concurrent rotations of a token wins; False for the others."""
        ...

    def defer_invalidations(self, keys: Sequence[str]) -> None:
        """Keep ``keys`` for the cache tier to invalidate later (its outbox: Redis was
        unreachable when they changed)."""
        ...

    def deferred_invalidations(self, limit: int) -> list[tuple[int, str]]:
        """Up to ``limit`` kept invalidations, oldest first: ``(id, key)``."""
        ...

    def forget_invalidations(self, ids: Sequence[int]) -> None:
        """Drop the kept invalidations ``ids`` (sent)."""
        ...

    def ping(self) -> None:
        """A cheap round trip (health probe)."""
        ...

    def counts(self) -> dict[str, int]:
        """Links by status."""
        ...

    def close(self) -> None:
        """Release connections; a later call reopens them."""
        ...


#: What :data:`BACKENDS` names: a class whose ``from_url(url, **options)`` opens a
#: :class:`LinkStore`.
Backend: TypeAlias = SeamBackend[LinkStore]


def backend(scheme: str) -> Backend:
    """The class registered for ``scheme`` in :data:`BACKENDS`, imported now (ValueError
    naming the registered schemes for another)."""
    return cast(Backend, load_backend(BACKENDS, scheme))


def open_link_store(url: str, **options: Any) -> LinkStore:
    """The link store a URL names: ``sqlite:///path/links.sqlite3`` (embedded) or
    ``postgresql://user@host:port/db`` (shared by every process of a fleet).

    ``options`` go to the backend (``idempotency_ttl_s``, ``clock``; SQLite's
    ``synchronous``, ``busy_timeout_ms``; PostgreSQL's ``pool_size``, ``pool_timeout_s``).
    An unknown scheme raises ValueError naming the registered ones.
    """
    return cast(LinkStore, open_backend(BACKENDS, url, **options))
