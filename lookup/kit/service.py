"""The lifecycle every live service shares: ``status()`` for health, ``close()`` to stop.

``/healthz`` and the dashboard ask each system the same question the same way.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

__all__ = ["LiveService"]


@runtime_checkable
class LiveService(Protocol):
    """A long-lived service: what it serves now, and how to let go of it."""

    def status(self) -> dict[str, Any]:
        """A JSON-ready health report; ``"status"`` is ``"ok"``, ``"NOT_BUILT"`` or an error
        (``"DAMAGED"``, ``"NOT_WRITABLE"``: then with ``"file"`` and ``"remedy"``)."""
        ...

    def close(self) -> None:
        """Stop background work and release files and connections; safe to call twice."""
        ...
