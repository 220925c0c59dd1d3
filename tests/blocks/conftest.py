"""A throw-away etcd for the drills: skipped without the binary, a failure under CI.

``LOOKUP_REQUIRE_SERVERS=1`` (set by ``.ci/run``) turns the skip into a failure, so the
drills cannot silently stop running where etcd is supposed to be installed.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lookup import settings
from lookup.blocks.ids.etcd import EtcdServer, etcd_available


def _need_etcd() -> None:
    if etcd_available():
        return
    where = settings.get("etcd_bin")
    if settings.get("require_servers"):
        pytest.fail(f"{where} is missing and LOOKUP_REQUIRE_SERVERS is set (.ci/run)")
    pytest.skip(f"{where} is missing (apt-get install etcd-server)")


@pytest.fixture(scope="module")
def etcd() -> Iterator[EtcdServer]:
    """One etcd for a test module, on free loopback ports, in a temporary directory."""
    _need_etcd()
    with EtcdServer() as server:
        yield server


@pytest.fixture
def own_etcd() -> Iterator[EtcdServer]:
    """An etcd for one test alone (for drills that freeze or stop it)."""
    _need_etcd()
    with EtcdServer() as server:
        yield server
