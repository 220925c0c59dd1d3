"""The webhook sender's knobs, read from :mod:`lookup.settings` (``shortener_webhook_*``).

A light module (no HTTP client) so the composition root's config can hold them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from lookup import settings

__all__ = ["SenderOptions"]


@dataclass(frozen=True)
class SenderOptions:
    """Timeouts, retries and click batching of webhook deliveries."""

    timeout_s: float = 5.0
    max_attempts: int = 8
    backoff_base_s: float = 10.0
    backoff_cap_s: float = 3600.0
    batch_size: int = 100
    batch_interval_s: float = 5.0
    poll_s: float = 1.0
    #: Deliveries claimed per round.
    claim_limit: int = 20

    @classmethod
    def from_settings(cls, environ: Mapping[str, str] | None = None) -> SenderOptions:
        """The options ``lookup serve`` runs with."""
        return cls(
            timeout_s=settings.get("shortener_webhook_timeout", environ),
            max_attempts=settings.get("shortener_webhook_max_attempts", environ),
            backoff_base_s=settings.get("shortener_webhook_backoff", environ),
            backoff_cap_s=settings.get("shortener_webhook_backoff_cap", environ),
            batch_size=settings.get("shortener_webhook_batch_size", environ),
            batch_interval_s=settings.get("shortener_webhook_batch_interval", environ),
            poll_s=settings.get("shortener_webhook_poll", environ),
        )

    @property
    def lease_s(self) -> float:
        """How long a claimed delivery stays with its sender: a POST's longest wait,
        twice, and a second."""
        return 2 * self.timeout_s + 1.0
