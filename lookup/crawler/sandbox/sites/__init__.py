"""The hosts of the sandbox web and what each one throws at a crawler.

One module per kind of host, on the shared machinery of :mod:`.base` (config,
world, page and answer helpers); :mod:`.registry` builds them all from one world:

- :mod:`.docs` — documentation (``docs.`` and its ``www.`` twin): robots groups, canonical links
- :mod:`.mirror` — the documentation mirrored: exact duplicates
- :mod:`.news` — near-duplicate stories, session ids, soft 404s
- :mod:`.shop` — faceted navigation and session ids (traps), a catch-all soft 404
- :mod:`.calendar` — an infinite calendar, a relative-link loop, soft 404s
- :mod:`.changing` — blog and wiki: pages that change, ETag, 304, sitemap lastmod
- :mod:`.closed` — robots.txt answers 503 or never: crawl nothing
- :mod:`.overloaded` — slow answers, a stall, 429 and 503 with Retry-After
- :mod:`.redirects` — chains, loops, cross-host and relative redirects
- :mod:`.junk` — oversize, binary, non-HTML and malformed answers
- :mod:`.hub` — a directory linking every host: the seed that fans a crawl out
- :mod:`.spa` — a single-page app: pages whose text only a browser render shows
- :mod:`.press` — PDFs, RSS and Atom feeds, meta refresh, a sitemap only at ``/sitemap.xml``
"""

from __future__ import annotations

from lookup.crawler.sandbox.sites.base import SandboxConfig, World, esc, page
from lookup.crawler.sandbox.sites.junk import MALFORMED
from lookup.crawler.sandbox.sites.registry import Sites, build_sites

__all__ = ["MALFORMED", "SandboxConfig", "Sites", "World", "build_sites", "esc", "page"]
