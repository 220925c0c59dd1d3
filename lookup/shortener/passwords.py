"""Per-link passwords, stored only as scrypt hashes (``hashlib.scrypt``, a memory-hard KDF).

The stored form is ``scrypt$N$r$p$salt_hex$hash_hex`` so the cost parameters travel
with the hash and can be raised later without breaking old links. Hashing costs tens
of milliseconds on purpose; callers on an event loop run it in a worker thread.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

MAX_PASSWORD_LENGTH = 128
_N, _R, _P, _DKLEN = 2**14, 8, 1, 32


def hash_password(password: str, *, n: int = _N, r: int = _R, p: int = _P) -> str:
    """A salted scrypt hash of ``password`` in the self-describing stored form."""
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode("utf-8"), salt=salt, n=n, r=r, p=p, dklen=_DKLEN)
    return f"scrypt${n}${r}${p}${salt.hex()}${digest.hex()}"


def verify_password(password: str, stored: str) -> bool:
    """True when ``password`` matches ``stored`` (constant-time); False for a malformed hash."""
    try:
        scheme, n, r, p, salt_hex, digest_hex = stored.split("$")
        if scheme != "scrypt":
            return False
        expected = bytes.fromhex(digest_hex)
        digest = hashlib.scrypt(
            password.encode("utf-8", errors="surrogatepass"),
            salt=bytes.fromhex(salt_hex),
            n=int(n),
            r=int(r),
            p=int(p),
            dklen=len(expected),
        )
    except (ValueError, UnicodeError):
        return False
    return hmac.compare_digest(digest, expected)
