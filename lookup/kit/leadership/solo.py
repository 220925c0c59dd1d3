"""Leadership of one process (``solo:``): the embedded default (see
:mod:`lookup.kit.leadership`). A process that owns its data directory is the only one
that could run the job, so it always leads.
"""

from __future__ import annotations

from lookup.kit.engines.storeurl import StoreUrl

__all__ = ["SoloLeadership"]


class SoloLeadership:
    """Always the leader: the one process over its own data directory."""

    def __init__(self, name: str) -> None:
        self.name = name

    @classmethod
    def from_url(cls, url: StoreUrl, name: str) -> SoloLeadership:
        """The leadership of ``name`` (``solo:`` names nothing else)."""
        return cls(name)

    def describe(self) -> str:
        return "solo"

    def hold(self) -> bool:
        return True

    def release(self) -> None:
        pass
