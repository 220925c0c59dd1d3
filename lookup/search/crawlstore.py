"""A crawl's output through a shared version store, so crawler and indexer share no disk.

The crawler's machine publishes a finished crawl directory (``events.jsonl`` and
``warc/*.warc.gz``) as a version of the line ``crawl/warc`` (:func:`publish_crawl`,
``lookup crawl-publish DIR``); the indexer's machine mirrors the line's current version
into ``DATA_DIR/crawls/from-store/<line>`` (:func:`crawl_copy`, every chunk checked) and
indexes that directory — the same directory each time, so a later publish of a grown
crawl is indexed incrementally. See :mod:`lookup.kit.versionstore.tree`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

if TYPE_CHECKING:
    from lookup.kit.versionstore import VersionInfo

__all__ = ["CRAWL_LINE", "copy_dir", "crawl_copy", "is_store_url", "publish_crawl"]

#: The event log's file name (:data:`lookup.search.events.EVENTS_FILE`; the command line
#: imports this module, so it imports the store and the log reader only when used).
EVENTS_FILE = "events.jsonl"

#: The line a crawl's output is published on unless told otherwise.
CRAWL_LINE = "crawl/warc"
#: What of a crawl directory is published: the event log and the WARC files it names.
CRAWL_FILES = (EVENTS_FILE, "warc/*")


def is_store_url(text: str) -> bool:
    """Whether ``text`` names a shared store (``postgresql://…``) rather than a directory."""
    return text.split(":", 1)[0].lower() in ("postgresql", "postgres") and "://" in text


def publish_crawl(
    crawl_dir: str | os.PathLike[str], url: str, line: str = CRAWL_LINE
) -> VersionInfo | None:
    """Publish the crawl in ``crawl_dir`` to ``line`` of the version store ``url`` and make
    it current (None: the store holds it unchanged already). The event log is read first
    (see :mod:`lookup.kit.versionstore.tree`). ``FileNotFoundError`` without an event log."""
    from lookup.kit.versionstore import open_version_store
    from lookup.kit.versionstore.tree import publish_tree

    root = Path(crawl_dir)
    if not (root / EVENTS_FILE).is_file():
        raise FileNotFoundError(f"{root} has no {EVENTS_FILE}: run `lookup crawl` first")
    store = open_version_store(url)
    try:
        return publish_tree(store, line, root, include=CRAWL_FILES, first=(EVENTS_FILE,))
    finally:
        store.close()


def copy_dir(data_dir: str | os.PathLike[str], line: str = CRAWL_LINE) -> Path:
    """Where this machine keeps its copy of a published crawl line."""
    return Path(data_dir) / "crawls" / "from-store" / quote(line, safe="")


def crawl_copy(url: str, data_dir: str | os.PathLike[str], line: str = CRAWL_LINE) -> Path:
    """Mirror the current crawl of ``line`` into :func:`copy_dir` and return it
    (``LookupError`` when nothing is published on the line)."""
    from lookup.kit.versionstore import open_version_store
    from lookup.kit.versionstore.tree import mirror_current

    store = open_version_store(url)
    try:
        done = mirror_current(store, line, copy_dir(data_dir, line))
    finally:
        store.close()
    if done is None:
        raise LookupError(f"no crawl is published on {line} in {store.describe()}")
    return done[1]
