"""kit/postgres.py: credentials never shown, and an unreachable server is Unavailable at once."""

from __future__ import annotations

from typing import Any

import pytest

from lookup.errors import Unavailable
from lookup.kit.engines.postgres import PgPool, describe_url
from lookup.shortener.store import open_link_store
from tests.conftest import free_port


def test_a_server_is_named_without_its_credentials() -> None:
    assert describe_url("postgresql://alice:s3cret@db.example:6543/links") == (
        "postgresql://db.example:6543/links"
    )
    assert "s3cret" not in describe_url("host=h port=1 dbname=d user=u password=s3cret")


def test_opening_a_store_on_a_server_that_is_not_there_is_unavailable() -> None:
    url = f"postgresql://postgres@127.0.0.1:{free_port()}/nothing"
    with pytest.raises(Unavailable) as caught:
        open_link_store(url)
    assert caught.value.code == "UNAVAILABLE" and "127.0.0.1" in caught.value.message


def test_a_pool_reopens_after_close(postgres_db: str) -> None:
    pool = PgPool(postgres_db, pool_timeout_s=5.0)
    with pool.connection() as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
    pool.close()
    with pool.connection() as conn:
        assert conn.execute("SELECT 2").fetchone() == (2,)
    pool.close()


def test_a_stopped_server_answers_unavailable_and_then_serves_again(own_postgres: Any) -> None:
    pool = PgPool(own_postgres.url, pool_timeout_s=1.0)
    try:
        with pool.connection() as conn:
            conn.execute("SELECT 1")
        own_postgres.stop("immediate")
        with pytest.raises(Unavailable), pool.connection() as conn:
            conn.execute("SELECT 1")
        own_postgres.start()
        for _ in range(100):  # the dead connection is replaced, not handed out again
            try:
                with pool.connection() as conn:
                    assert conn.execute("SELECT 3").fetchone() == (3,)
                break
            except Unavailable:
                continue
        else:
            pytest.fail("the pool never served again after the restart")
    finally:
        pool.close()
