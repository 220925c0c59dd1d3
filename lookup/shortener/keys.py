"""Short keys: minted from leased ids through a keyed permutation, or claimed as aliases.

**Keys are case-insensitive** (Shlink's "loose" mode): ``IPL-Final`` and ``ipl-final`` are
one key, claimed once and resolved from any spelling; the owner's spelling is kept for
display. :func:`fold` is the one rule (ASCII lower case: keys are ASCII). Links created
before the rule whose keys differ only by case keep answering to their exact spelling
(see :mod:`lookup.shortener.links.sql`, ``fold`` column).

**Generated keys** are exactly :data:`KEY_LENGTH` (7) characters of ``0-9 a-z``: the
next id from an :class:`~lookup.kit.idblocks.IdAllocator` lease goes through a secret
:class:`~lookup.kit.ids.FeistelPermutation` of ``[0, 36**7)`` and is written in base 36
with left padding. Lower case only, so folding takes nothing away: distinct ids give
distinct keys under the case-insensitive rule too, and consecutive ids give unrelated
keys (volume is not leaked, neighbours cannot be enumerated). ``key → id`` inverts the
permutation. (Keys minted before were mixed-case base62; one of them may fold onto a new
key, which the store's conditional insert refuses, and the service mints the next.)

**Domains**: a link lives on one short domain. On the default domain its stored key is
the key itself; on another domain it is ``key@domain`` (:func:`storage_key`), a shape
no key can have, so every table keyed by a link's key needs no domain column.

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
from lookup.kit.ids import FeistelPermutation, is_base62

KEY_LENGTH = 7
#: The alphabet of generated keys: digits and lower-case letters (base 36).
KEY_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"
KEY_SPACE = len(KEY_ALPHABET) ** KEY_LENGTH
_KEY_INDEX = {ch: i for i, ch in enumerate(KEY_ALPHABET)}
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


def fold(key: str) -> str:
    """The case-insensitive form of a key (or of a ``key@domain`` storage key)."""
    return key.lower()


def storage_key(key: str, domain: str = "") -> str:
    """The key a link is stored under: ``key`` on the default domain (``""``), else
    ``key@domain``."""
    return f"{key}@{domain}" if domain else key


def split_key(stored: str) -> tuple[str, str]:
    """``(key, domain)`` of a storage key (domain ``""``: the default one)."""
    key, _, domain = stored.partition("@")
    return key, domain


def encode_key(n: int) -> str:
    """``n`` in base 36 (``0-9 a-z``), left-padded to :data:`KEY_LENGTH` characters."""
    if not 0 <= n < KEY_SPACE:
        raise ValueError(f"{n} is outside the key space")
    digits = []
    for _ in range(KEY_LENGTH):
        n, r = divmod(n, 36)
        digits.append(KEY_ALPHABET[r])
    return "".join(reversed(digits))


def decode_key(key: str) -> int:
    """Inverse of :func:`encode_key`; ``ValueError`` for anything else."""
    if len(key) != KEY_LENGTH or any(ch not in _KEY_INDEX for ch in key):
        raise ValueError(f"{key!r} is not a generated key")
    n = 0
    for ch in key:
        n = n * 36 + _KEY_INDEX[ch]
    return n


def is_generated_shape(key: str) -> bool:
    """True for exactly seven letters and digits — the shape only generated keys have
    (mixed case included: keys minted before keys were case-insensitive)."""
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
    """Generated keys: leased id → keyed permutation → 7 base-36 characters."""

    def __init__(
        self, allocator: IdAllocator, permutation: FeistelPermutation, reserved: ReservedWords
    ) -> None:
        if permutation.domain != KEY_SPACE:
            raise ValueError("the permutation must cover exactly 36**7 values")
        self.allocator = allocator
        self.permutation = permutation
        self.reserved = reserved
        self.skipped_reserved = 0

    def key_for(self, ident: int) -> str:
        """The key for id ``ident`` (pure function of the id and the secret)."""
        return encode_key(self.permutation.permute(ident))

    def id_for(self, key: str) -> int:
        """The id a generated key came from; ``ValueError`` if ``key`` is not one's shape."""
        return self.permutation.invert(decode_key(key))

    def mint(self) -> tuple[int, str]:
        """The next ``(id, key)``; skips the astronomically rare key that spells a reserved word."""
        while True:
            ident = self.allocator.next_id()
            key = self.key_for(ident)
            if key in self.reserved:
                self.skipped_reserved += 1
                continue
            return ident, key
