"""Starting the search cluster: the ``search_shards`` setting, ``serve-shard --register``'s
usage errors, which shard servers a fleet plans, and one ``--backend etcd`` fleet that
starts 2 shards × 2 replicas beside its API worker, the worker following them in etcd."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.cli import main
from lookup.fleet import ServingFleet
from lookup.kit.engines.etcd import etcd_client
from lookup.search import build_index
from lookup.search.cluster import ClusterSearch, shards_url
from lookup.search.membership import MemberRecord, read_members
from lookup.searchfleet import SearchShards
from tests.conftest import _need_etcd
from tests.search.test_membership_etcd import START, wait_for


def test_the_shards_setting_names_an_etcd_or_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOOKUP_SEARCH_SHARDS", raising=False)
    assert shards_url() == ""  # the embedded default: shards in this process
    assert shards_url("http://127.0.0.1:2379") == "http://127.0.0.1:2379"
    monkeypatch.setenv("LOOKUP_ETCD_URL", "http://10.0.0.1:2379")
    assert shards_url("etcd") == "http://10.0.0.1:2379"
    with pytest.raises(ValueError, match="etcd URL"):
        shards_url("zookeeper://x")
    monkeypatch.delenv("LOOKUP_ETCD_URL")
    with pytest.raises(ValueError, match="LOOKUP_ETCD_URL"):
        shards_url("etcd")


_views = st.lists(
    st.sets(st.tuples(st.integers(0, 3), st.integers(0, 2)), max_size=8), min_size=1, max_size=5
)


@settings(max_examples=40, deadline=None)
@given(_views)
def test_the_coordinator_holds_exactly_the_members_of_each_view(
    views: list[set[tuple[int, int]]],
) -> None:
    """Whatever sequence of views etcd shows, after each the coordinator's replicas are
    that view's members (replica order), and a shard no member serves answers nothing."""
    cluster = ClusterSearch("http://127.0.0.1:9", deadline_ms=50.0)  # never started
    try:
        for view in views:
            records = [MemberRecord(f"http://127.0.0.1:{7000 + 10 * s + r}", s, r, 1, 1, 0.0)
                       for s, r in sorted(view)]  # fmt: skip
            cluster._apply(records)
            held = {(m["shard"], m["replica"]) for m in cluster.shards.members()}
            assert held == view
            for g in cluster.coordinator.groups:
                mine = sorted(r for s, r in view if s == g.shard)
                got = [getattr(x, "replica", None) for x in g.replicas]
                assert got == mine or (not mine and type(g.replicas[0]).__name__ == "VacantReplica")
    finally:
        cluster.coordinator.close()


def test_register_without_an_etcd_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("LOOKUP_ETCD_URL", raising=False)
    assert main(["search", "serve-shard", "--shard", "0", "--register"]) == 2
    assert "--etcd" in capsys.readouterr().err
    assert main(["search", "serve-shard", "--shard", "0", "--etcd", "http://x:1",
                 "--member-ttl", "0"]) == 2  # fmt: skip
    assert main(["search", "serve-shard", "--shard", "0", "--etcd", "http://x:1",
                 "--advertise", "host:80"]) == 2  # fmt: skip


def test_a_fleet_plans_shard_servers_only_with_etcd_and_an_index(
    tmp_path: Path, index_1: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LOOKUP_SEARCH_INDEX_STORE", raising=False)
    monkeypatch.delenv("LOOKUP_SEARCH_FLEET_REPLICAS", raising=False)
    assert SearchShards.plan(tmp_path, "http://127.0.0.1:2379") is None  # no index yet
    (tmp_path / "search").symlink_to(index_1)
    assert SearchShards.plan(tmp_path, None) is None  # no etcd
    plan = SearchShards.plan(tmp_path, "http://127.0.0.1:2379")
    assert plan is not None and (plan.shards, plan.replicas) == (1, 2)
    assert plan.environment() == {"LOOKUP_SEARCH_SHARDS": "http://127.0.0.1:2379"}
    monkeypatch.setenv("LOOKUP_SEARCH_FLEET_REPLICAS", "0")
    assert SearchShards.plan(tmp_path, "http://127.0.0.1:2379") is None


def test_an_etcd_fleet_starts_shard_servers_and_its_worker_follows_them(
    tmp_path: Path, base_crawl: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _need_etcd()
    for var in ("LOOKUP_ETCD_URL", "LOOKUP_SEARCH_SHARDS", "LOOKUP_SEARCH_INDEX_STORE",
                "LOOKUP_SEARCH_FLEET_REPLICAS", "LOOKUP_PUBLIC_URL"):  # fmt: skip
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LOOKUP_SEARCH_MEMBER_TTL", "2")
    build_index(base_crawl, tmp_path / "search", shards=2, segment_docs=60)
    fleet = ServingFleet(tmp_path, ("etcd",), workers=1, dashboard=False, aggregators=False,
                         quiet=True)  # fmt: skip
    try:
        fleet.start()
        assert fleet.etcd is not None
        members = read_members(etcd_client(fleet.etcd.url))["members"]
        assert sorted((m["shard"], m["replica"]) for m in members) == [
            (0, 0), (0, 1), (1, 0), (1, 1)]  # fmt: skip
        assert sum(1 for n, _p in fleet.procs if n.startswith("search shard")) == 4
        url = fleet.worker_urls[0]

        def full() -> Any:
            body = httpx.get(f"{url}/search", params={"q": "python"}, timeout=30).json()
            return body.get("shardsAnswered") == 2 and body

        wait_for("the worker to answer from the shard servers", full, START)
        view = httpx.get(f"{url}/search/shards", timeout=30).json()["cluster"]
        assert len(view["members"]) == 4
        assert sum(m["requests"] for m in view["members"]) >= 2
    finally:
        fleet.stop()
    assert all(p.poll() is not None for _n, p in fleet.procs)  # all stopped with it
