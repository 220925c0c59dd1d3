"""The embedded searches feed: the CSV the next build reads, appended to in place."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from lookup.typeahead.trending import Clock, SearchLog

__all__ = ["FileSearchFeed"]


class FileSearchFeed(SearchLog):
    """:class:`~lookup.typeahead.trending.SearchLog` as a
    :class:`~lookup.typeahead.searchfeed.SearchFeed`: nothing runs in the background."""

    @classmethod
    def from_url(cls, url: str, *, copy_to: Path, clock: Clock = time.time) -> FileSearchFeed:
        """The file ``copy_to`` (``file:///path`` or the data directory's default)."""
        return cls(copy_to, clock=clock)

    def start(self) -> None:
        """Nothing to start: each append is written when it is made."""

    def close(self) -> None:
        """Nothing to stop."""

    def status(self) -> dict[str, Any]:
        """The backend and the file."""
        return {"backend": "file", "path": str(self.path)}
