"""Old import path of store URLs, kept for one release.

Its names moved to :mod:`lookup.kit.engines.storeurl`, with the rest of the kit's engine
plumbing (:mod:`lookup.kit.engines`); this module gives the very same objects.
"""

from __future__ import annotations

from lookup.kit.engines.storeurl import StoreUrl, parse_store_url, spellings, sqlite_url

__all__ = ["StoreUrl", "parse_store_url", "spellings", "sqlite_url"]
