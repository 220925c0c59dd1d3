"""The shortener's domain operations: create, read, change, tombstone and admit links.

:class:`ShortenerService` takes typed commands (:class:`CreateRequest`,
:class:`LinkPatch`) — the HTTP edge (:mod:`~lookup.shortener.parse`) turns JSON into
them — and raises the shared domain errors of :mod:`lookup.errors`
(``Conflict("ALIAS_TAKEN")``, ``NotFound``, ``Gone("LINK_GONE")``, ...), which the
server maps to HTTP in one place. It knows nothing of HTTP, CSV, analytics or the
scanner; everything it talks to is handed in at construction
(:mod:`~lookup.shortener.app` wires them):

* ``store`` — a :class:`~lookup.shortener.links.LinkStore` (the write path's atomic
  operations); ``minter`` mints generated keys; ``resolver`` is the read path, purged
  after every change;
* ``render`` — the create response body for a link (kept with an Idempotency-Key so a
  replay answers byte-for-byte the same);
* ``on_click`` — called by the redirect with a :class:`~lookup.shortener.model.ClickContext`
  for every redirect it serves (analytics' bounded buffer; must not block; if it raises,
  the error is counted and the redirect goes on);
* ``notify`` — ``fn(event, link)`` after ``created``, ``updated``, ``retargeted``, ``deleted``,
  ``disabled``, ``enabled`` and ``expired`` commits (the scanner listens). Errors are
  logged, never raised.
"""

from __future__ import annotations

import hmac
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from lookup import errors
from lookup.shortener.keys import KeyMinter, storage_key
from lookup.shortener.links import (
    Gone,
    IdempotencyClaim,
    IdempotencyMismatch,
    KeyTaken,
    LinkMissing,
    LinkStore,
    NotOwner,
)
from lookup.shortener.model import (
    DEFAULT_PERMANENT_MAX_AGE,
    SCAN_VERDICTS,
    ClickContext,
    Link,
    Outcome,
    Status,
    effective_status,
    verdict,
)
from lookup.shortener.passwords import hash_password, verify_password
from lookup.shortener.resolver import STORE_LANE, Resolver

log = logging.getLogger("lookup.shortener")


class _Unset:
    """The value of a :class:`LinkPatch` field the request did not mention."""

    _instance: _Unset | None = None

    def __new__(cls) -> _Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Any = _Unset()


@dataclass(frozen=True)
class CreateRequest:
    """A validated create command."""

    long_url: str
    alias: str | None = None
    expires_at: float | None = None
    max_clicks: int | None = None
    password: str | None = None
    redirect_type: int = 302
    max_age: int | None = None
    tags: tuple[str, ...] = ()
    forward_query: bool = True
    forward_path: bool = False
    #: The short domain the link lives on (``""``: the default one).
    domain: str = ""


@dataclass(frozen=True)
class LinkPatch:
    """A validated owner change; a field left :data:`UNSET` is not changed.

    ``max_age`` is the explicit ``maxAge`` of the request (None when not given); ``status``
    is ACTIVE or DISABLED.
    """

    long_url: Any = UNSET
    tags: Any = UNSET
    expires_at: Any = UNSET
    max_clicks: Any = UNSET
    password: Any = UNSET
    redirect_type: Any = UNSET
    max_age: int | None = None
    status: Any = UNSET
    forward_query: Any = UNSET
    forward_path: Any = UNSET


@dataclass(frozen=True)
class Created:
    """The response body of a create and whether it replays an earlier one."""

    body: dict[str, Any]
    replayed: bool
    link: Link | None


def _link_gone(key: str, status: Status, *, already: bool = False) -> errors.Gone:
    word = "already " if already else ""
    return errors.Gone(f"the link {key!r} is {word}{status.value.lower()}", code="LINK_GONE")


def not_found(key: str) -> errors.NotFound:
    """The refusal for a key no link ever had."""
    return errors.NotFound(f"no link has the key {key!r}", code="NOT_FOUND")


def _idempotency_reused() -> errors.Unprocessable:
    return errors.Unprocessable(
        "this Idempotency-Key was already used with a different request body",
        code="IDEMPOTENCY_KEY_REUSED",
    )


