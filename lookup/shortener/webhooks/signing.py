"""How a webhook POST is signed, and how a receiver checks it (GitHub's scheme, plus a stamp).

The signature is GitHub's ``X-Hub-Signature-256`` under our name: ``X-Lookup-Signature:
sha256=<hex>``, the HMAC-SHA256 of the raw request body keyed with the endpoint's
secret. GitHub stops there; to stop replays each attempt also carries the time it was
sent, twice — in ``X-Lookup-Timestamp`` and as the body's ``timestamp`` field — so the
stamp is covered by the signature. A receiver checks the signature over the bytes it
received, that the two stamps agree and are recent (:data:`TOLERANCE_S`), and drops an
``id`` it has seen (a retry of a delivery keeps its id; only the stamp changes).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections.abc import Mapping
from typing import Any

__all__ = [
    "DELIVERY_HEADER",
    "EVENT_HEADER",
    "SIGNATURE_HEADER",
    "TIMESTAMP_HEADER",
    "TOLERANCE_S",
    "body_of",
    "new_secret",
    "signature",
    "verify",
]

SIGNATURE_HEADER = "X-Lookup-Signature"
TIMESTAMP_HEADER = "X-Lookup-Timestamp"
EVENT_HEADER = "X-Lookup-Event"
DELIVERY_HEADER = "X-Lookup-Delivery"
#: How old a stamp a receiver should still accept (Stripe's default: five minutes).
TOLERANCE_S = 300


def new_secret() -> str:
    """A fresh endpoint secret (192 random bits)."""
    return "whsec_" + secrets.token_hex(24)


def signature(secret: str, body: bytes) -> str:
    """The signature header's value for ``body``: ``sha256=<hex HMAC-SHA256>``."""
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def body_of(envelope: Mapping[str, Any], timestamp: int) -> bytes:
    """The bytes one attempt sends: the stored envelope with this attempt's ``timestamp``."""
    return json.dumps({**envelope, "timestamp": timestamp}, separators=(",", ":")).encode()


def verify(
    secret: str,
    body: bytes,
    headers: Mapping[str, str],
    *,
    now: float,
    tolerance_s: float = TOLERANCE_S,
) -> bool:
    """What a receiver does: the signature matches the raw body, and the signed stamp
    equals the header's and is within ``tolerance_s`` of ``now``."""
    lower = {k.lower(): v for k, v in headers.items()}
    given = lower.get(SIGNATURE_HEADER.lower(), "")
    if not hmac.compare_digest(given, signature(secret, body)):
        return False
    try:
        stamp = int(lower.get(TIMESTAMP_HEADER.lower(), ""))
        signed = json.loads(body).get("timestamp")
    except (ValueError, AttributeError):
        return False
    return signed == stamp and abs(now - stamp) <= tolerance_s
