"""The throw-away PostgreSQL: connect, crash with -m immediate, restart on the same data."""

import psycopg


def test_a_crashed_durable_cluster_comes_back_with_its_data(postgres_db, own_postgres):
    with psycopg.connect(postgres_db) as c:
        assert c.execute("select 1").fetchone() == (1,)
    with psycopg.connect(own_postgres.url, autocommit=True) as c:
        c.execute("create table t(x int)")
        c.execute("insert into t values (1)")
    own_postgres.stop("immediate")
    assert not own_postgres.running()
    own_postgres.start()
    with psycopg.connect(own_postgres.url) as c:
        assert c.execute("select x from t").fetchall() == [(1,)]
