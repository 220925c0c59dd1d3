"""Personal recent searches (issue 27 item 9): a per-device list beside the shared answer.

The store port is checked on every registered backend (the embedded SQLite file and a
throw-away PostgreSQL), against a model with hypothesis; the tokens refuse forgeries;
and over a real ``lookup serve`` one device never sees another's list, clearing works,
and ``/v1/suggest`` answers everyone the same body with the same cache headers.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lookup.typeahead.recent import BACKENDS, RecentStore, backend, open_recent_store
from lookup.typeahead.recent.tokens import DeviceTokens
from tests.conftest import running_lookup
from tests.contracts.seams import Fresh, check_port_imports_no_backend, check_registered, fresh_url
from tests.typeahead.conftest import Built

ADMIN = "recent-test-admin-token"


def _sqlite(tmp_path: Path) -> str:
    return f"sqlite:///{(tmp_path / 'recent.db').resolve().as_posix().lstrip('/')}"


FRESH: dict[str, Fresh] = {"sqlite": _sqlite, "postgresql": "postgres_db"}


@pytest.fixture(params=list(BACKENDS))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RecentStore]:
    opened = open_recent_store(fresh_url(request, tmp_path, FRESH))
    yield opened
    opened.close()


def test_every_backend_is_a_recent_store_and_the_port_imports_none() -> None:
    check_registered(BACKENDS, backend, RecentStore)
    check_port_imports_no_backend("lookup.typeahead.recent")


def test_lists_are_per_user_bounded_newest_first_and_cleared(store: RecentStore) -> None:
    for i, q in enumerate(["ipl score", "weather", "ipl live", "news", "weather"]):
        store.add("d-a", "en-IN", q, 100.0 + i, keep=3)
    store.add("d-b", "en-IN", "secret of b", 50.0, keep=3)
    store.add("d-a", "hi-IN", "मौसम", 60.0, keep=3)
    assert [r.query for r in store.recent("d-a", "en-IN", 10)] == ["weather", "news", "ipl live"]
    assert [r.query for r in store.recent("d-b", "en-IN", 10)] == ["secret of b"]
    assert store.clear("d-a") == 4
    assert store.recent("d-a", "en-IN", 10) == [] and store.recent("d-a", "hi-IN", 10) == []
    assert [r.query for r in store.recent("d-b", "en-IN", 10)] == ["secret of b"]
    assert "@" not in store.describe()


OPS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.sampled_from(["d-a", "d-b"]), st.sampled_from("pqrst")),
        st.tuples(st.just("clear"), st.sampled_from(["d-a", "d-b"]), st.just("")),
    ),
    max_size=40,
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=OPS, keep=st.integers(1, 4))
def test_the_sqlite_store_equals_a_model(
    tmp_path: Path, ops: list[tuple[str, str, str]], keep: int
) -> None:
    path = tmp_path / f"model-{len(ops)}-{keep}.db"
    path.unlink(missing_ok=True)
    real = open_recent_store(f"sqlite:///{path.resolve().as_posix().lstrip('/')}")
    model: dict[str, list[str]] = {"d-a": [], "d-b": []}
    try:
        for t, (op, user, q) in enumerate(ops):
            if op == "add":
                real.add(user, "en-IN", q, float(t), keep)
                model[user] = ([q] + [x for x in model[user] if x != q])[:keep]
            else:
                assert real.clear(user) == len(model[user])
                model[user] = []
            for u, want in model.items():
                assert [r.query for r in real.recent(u, "en-IN", 10)] == want
    finally:
        real.close()


def test_tokens_name_their_subject_and_forgeries_are_refused(tmp_path: Path) -> None:
    tokens = DeviceTokens.from_data_dir(tmp_path)
    token, subject = tokens.issue()
    assert subject.startswith("d-") and tokens.verify(token) == subject
    other, other_subject = tokens.issue()
    assert tokens.verify(subject + "." + other.rpartition(".")[2]) is None  # B's signature
    assert tokens.verify(token[:-1] + ("A" if token[-1] != "A" else "B")) is None
    assert DeviceTokens(b"another key of 32 bytes......!!!").verify(token) is None
    assert DeviceTokens.from_data_dir(tmp_path).verify(other) == other_subject  # same key
    assert tokens.issue("alice")[1] == "u-alice"
    with pytest.raises(ValueError):
        tokens.issue("bad id with spaces")


# --------------------------------------------------------------------------- over HTTP


def _served(built: Built, tmp_path: Path, env: dict[str, str]) -> Iterator[str]:
    data = tmp_path / "data"
    shutil.copytree(built.data_dir, data)
    with running_lookup(data, {"LOOKUP_ADMIN_TOKEN": ADMIN, **env}, timeout=120) as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def live(request: pytest.FixtureRequest, built: Built, tmp_path: Path) -> Iterator[str]:
    env = {}
    if request.param == "postgresql":
        env["LOOKUP_TYPEAHEAD_RECENT"] = str(request.getfixturevalue("postgres_db"))
    yield from _served(built, tmp_path, {**env, "LOOKUP_TYPEAHEAD_RECENT_PER_USER": "3"})


def _token(c: httpx.Client) -> str:
    r = c.post("/v1/suggest/recent/token")
    assert r.status_code == 201, r.text
    assert "no-store" in r.headers["cache-control"]
    return str(r.json()["token"])


def test_one_device_never_sees_another_and_clearing_works(live: str) -> None:
    with httpx.Client(base_url=live, timeout=30) as c:
        a, b = _token(c), _token(c)
        auth_a, auth_b = {"authorization": f"Bearer {a}"}, {"authorization": f"Bearer {b}"}
        for q in ["ipl score", "india weather", "ipl live", "iphone price"]:
            assert c.post("/v1/searches", json={"q": q}, headers=auth_a).status_code == 202
        assert c.post("/v1/searches", json={"q": "ipl b only"}, headers=auth_b).status_code == 202
        assert c.post("/v1/searches", json={"q": "nobody's"}).status_code == 202  # no token

        r = c.get("/v1/suggest/recent", params={"q": "IP"}, headers=auth_a)
        assert r.status_code == 200
        assert r.headers["cache-control"] == "private, no-store"
        assert [x["query"] for x in r.json()["recent"]] == ["iphone price", "ipl live"]  # kept 3
        everything_a = c.get("/v1/suggest/recent", headers=auth_a).json()["recent"]
        assert [x["query"] for x in everything_a] == ["iphone price", "ipl live", "india weather"]
        r = c.get("/v1/suggest/recent", params={"q": "ip"}, headers=auth_b)
        assert [x["query"] for x in r.json()["recent"]] == ["ipl b only"]

        forged = b.rpartition(".")[0] + "." + a.rpartition(".")[2]
        for headers, code in [({}, "TOKEN_REQUIRED"),
                              ({"authorization": f"Bearer {forged}"}, "INVALID_TOKEN"),
                              ({"authorization": f"Bearer {ADMIN}"}, "INVALID_TOKEN")]:  # fmt: skip
            r = c.get("/v1/suggest/recent", headers=headers)
            assert r.status_code == 401 and r.json()["error"] == code
            assert c.delete("/v1/suggest/recent", headers=headers).status_code == 401

        r = c.delete("/v1/suggest/recent", headers=auth_a)
        assert r.status_code == 200 and r.json() == {"cleared": 3}
        assert c.get("/v1/suggest/recent", headers=auth_a).json()["recent"] == []
        assert len(c.get("/v1/suggest/recent", headers=auth_b).json()["recent"]) == 1

        # the shared answer is the same for everyone, with the same cache headers
        plain = c.get("/v1/suggest", params={"q": "ip"})
        with_token = c.get("/v1/suggest", params={"q": "ip"}, headers=auth_b)
        assert plain.content == with_token.content
        assert plain.headers["cache-control"] == with_token.headers["cache-control"]
        assert "public" in plain.headers["cache-control"]


def test_bad_input_and_naming_a_user(built: Built, tmp_path: Path) -> None:
    for url in _served(built, tmp_path, {}):
        with httpx.Client(base_url=url, timeout=30) as c:
            auth = {"authorization": f"Bearer {_token(c)}"}
            r = c.get("/v1/suggest/recent", params={"market": "xx-YY"}, headers=auth)
            assert r.status_code == 400 and r.json()["error"] == "UNKNOWN_MARKET"
            r = c.get("/v1/suggest/recent", params={"limit": 0}, headers=auth)
            assert r.status_code == 422 and r.json()["error"] == "INVALID_REQUEST"
            r = c.get("/v1/suggest/recent", params={"user": "d-someone"}, headers=auth)
            assert r.status_code == 400 and r.json()["error"] == "UNKNOWN_PARAMETER"
            r = c.post("/v1/suggest/recent/token", json={"userId": "alice"})
            assert r.status_code == 403
            r = c.post("/v1/suggest/recent/token", json={"userId": "alice"},
                       headers={"authorization": f"Bearer {ADMIN}"})  # fmt: skip
            assert r.status_code == 201 and r.json()["subject"] == "u-alice"
            r = c.post("/v1/suggest/recent/token", json={"nope": 1})
            assert r.status_code == 400 and r.json()["error"] == "INVALID_REQUEST"
            paths = c.get("/openapi.json").json()["paths"]
            assert {"get", "delete"} <= set(paths["/v1/suggest/recent"])
            assert "post" in paths["/v1/suggest/recent/token"]


def test_the_shard_router_serves_recent_searches_and_records_picks(
    built: Built, tmp_path: Path
) -> None:
    """Behind ``lookup typeahead serve-shards`` the same per-device calls work, and a
    pick sent to the router reaches the search log the build folds."""
    from lookup.server import create_app
    from lookup.typeahead.router import ShardRouter, install_router
    from lookup.typeahead.sharding import ensure_shard_sets
    from lookup.typeahead.supervisor import ShardCluster
    from tests.conftest import serve_in_thread

    data = tmp_path / "data"
    shutil.copytree(built.data_dir, data)
    root = ensure_shard_sets(data, 2)
    with ShardCluster(root, 2) as cluster:
        router = ShardRouter.from_root(root, cluster.addresses)
        app = create_app(data, subsystems=[lambda m: install_router(m, router)])
        with serve_in_thread(app) as url, httpx.Client(base_url=url, timeout=30) as c:
            a, b = _token(c), _token(c)
            picked = {"q": "ipl live score", "fromSuggestion": True, "rank": 1, "prefix": "ipl"}
            r = c.post("/v1/searches", json=picked, headers={"authorization": f"Bearer {a}"})
            assert r.status_code == 202, r.text
            mine = c.get("/v1/suggest/recent", headers={"authorization": f"Bearer {a}"}).json()
            assert [x["query"] for x in mine["recent"]] == ["ipl live score"]
            theirs = c.get("/v1/suggest/recent", headers={"authorization": f"Bearer {b}"})
            assert theirs.json()["recent"] == []
    rows = (data / "typeahead" / "searches.csv").read_text(encoding="utf-8").splitlines()
    assert rows[-1].endswith(",1,1,ipl")
