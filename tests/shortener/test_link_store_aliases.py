"""The link store's old import paths (``store``, ``store_pg``, ``store_base``) still give
the same objects as the seam's package for one release, for notebooks and outside code."""

from __future__ import annotations

import pytest

from tests.aliases import check_alias

OLD_TO_NEW = {
    "lookup.shortener.store": {
        "lookup.shortener.links": (
            "UPDATABLE", "CreateResult", "Gone", "IdempotencyClaim", "IdempotencyMismatch",
            "KeyTaken", "LinkMissing", "LinkStore", "NotOwner", "StoreError", "open_link_store",
        ),
        "lookup.shortener.links.sqlite": ("SqliteLinkStore",),
    },
    "lookup.shortener.store_pg": {"lookup.shortener.links.postgres": ("PostgresLinkStore",)},
    "lookup.shortener.store_base": {
        "lookup.shortener.links": (
            "UPDATABLE", "CreateResult", "Gone", "IdempotencyClaim", "IdempotencyMismatch",
            "KeyTaken", "LinkMissing", "NotOwner", "StoreError",
        ),
        "lookup.shortener.links.sql": ("COLUMNS", "row_to_link", "to_db"),
    },
}  # fmt: skip


@pytest.mark.parametrize("old", sorted(OLD_TO_NEW))
def test_an_old_path_gives_the_new_objects(old: str) -> None:
    check_alias(old, OLD_TO_NEW[old])


def test_the_package_exports_the_new_paths() -> None:
    import lookup.shortener as shortener
    from lookup.shortener.links import LinkStore, open_link_store
    from lookup.shortener.links.sqlite import SqliteLinkStore

    assert shortener.LinkStore is LinkStore and shortener.open_link_store is open_link_store
    assert shortener.SqliteLinkStore is SqliteLinkStore
