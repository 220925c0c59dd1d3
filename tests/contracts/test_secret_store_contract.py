"""The SecretStore contract, written once and run against every implementation.

What the shortener relies on for its fleet-wide secrets (the key permutation's secret, the
admin token): a value created once, whoever asks first — concurrent creators in several
"processes" all get the one value that won — kept across reopening, and independent by
name. The backends come from the seam's registry (:data:`lookup.kit.secrets.BACKENDS`): a
new backend registers its scheme there, says below how to get a fresh, empty store of it
(``FRESH``), and must pass unchanged.
"""

from __future__ import annotations

import secrets
import threading
from pathlib import Path

import pytest

from lookup.kit.secrets import BACKENDS, SecretStore, backend, open_secret_store
from tests.contracts.seams import (
    Fresh,
    check_port_imports_no_backend,
    check_registered,
    fresh_url,
)


def _file(tmp_path: Path) -> str:
    return f"file://{(tmp_path / 'secrets').as_posix()}"


#: scheme -> how to get the URL of a fresh, empty store: a function of a temp dir, or the
#: name of the fixture that gives a new database on a real server.
FRESH: dict[str, Fresh] = {"file": _file, "postgresql": "postgres_db"}


@pytest.fixture(params=list(BACKENDS))
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return fresh_url(request, tmp_path, FRESH)


def test_every_registered_backend_is_a_secret_store() -> None:
    check_registered(BACKENDS, backend, SecretStore)


def test_the_port_imports_no_backend() -> None:
    """``lookup.kit.secrets`` names its backends; it imports one only when a URL asks."""
    check_port_imports_no_backend("lookup.kit.secrets")


def test_the_factory_gives_a_secret_store(url: str) -> None:
    store = open_secret_store(url)
    assert isinstance(store, SecretStore)
    assert "@" not in store.describe()  # never the user or a password


def test_unknown_schemes_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="file"):
        open_secret_store("vault://somewhere/secrets")


def test_a_secret_is_created_once_and_read_back_by_every_opener(url: str) -> None:
    first = open_secret_store(url).get_or_create("secret.key", lambda: b"a" * 32)
    again = open_secret_store(url).get_or_create("secret.key", lambda: b"b" * 32)
    assert first == again == b"a" * 32


def test_concurrent_creators_all_get_the_one_winner(url: str) -> None:
    stores = [open_secret_store(url) for _ in range(4)]
    got: list[bytes] = []
    start = threading.Barrier(12)

    def create(i: int) -> None:
        start.wait()
        got.append(stores[i % 4].get_or_create("raced", lambda: secrets.token_bytes(32)))

    threads = [threading.Thread(target=create, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 12 and len(set(got)) == 1


def test_secrets_are_independent_by_name(url: str) -> None:
    store = open_secret_store(url)
    assert store.get_or_create("one", lambda: b"1" * 16) == b"1" * 16
    assert store.get_or_create("two", lambda: b"2" * 16) == b"2" * 16


def test_invalid_names_are_refused(url: str) -> None:
    with pytest.raises(ValueError):
        open_secret_store(url).get_or_create("../escape", lambda: b"x" * 16)
