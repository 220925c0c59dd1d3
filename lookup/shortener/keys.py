"""Short keys: minted from leased ids through a keyed permutation, or claimed as aliases.

**Generated keys** are exactly :data:`KEY_LENGTH` (7) base62 characters: the next id
from an :class:`~lookup.kit.idblocks.IdAllocator` lease goes through a secret
:class:`~lookup.kit.ids.FeistelPermutation` of ``[0, 62**7)`` and is base62-encoded
with left padding. Distinct ids always give distinct keys, so no uniqueness check is
needed, and consecutive ids give unrelated keys (volume is not leaked, neighbours
cannot be enumerated). ``key → id`` inverts the permutation.

**Custom aliases** follow one rule that keeps the two namespaces disjoint:

* 3 to 64 characters from ``A-Z a-z 0-9 - _``, starting with a letter or digit;
* an alias made only of letters and digits must not be exactly 7 characters long
  (that shape belongs to generated keys) — ``ipl2026`` is refused, ``ipl-2026`` and
  ``ipl20266`` are fine;
* reserved words (routes of this server and words a phisher would love, such as
  ``login`` or ``admin``) are refused whatever their case.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from lookup.kit.idblocks import IdAllocator
from lookup.kit.ids import FeistelPermutation, decode_base62, encode_base62, is_base62

KEY_LENGTH = 7
KEY_SPACE = 62**KEY_LENGTH
ALIAS_MIN, ALIAS_MAX = 3, 64

#: Words that can never become a short key (compared case-insensitively). Routes of
#: every subsystem, plus names that would make a convincing phishing link.
RESERVED_WORDS: frozenset[str] = frozenset(
    {
        "v1",
        "v2",
        "api",
        "admin",
        "administrator",
        "root",
        "login",
        "logout",
        "signin",
        "signup",
        "register",
        "account",
        "accounts",
        "auth",
        "oauth",
        "sso",
        "password",
        "reset",
        "verify",
        "billing",
        "pay",
        "payment",
        "checkout",
        "support",
        "help",
        "docs",
        "redoc",
        "openapi",
        "static",
        "assets",
        "public",
        "healthz",
        "health",
        "status",
        "metrics",
        "search",
        "suggest",
        "places",
        "map",
        "crawl",
        "index",
        "stats",
        "links",
        "link",
        "dashboard",
        "app",
        "www",
        "mail",
        "about",
        "terms",
        "privacy",
        "security",
        "settings",
        "_stcore",
        "favicon",
        "robots",
        "sitemap",
        "well-known",
        "preview",
        "qr",
        "new",
        "edit",
        "delete",
        "shortener",
        "lookup",
    }
)

#: A path segment that could be a key or an alias (the redirect route only matches these).
KEY_SHAPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
_ALIAS_SHAPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")


class AliasRejected(ValueError):
    """A custom alias the service will not accept; ``code`` is the API error code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def is_generated_shape(key: str) -> bool:
    """True for exactly seven base62 characters — the shape only generated keys have."""
    return len(key) == KEY_LENGTH and is_base62(key)


class ReservedWords:
    """The reserved-word set, extendable at startup with the routes other systems mount."""

    def __init__(self, words: Iterable[str] = RESERVED_WORDS) -> None:
        self._words = {w.lower() for w in words}

    def add(self, words: Iterable[str]) -> None:
        """Reserve more words (e.g. single-segment routes found on the app at startup)."""
        self._words.update(w.lower() for w in words if w)

    def __contains__(self, word: object) -> bool:
        return isinstance(word, str) and word.lower() in self._words

    def __len__(self) -> int:
        return len(self._words)


def validate_alias(alias: object, reserved: ReservedWords) -> str:
    """Return ``alias`` if the alias rule allows it, else raise :class:`AliasRejected`."""
    if not isinstance(alias, str):
        raise AliasRejected("INVALID_ALIAS", "customAlias must be a string")
    if not ALIAS_MIN <= len(alias) <= ALIAS_MAX:
        raise AliasRejected(
            "INVALID_ALIAS", f"customAlias must be {ALIAS_MIN} to {ALIAS_MAX} characters long"
        )
    if not _ALIAS_SHAPE.fullmatch(alias):
        raise AliasRejected(
            "INVALID_ALIAS",
            "customAlias may use only letters, digits, '-' and '_', and must start with a "
            "letter or digit",
        )
    if is_generated_shape(alias):
        raise AliasRejected(
            "INVALID_ALIAS",
            f"an alias of exactly {KEY_LENGTH} letters and digits looks like a generated key; "
            "add a '-' or '_', or make it shorter or longer",
        )
    if alias in reserved:
        raise AliasRejected("RESERVED_ALIAS", f"{alias!r} is a reserved word")
    return alias


class KeyMinter:
    """Generated keys: leased id → keyed permutation → 7 base62 characters."""

    def __init__(
        self, allocator: IdAllocator, permutation: FeistelPermutation, reserved: ReservedWords
    ) -> None:
        if permutation.domain != KEY_SPACE:
            raise ValueError("the permutation must cover exactly 62**7 values")
        self.allocator = allocator
        self.permutation = permutation
        self.reserved = reserved
        self.skipped_reserved = 0

    def key_for(self, ident: int) -> str:
        """The key for id ``ident`` (pure function of the id and the secret)."""
        return encode_base62(self.permutation.permute(ident), KEY_LENGTH)

    def id_for(self, key: str) -> int:
        """The id a generated key came from; ``ValueError`` if ``key`` is not one's shape."""
        if not is_generated_shape(key):
            raise ValueError(f"{key!r} is not a generated key")
        return self.permutation.invert(decode_base62(key))

    def mint(self) -> tuple[int, str]:
        """The next ``(id, key)``; skips the astronomically rare key that spells a reserved word."""
        while True:
            ident = self.allocator.next_id()
            key = self.key_for(ident)
            if key in self.reserved:
                self.skipped_reserved += 1
                continue
            return ident, key
