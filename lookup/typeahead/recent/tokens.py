"""Who may read a recent-search list: HMAC-signed tokens the server issues.

A token is ``<subject>.<signature>``: the subject is ``d-<random>`` for a device (issued
to anyone who asks, as a browser gets a cookie) or ``u-<id>`` for a signed-in user
(issued only to the trusted front end holding the admin token, which signed the person
in); the signature is HMAC-SHA256 of the subject under a server key. Nobody can forge a
token for another subject without the key, so one device or user never reads another's
list. The key is ``<data-dir>/typeahead/recent.key`` (32 random bytes, made once, 0600).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
import secrets
from pathlib import Path

from lookup.kit.secrets.file import create_once

__all__ = ["DeviceTokens", "key_path"]

_SUBJECT = re.compile(r"^(d-[A-Za-z0-9_-]{16,64}|u-[A-Za-z0-9_.@:-]{1,128})$")


def key_path(data_dir: str | os.PathLike[str]) -> Path:
    """Where the signing key of one data directory lives."""
    return Path(data_dir) / "typeahead" / "recent.key"


class DeviceTokens:
    """Issues and checks recent-search tokens under one key."""

    def __init__(self, key: bytes) -> None:
        if len(key) < 16:
            raise ValueError("the signing key must be at least 16 bytes")
        self._key = key

    @classmethod
    def from_data_dir(cls, data_dir: str | os.PathLike[str]) -> DeviceTokens:
        """Tokens signed with the data directory's key (made on first use)."""
        return cls(create_once(key_path(data_dir), lambda: secrets.token_bytes(32)))

    def _sign(self, subject: str) -> str:
        mac = hmac.new(self._key, b"lookup-recent:" + subject.encode(), hashlib.sha256)
        return base64.urlsafe_b64encode(mac.digest()).decode().rstrip("=")

    def issue(self, user_id: str | None = None) -> tuple[str, str]:
        """``(token, subject)``: a new device's, or a named signed-in user's (the caller
        has checked that it may name one). ValueError for an unusable user id."""
        subject = f"u-{user_id}" if user_id is not None else "d-" + secrets.token_urlsafe(16)
        if not _SUBJECT.match(subject):
            raise ValueError("userId must be 1 to 128 letters, digits or _ . @ : -")
        return f"{subject}.{self._sign(subject)}", subject

    def verify(self, token: str) -> str | None:
        """The subject a token names if its signature holds, else None."""
        subject, dot, signature = token.strip().rpartition(".")
        if not dot or not _SUBJECT.match(subject):
            return None
        return subject if hmac.compare_digest(signature, self._sign(subject)) else None
