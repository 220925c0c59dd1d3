"""Two shorteners with different data directories on one PostgreSQL: one fleet.

They must agree on what a fleet shares — the key permutation's secret (else two ids could
map to one key), the HMAC keys derived from it, the admin token — and take disjoint id
blocks, so they never mint one key for two links. Each test gets a fresh database.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lookup.shortener import Shortener, ShortenerConfig
from lookup.shortener.service import CreateRequest
from tests.shortener.conftest import generous_limits


@pytest.fixture
def fleet(tmp_path: Path, postgres_db: str) -> Iterator[Callable[[str], Shortener]]:
    """Shorteners on one database, each over its own data directory (as on two machines)."""
    opened: list[Shortener] = []

    def member(name: str, **options: object) -> Shortener:
        config = ShortenerConfig(
            data_dir=tmp_path / name, store_url=postgres_db, limits=generous_limits(),
            analytics=False, scanner=False, block_size=25, **options,  # type: ignore[arg-type]
        )  # fmt: skip
        shortener = Shortener(config)
        opened.append(shortener)
        return shortener

    yield member
    for shortener in opened:
        shortener.close()


def test_two_processes_share_the_secrets_and_mint_disjoint_keys(
    fleet: Callable[[str], Shortener], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LOOKUP_ADMIN_TOKEN", raising=False)
    a, b = fleet("a"), fleet("b")
    assert a.admin_token == b.admin_token and len(a.admin_token) >= 40
    assert not (a.dir / "secret.key").exists() and not (b.dir / "admin.token").exists()
    ids = {a.minter.key_for(i) for i in range(500)}
    assert ids == {b.minter.key_for(i) for i in range(500)}  # one permutation for the fleet
    made: dict[str, str] = {}
    for i in range(120):  # several blocks each, interleaved
        member = (a, b)[i % 2]
        created = member.service.create(CreateRequest(long_url=f"https://example.com/{i}"))
        assert created.link is not None and created.link.key not in made
        made[created.link.key] = created.link.long_url
    assert len(made) == 120
    for key, url in made.items():  # every link is readable through the other process
        link = b.store.get(key)
        assert link is not None and link.long_url == url
    ids_a = {link.id for link in a.store.iter_links(limit=500)}
    assert len(ids_a) == 120  # 120 distinct ids: the blocks never overlapped
    assert a.allocator.leases_taken >= 2 and b.allocator.leases_taken >= 2
    backends = a.backends()
    assert backends["store"].startswith("postgresql://127.0.0.1:") and "@" not in backends["store"]
    assert backends["ids"] == backends["store"] == backends["secrets"]


def test_a_configured_admin_token_still_wins(
    fleet: Callable[[str], Shortener], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LOOKUP_ADMIN_TOKEN", raising=False)
    shared = fleet("a").admin_token
    monkeypatch.setenv("LOOKUP_ADMIN_TOKEN", "from-the-configuration")
    assert fleet("b").admin_token == "from-the-configuration" != shared


def test_the_embedded_default_keeps_its_secrets_in_the_data_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LOOKUP_ADMIN_TOKEN", raising=False)
    config = ShortenerConfig(data_dir=tmp_path, analytics=False, scanner=False)
    shortener = Shortener(config)
    try:
        assert (shortener.dir / "secret.key").stat().st_mode & 0o777 == 0o600
        token = (shortener.dir / "admin.token").read_text(encoding="ascii").strip()
        assert shortener.admin_token == token
        assert shortener.backends()["store"] == shortener.backends()["secrets"] == "embedded"
    finally:
        shortener.close()


def test_without_a_shared_cache_a_change_through_one_member_reaches_the_other_within_a_second(
    fleet: Callable[[str], Shortener],
) -> None:
    """A fleet on PostgreSQL alone: nobody tells B about A's change, so B keeps its copy no
    longer than ``LOOKUP_CACHE_L1_UNWATCHED_TTL`` (1 s), not the 60 s cache TTL."""
    a, b = fleet("a"), fleet("b")
    assert b.resolver.unheard_writers
    assert not fleet("c", cache_url="memory:").resolver.unheard_writers  # a tier tells it
    created = a.service.create(CreateRequest(long_url="https://example.com/before"))
    assert created.link is not None
    key = created.link.key
    assert b.resolver.resolve(key).long_url == "https://example.com/before"  # B caches it
    a.store.update(key, {"long_url": "https://example.com/after"}, actor=None)
    a.resolver.invalidate(key)
    deadline = time.monotonic() + 10
    while b.resolver.resolve(key).long_url != "https://example.com/after":
        assert time.monotonic() < deadline, "B still serves the old destination"
        time.sleep(0.05)