class ShortenerService:
    """The URL shortener's domain operations over one link store."""

    def __init__(
        self,
        store: LinkStore,
        minter: KeyMinter,
        resolver: Resolver,
        *,
        render: Callable[[Link], dict[str, Any]],
        ip_key: bytes,
        clock: Callable[[], float] = time.time,
        on_click: Callable[[ClickContext], object] | None = None,
        notify: Callable[[str, Link], None] | None = None,
    ) -> None:
        self.store = store
        self.minter = minter
        self.resolver = resolver
        self.render = render
        self.clock = clock
        self._ip_key = ip_key
        # what the hook returns is not used (the analytics buffer says whether it kept the click)
        self.on_click: Callable[[ClickContext], object] = on_click or (lambda ctx: None)
        self._notify_hook = notify
        self.clicks_emitted = 0
        self.click_hook_errors = 0
        self.generated_key_collisions = 0
        self.created = 0

    def close(self) -> None:
        """Release the database connections (they reopen on next use)."""
        self.minter.allocator.close()
        self.store.close()

    # -- shared helpers ----------------------------------------------------------------

    def effective_status(self, link: Link, now: float | None = None) -> Status:
        """The status a client sees: an ACTIVE link past its date or clicks is EXPIRED."""
        return effective_status(link, self.clock() if now is None else now)

    def _notify(self, event: str, link: Link) -> None:
        if self._notify_hook is None:
            return
        try:
            self._notify_hook(event, link)
        except Exception:
            log.exception("shortener listener failed on %s %s", event, link.key)

    def hash_ip(self, ip: str | None) -> str | None:
        """A keyed hash of a client IP (for analytics and audit; the raw IP is not kept)."""
        if ip is None:
            return None
        digest = hmac.new(self._ip_key, ip.encode("utf-8", "replace"), "sha256")
        return digest.hexdigest()[:32]

    # -- create ------------------------------------------------------------------------

    def replay(self, claim: IdempotencyClaim) -> Created | None:
        """The original answer to a create with this Idempotency-Key and body, if any.

        Raises ``Unprocessable("IDEMPOTENCY_KEY_REUSED")`` (422) when the key came with
        another body. Keys are scoped per owner and remembered for 24 hours.
        """
        try:
            replay = self.store.find_replay(claim)
        except IdempotencyMismatch:
            raise _idempotency_reused() from None
        return None if replay is None else Created(replay, True, None)

    def create(
        self,
        req: CreateRequest,
        *,
        owner: str | None = None,
        claim: IdempotencyClaim | None = None,
    ) -> Created:
        """Create a link; blocking (run it in a worker thread on a loop).

        Raises ``InvalidInput("INVALID_EXPIRY")`` for a date in the past, ``Conflict(
        "ALIAS_TAKEN")`` (409) for a taken alias, ``Unprocessable(
        "IDEMPOTENCY_KEY_REUSED")`` (422) when ``claim`` lost to another body.
        """
        now = self.clock()
        if req.expires_at is not None and req.expires_at <= now:
            raise errors.InvalidInput("expiresAt is in the past", code="INVALID_EXPIRY")
        password_hash = hash_password(req.password) if req.password is not None else None
        for _attempt in range(10):
            if req.alias is not None:
                ident, key = None, req.alias
            else:
                ident, key = self.minter.mint()
            key = storage_key(key, req.domain)
            link = Link(
                key=key,
                id=ident,
                alias=req.alias is not None,
                long_url=req.long_url,
                owner=owner,
                created_at=now,
                updated_at=now,
                expires_at=req.expires_at,
                max_clicks=req.max_clicks,
                redirect_type=req.redirect_type,
                max_age=req.max_age,
                password_hash=password_hash,
                tags=req.tags,
                forward_query=req.forward_query,
                forward_path=req.forward_path,
            )
            try:
                result = self.store.create(link, idempotency=claim, render=self.render, actor=owner)
            except KeyTaken:
                if req.alias is not None:
                    raise errors.Conflict(
                        f"the alias {req.alias!r} is already taken", code="ALIAS_TAKEN"
                    ) from None
                # A key minted before keys were lower case may fold onto a new one; else
                # two processes shared a lease range: count it, take the next id.
                self.generated_key_collisions += 1
                log.warning("generated key %s was already taken; minting the next", key)
                continue
            except IdempotencyMismatch:
                raise _idempotency_reused() from None
            if result.replayed:
                return Created(result.response, True, None)
            self.created += 1
            self.resolver.invalidate(key)  # drops a negative-cache entry for an alias
            self.resolver.remember(link)
            self._notify("created", link)
            return Created(result.response, False, link)
        raise errors.Unavailable("could not mint a free key; try again", code="KEY_SPACE_CONFLICT")

    # -- read --------------------------------------------------------------------------

    def get(self, key: str) -> Link:
        """The stored link (or tombstone) for ``key``; ``NotFound`` if never created."""
        link = self.store.get(key)
        if link is None:
            raise not_found(key)
        return link

    def with_rules(self, link: Link) -> Link:
        """``link`` with its redirect rules from the rule store (the owner's view of it)."""
        store = self.resolver.rules
        rules = () if store is None or link.is_tombstone else store.get(link.key)
        return replace(link, rules=rules) if rules else link

    def require_owner(self, key: str, owner: str | None) -> Link:
        """The link if ``owner`` owns it: Unauthorized without one, NotFound, else Forbidden."""
        if owner is None:
            raise errors.Unauthorized(
                "send Authorization: Bearer <owner token>", code="UNAUTHORIZED"
            )
        link = self.get(key)
        if link.owner is None or not hmac.compare_digest(link.owner, owner):
            raise errors.Forbidden("only the link's owner may do this", code="FORBIDDEN")
        return link

    def owner_links(
        self,
        owner: str,
        *,
        limit: int = 50,
        before: tuple[float, str] | None = None,
        tag: str | None = None,
        status: Status | None = None,
    ) -> tuple[list[Link], bool]:
        """Up to ``limit`` of an owner's links (newest first, after ``before``) and
        whether more follow."""
        links = self.store.list_owner(owner, limit=limit + 1, before=before, tag=tag, status=status)
        return links[:limit], len(links) > limit

    def audit(self, key: str, owner: str | None) -> list[dict[str, Any]]:
        """A link's change history (owner only), oldest first."""
        return self.store.audit(self.require_owner(key, owner).key)

    # -- change ------------------------------------------------------------------------

    def refuse_if_gone(self, link: Link) -> None:
        """``Gone("LINK_GONE")`` for a deleted or expired link: it can no longer change."""
        status = self.effective_status(link)
        if status in (Status.DELETED, Status.EXPIRED):
            raise _link_gone(link.key, status)

    def update(self, link: Link, patch: LinkPatch, *, owner: str | None) -> Link:
        """Apply an owner's change to ``link`` (as read by :meth:`require_owner`): retarget
        (a new scan), tags, expiry, clicks, password, redirect type, or status ACTIVE /
        DISABLED. Audited; every cache layer is purged at once."""
        key = link.key
        changes: dict[str, Any] = {}
        action = "update"
        if patch.long_url is not UNSET:
            changes["long_url"] = patch.long_url
            if patch.long_url != link.long_url:
                if link.status is Status.DISABLED and link.status_reason != "owner":
                    # Else a clean scan of the new destination would bring it back to life:
                    # a bad link could hop to a decoy and back. It waits for the scanner to
                    # find its own destination clean again, or is deleted.
                    raise errors.Conflict(
                        "a link the safety scanner disabled keeps its destination: delete "
                        "it and create a new one",
                        code="DISABLED_BY_SCANNER",
                    )
                changes["scan_verdict"] = "PENDING"
                changes["scan_reasons"] = ()
                action = "retarget"
        if patch.tags is not UNSET:
            changes["tags"] = patch.tags
        for switch in ("forward_query", "forward_path"):
            if getattr(patch, switch) is not UNSET:
                changes[switch] = getattr(patch, switch)
        if patch.expires_at is not UNSET:
            changes["expires_at"] = patch.expires_at
        if patch.max_clicks is not UNSET:
            changes["max_clicks"] = patch.max_clicks
        if patch.password is not UNSET:
            changes["password_hash"] = (
                None if patch.password is None else hash_password(patch.password)
            )
        if patch.redirect_type is not UNSET:
            changes["redirect_type"] = patch.redirect_type
            if patch.redirect_type == 302:
                changes["max_age"] = None
            elif link.max_age is None:
                changes["max_age"] = DEFAULT_PERMANENT_MAX_AGE
        if patch.max_age is not None:
            changes["max_age"] = patch.max_age
        if patch.status is not UNSET and patch.status is not link.status:
            if patch.status is Status.ACTIVE and link.status_reason != "owner":
                raise errors.Conflict(
                    "this link was disabled by the safety scanner and cannot be re-enabled",
                    code="DISABLED_BY_SCANNER",
                )
            changes["status"] = patch.status
            changes["status_reason"] = "owner" if patch.status is Status.DISABLED else None
            if action == "update":
                action = "disable" if patch.status is Status.DISABLED else "enable"
        try:
            _old, new = self.store.update(
                key, changes, actor=owner, action=action, expected_owner=owner, check_owner=True
            )
        except (LinkMissing, NotOwner, Gone) as exc:  # raced with another change
            raise self._store_refusal(exc, key) from None
        self.resolver.invalidate(key)
        # any other change (tags, expiry, budget, ...) is "updated" (webhooks' link.updated)
        event = {"retarget": "retargeted", "disable": "disabled", "enable": "enabled"}
        self._notify(event.get(action, "updated"), new)
        return new

    def delete(self, key: str, *, owner: str | None) -> Link:
        """Tombstone an owner's link: 410 from the next click on, key never reissued."""
        link = self.require_owner(key, owner)
        key = link.key  # as stored: ``key`` may be another spelling of it
        if link.is_tombstone:
            raise _link_gone(key, link.status, already=True)
        try:
            _old, new = self.store.tombstone(
                key,
                Status.DELETED,
                actor=owner,
                reason="owner",
                expected_owner=owner,
                check_owner=True,
            )
        except (LinkMissing, NotOwner, Gone) as exc:
            raise self._store_refusal(exc, key) from None
        self.resolver.invalidate(key)
        self._notify("deleted", new)
        return new

    def disable(self, key: str, reason: str, *, actor: str = "scanner") -> Link:
        """Disable a link for safety (the scanner's verdict): warning page from the next click."""
        try:
            _old, new = self.store.update(
                key,
                {"status": Status.DISABLED, "status_reason": f"{actor}: {reason}"},
                actor=actor,
                action="disable",
            )
        except (LinkMissing, Gone) as exc:
            raise self._store_refusal(exc, key) from None
        self.resolver.invalidate(key)
        self._notify("disabled", new)
        return new

    def enable(self, key: str, *, actor: str = "scanner") -> Link:
        """Lift a safety disable (e.g. a rescan found the page clean again)."""
        try:
            _old, new = self.store.update(
                key, {"status": Status.ACTIVE, "status_reason": None}, actor=actor, action="enable"
            )
        except (LinkMissing, Gone) as exc:
            raise self._store_refusal(exc, key) from None
        self.resolver.invalidate(key)
        self._notify("enabled", new)
        return new

    def set_scan_verdict(
        self,
        key: str,
        verdict_name: str,
        *,
        reasons: tuple[str, ...] | list[str] = (),
        actor: str = "scanner",
    ) -> Link:
        """Record the scanner's verdict and the reasons behind it (the rules and blocklist
        entries that fired, shown wherever the verdict is); MALICIOUS also disables the
        link at once."""
        if verdict_name not in SCAN_VERDICTS:
            raise ValueError(f"unknown verdict {verdict_name!r}")
        changes: dict[str, Any] = {"scan_verdict": verdict_name, "scan_reasons": tuple(reasons)}
        if verdict_name == "MALICIOUS":
            changes.update(status=Status.DISABLED, status_reason=f"{actor}: malicious")
        try:
            _old, new = self.store.update(key, changes, actor=actor, action="scan")
        except (LinkMissing, Gone) as exc:
            raise self._store_refusal(exc, key) from None
        self.resolver.invalidate(key)
        if verdict_name == "MALICIOUS":
            self._notify("disabled", new)
        return new

    @staticmethod
    def _store_refusal(exc: Exception, key: str) -> errors.WorkbenchError:
        if isinstance(exc, LinkMissing):
            return not_found(key)
        if isinstance(exc, NotOwner):
            return errors.Forbidden("only the link's owner may do this", code="FORBIDDEN")
        return errors.Gone(f"the link {key!r} is gone", code="LINK_GONE")

    # -- background --------------------------------------------------------------------

    def sweep(self) -> int:
        """Tombstone links past their expiry or click budget, forget old idempotency
        records; returns how many links were tombstoned. Redirects never wait for this."""
        now = self.clock()
        keys = self.store.expire_due(now)
        for key in keys:
            self.resolver.invalidate(key)
        self.store.purge_idempotency(now)
        for key in keys:
            link = self.store.get(key)
            if link is not None:
                self._notify("expired", link)
        return len(keys)

    # -- owner tokens ------------------------------------------------------------------

    def owner_of(self, token_hash: str | None) -> str | None:
        """The owner a token (by its hash) stands for: its own hash unless it was rotated
        from another; 401 ``TOKEN_REVOKED`` for a revoked one. Read from the store on every
        call, so a revocation holds at once in every process that shares it."""
        if token_hash is None:
            return None
        known = self.store.token_owner(token_hash)
        if known is None:
            return token_hash
        owner, revoked = known
        if revoked:
            raise errors.Unauthorized("this owner token has been revoked", code="TOKEN_REVOKED")
        return owner

    def revoke_token(self, token_hash: str) -> str:
        """Revoke a token at once; returns the owner it stood for (their links stay)."""
        owner = self.owner_of(token_hash)
        assert owner is not None
        if not self.store.revoke_token(token_hash, owner, self.clock()):
            raise errors.Unauthorized("this owner token has been revoked", code="TOKEN_REVOKED")
        return owner

    def rotate_token(self, token_hash: str, new_hash: str) -> str:
        """Make ``new_hash`` stand for the owner of ``token_hash`` and revoke the latter, in
        one transaction (a token rotates once); returns the owner."""
        owner = self.owner_of(token_hash)
        assert owner is not None
        if not self.store.rotate_token(token_hash, new_hash, owner, self.clock()):
            raise errors.Unauthorized("this owner token has been revoked", code="TOKEN_REVOKED")
        return owner

    # -- redirect ----------------------------------------------------------------------

    async def admit(self, link: Link, now: float) -> tuple[Outcome, Link]:
        """Final check before a redirect is served. Links with ``maxClicks`` are admitted
        by one conditional UPDATE in the store (exactly N clicks succeed), in a worker
        thread (:data:`~lookup.shortener.resolver.STORE_LANE`); others need no I/O."""
        if link.max_clicks is None:
            return Outcome.REDIRECT, link
        return await STORE_LANE.run(self._admit, link, now)

    def _admit(self, link: Link, now: float) -> tuple[Outcome, Link]:
        admitted = self.store.consume_click(link.key, now)
        if admitted is not None:
            if link.rules:  # the store's row has none: keep what the cache had
                admitted = replace(admitted, rules=link.rules)
            self.resolver.remember(admitted)
            return Outcome.REDIRECT, admitted
        fresh = self.store.get(link.key)
        self.resolver.invalidate(link.key)  # the shared tier too: a store call
        if fresh is None:
            return Outcome.NOT_FOUND, link
        if link.rules:
            fresh = replace(fresh, rules=link.rules)
        self.resolver.remember(fresh)
        outcome = verdict(fresh, now)
        if outcome in (Outcome.REDIRECT, Outcome.PASSWORD):  # raced: budget just ran out
            outcome = Outcome.EXPIRED
        return outcome, fresh

    def check_password(self, link: Link, password: str) -> bool:
        """Whether ``password`` opens ``link`` (scrypt; blocking)."""
        return bool(link.password_hash) and verify_password(password, link.password_hash or "")

    def emit_click(self, ctx: ClickContext) -> None:
        """Hand a click to ``on_click``; never raises into the redirect."""
        try:
            self.on_click(ctx)
            self.clicks_emitted += 1
        except Exception:
            self.click_hook_errors += 1
            if self.click_hook_errors <= 10:
                log.exception("the click hook failed; the redirect is served anyway")

    # -- observability -----------------------------------------------------------------

    def counters(self) -> dict[str, Any]:
        """The service's own counters: clicks handed on, links by status, creates, leases."""
        return {
            "clicks": {"emitted": self.clicks_emitted, "hookErrors": self.click_hook_errors},
            "links": self.store.counts(),
            "created": self.created,
            "generatedKeyCollisions": self.generated_key_collisions,
            "idLeases": self.minter.allocator.leases_taken,
        }


__all__ = [
    "UNSET",
    "CreateRequest",
    "Created",
    "LinkPatch",
    "ShortenerService",
    "not_found",
]
