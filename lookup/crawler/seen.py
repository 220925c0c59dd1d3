"""The seen-URL check: a Bloom filter in memory, settled by the durable URL store.

The design text's ``check(url)``::

    h = hash(normalised url)
    if not bloom.mightContain(h):            # definitely new
        bloom.add(h); urlStore.insert(h, url); frontier.add(url)
    else:                                    # probably seen — confirm
        if urlStore.insertIfAbsent(h, url):  # it was a false positive
            bloom.add(h); frontier.add(url)

The filter skips the store's existence check for genuinely new URLs, and a "maybe"
is always confirmed against the store, so no new URL is ever lost to a false
positive. The filter is rebuilt from the store on restart, and rebuilt twice as
large when more URLs than it was sized for have been added.
"""

from __future__ import annotations

from dataclasses import dataclass

from lookup.crawler.state import CrawlWriter, UrlRecord
from lookup.kit.bloom import BloomFilter

__all__ = ["SeenStats", "SeenUrls"]


@dataclass
class SeenStats:
    """How the check answered: how often the store had to be asked, and why."""

    definitely_new: int = 0
    maybe_seen: int = 0
    false_positives: int = 0  # "maybe" that the store showed to be new
    rebuilds: int = 0


class SeenUrls:
    """Bloom filter + URL store: ``check`` inserts a URL row iff the URL is new."""

    def __init__(
        self, store: CrawlWriter, capacity: int = 1_000_000, fp_rate: float = 0.01
    ) -> None:
        self.store = store
        self.fp_rate = fp_rate
        self.stats = SeenStats()
        known = sum(1 for _ in store.iter_url_hashes())
        self.bloom = BloomFilter(max(capacity, 2 * known, 1), fp_rate)
        self.bloom.update(store.iter_url_hashes())

    def check(self, row: UrlRecord) -> bool:
        """Insert ``row`` into the URL store if its URL is new; True if it was."""
        h = row.url_hash
        if not self.bloom.might_contain(h):
            self.stats.definitely_new += 1
            self.bloom.add(h)
            self.store.insert_url(row, if_absent=False)
            self._maybe_grow()
            return True
        self.stats.maybe_seen += 1
        if self.store.insert_url(row, if_absent=True):
            self.stats.false_positives += 1
            self.bloom.add(h)
            self._maybe_grow()
            return True
        return False

    def _maybe_grow(self) -> None:
        if self.bloom.added > self.bloom.capacity:
            self.bloom = BloomFilter(2 * self.bloom.capacity, self.fp_rate)
            self.bloom.update(self.store.iter_url_hashes())
            self.stats.rebuilds += 1
