"""The fleet's pieces one by one: partitioning, balance, fencing in the store, lease deadlines.

Oracles: brute-force recounts for the hashes, a second writer for the fence, a real etcd
for the leases (frozen with SIGSTOP to make renewals fail).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import etcd3gw
import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.crawler.config import CrawlConfig
from lookup.crawler.dedup import DuplicateDetector, minhash_to_bytes
from lookup.crawler.fleetview import store_owner
from lookup.crawler.frontier import Frontier, FrontierEntry, HostTurn, PolitenessPolicy
from lookup.crawler.health import host_health
from lookup.crawler.leases import PartitionLeases, preferred_owner
from lookup.crawler.partitions import Fence, FencedOut, current_fence, partition_of
from lookup.crawler.store import (
    ContentFacts,
    FetchedUrl,
    FetchRecord,
    FrontierHostState,
    HostPause,
    UrlFacts,
    UrlRecord,
)
from lookup.crawler.store_pg import PgCrawlStore
from lookup.crawler.traps import TrapGuard, TrapPolicy
from lookup.crawler.worker import FleetOptions, FleetWorker
from lookup.errors import Unavailable
from lookup.kit.etcd import EtcdServer, etcd_client
from lookup.kit.urlnorm import host_of, url_hash
from tests.crawler.fleet_support import etcd_server, need_etcd, wait_for


@given(st.text(min_size=1, max_size=40), st.integers(min_value=1, max_value=4096))
def test_a_partition_is_stable_in_range_and_case_blind(key: str, parts: int) -> None:
    p = partition_of(key, parts)
    assert 0 <= p < parts
    assert p == partition_of(key, parts) == partition_of(key.lower(), parts)


def test_partitions_spread_addresses_evenly() -> None:
    counts = Counter(partition_of(f"10.{i // 250}.{i % 250}.1", 256) for i in range(25600))
    assert len(counts) == 256
    assert max(counts.values()) < 2 * 100 and min(counts.values()) > 100 // 2  # mean 100
    with pytest.raises(ValueError):
        partition_of("x", 0)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.text("abcdefgh0123456789", min_size=1, max_size=6), min_size=1,
                max_size=6, unique=True))  # fmt: skip
def test_rendezvous_moves_only_the_leavers_partitions(workers: list[str]) -> None:
    before = {p: preferred_owner(workers, p) for p in range(256)}
    # Brute force: the owner is the worker with the highest score, whoever asks.
    assert all(before[p] == preferred_owner(list(reversed(workers)), p) for p in before)
    if len(workers) < 2:
        return
    leaver = workers[0]
    after = {p: preferred_owner(workers[1:], p) for p in range(256)}
    moved = {p for p in before if before[p] != after[p]}
    assert moved == {p for p in before if before[p] == leaver}


def test_rendezvous_balances_256_partitions_over_3_workers() -> None:
    counts = Counter(preferred_owner(["w1", "w2", "w3"], p) for p in range(256))
    assert set(counts) == {"w1", "w2", "w3"}
    assert max(counts.values()) - min(counts.values()) < 40  # ~85 each


# --------------------------------------------------------------------- the store's fence


def test_the_store_refuses_a_write_with_an_older_epoch(postgres_db: str) -> None:
    old = PgCrawlStore(postgres_db, partitions=4, worker="old")
    new = PgCrawlStore(postgres_db, partitions=4, worker="new")
    try:
        assert old.grant_partition(1, 10, "old", 1.0)
        token = current_fence.set(Fence(1, 10))
        try:
            assert old.insert_url(UrlRecord("h1", "http://a/1", "a", "queued", part=1),
                                  if_absent=False)  # fmt: skip
            old.lease_url("h1", 99.0)
        finally:
            current_fence.reset(token)
        assert new.grant_partition(1, 12, "new", 2.0)
        assert not old.grant_partition(1, 11, "old", 3.0)  # epochs only grow
        token = current_fence.set(Fence(1, 10))
        try:
            with pytest.raises(FencedOut, match="epoch 10 refused.*holds epoch 12"):
                old.settle_url("h1", "done", "ok")
        finally:
            current_fence.reset(token)
        assert old.url("h1").state == "leased"  # type: ignore[union-attr]  # nothing written
        token = current_fence.set(Fence(1, 12))
        try:
            with new.transaction():
                assert new.take_over(1) == 1  # only its own partition's leases
            assert [u.url_hash for u in new.partition_queue(1)] == ["h1"]
            assert new.partition_queue(2) == []
        finally:
            current_fence.reset(token)
        assert new.partition_epochs() == {1: (12, "new")}
        assert [(g[0], g[1], g[2]) for g in new.grants()] == [(1, 10, "old"), (1, 12, "new")]
    finally:
        old.close()
        new.close()


def test_pick_up_sees_rows_committed_after_the_cursor_was_taken(postgres_db: str) -> None:
    writer = PgCrawlStore(postgres_db, partitions=4)
    reader = PgCrawlStore(postgres_db, partitions=4)
    try:
        cursor = reader.queue_cursor()
        with writer.transaction():
            writer.insert_url(UrlRecord("h1", "http://a/1", "a", "queued", part=2), if_absent=True)
            writer.ensure_host("a", "127.0.0.2")
            # not committed yet: a poll now sees nothing, and must see it later
            rows, cursor2 = reader.queued_since([2], cursor)
            assert rows == []
        rows, _ = reader.queued_since([2], cursor2)
        assert [(r.url_hash, a) for r, a in rows] == [("h1", "127.0.0.2")]
        assert reader.queued_since([3], cursor)[0] == []
    finally:
        writer.close()
        reader.close()


def _commit_page(store: PgCrawlStore, url: str, text: str, outcome: str, dup_of: str | None) -> str:
    """A page fetch as a worker's crawl loop commits it: the URL row, its facts, the fetch."""
    v = DuplicateDetector().fingerprint(text)
    h, host = url_hash(url), host_of(url)
    content = ContentFacts(v.content_hash, f"0x{v.simhash:016x}", int(v.near_eligible),
                           minhash_to_bytes(v.minhash) if v.minhash is not None else None,
                           dup_of=dup_of, dup_kind="exact" if dup_of else None)  # fmt: skip
    with store.transaction():
        store.insert_url(UrlRecord(h, url, host, "leased"), if_absent=True)
        store.record_fetched(FetchedUrl(h, "done", outcome, 1, 200, "2026-12-05T19:00:00Z",
                                        time.time(), 1, UrlFacts(content=content)))  # fmt: skip
        store.add_fetch(FetchRecord(url, host, "127.0.0.2", "page", time.time(), 0.01, 200,
                                    outcome, 0.1))  # fmt: skip
    return h


def test_a_worker_learns_the_pages_the_others_committed(postgres_db: str, tmp_path: Path) -> None:
    """One memory across the fleet: a copy of a page another worker fetched after this one
    started is its duplicate, and the trap rules count the others' pages exactly once.
    Oracle: one detector and one trap guard that saw every page (the embedded crawl)."""
    other = PgCrawlStore(postgres_db, partitions=4, worker="w1")
    me = FleetWorker(CrawlConfig(tmp_path), FleetOptions(postgres_db, "etcd://127.0.0.1:9", "w2"))
    me.store = PgCrawlStore(postgres_db, partitions=4, worker="w2")
    me.dedup, me.traps = DuplicateDetector(), TrapGuard(TrapPolicy())
    oracle_dedup, oracle_traps = DuplicateDetector(), TrapGuard(TrapPolicy())
    text = " ".join(f"word{i} of the library reference page" for i in range(60))
    try:
        me._learn_fleet_pages(initial=True)  # this worker starts: nothing fetched yet
        first = _commit_page(other, "http://docs.test/lib/x.html", text, "ok", None)
        oracle_dedup.check(first, text)
        pages = [("http://docs.test/lib/x.html", False)]
        for n in range(3):  # three copies behind a token-valued parameter
            url = f"http://shop.test/p?colour=c{n}"
            _commit_page(other, url, text, "duplicate", "http://docs.test/lib/x.html")
            pages.append((url, True))
        for url, dup in pages:
            oracle_traps.record(url, duplicate=dup)
        me._learn_fleet_pages()
        me._learn_fleet_pages(initial=True)  # a repeated row is learnt once
        mine = me.dedup.check(url_hash("http://mirror.test/x.html"), text, register=False)
        want = oracle_dedup.check(url_hash("http://mirror.test/x.html"), text, register=False)
        assert (mine.kind, mine.of) == (want.kind, want.of) == ("exact", first)
        counts = {k: (s.fetched, s.duplicates) for k, s in me.traps.patterns.items()}
        assert counts == {k: (s.fetched, s.duplicates) for k, s in oracle_traps.patterns.items()}
        assert me.traps.pattern_verdict("http://shop.test/p?colour=c9") == "ok"  # 3 < 4 samples
    finally:
        other.close()
        me.store.close()


def test_a_commit_the_server_ended_under_a_moved_fence_drops_the_partition(
    postgres_db: str, tmp_path: Path
) -> None:
    """A worker frozen (SIGSTOP) inside a page's fenced commit: the server ends the
    transaction after its idle timeout, which lets a newer owner be granted, and the commit
    fails when the worker runs again. That task's next write is refused and the partition
    dropped at once, as for any refused write (it was logged as a generic error and the
    partition kept until the lease sync noticed). Oracle: the store's grants and rows."""
    other = PgCrawlStore(postgres_db, partitions=4, worker="w1")
    me = FleetWorker(CrawlConfig(tmp_path), FleetOptions(postgres_db, "etcd://127.0.0.1:9", "w2"))
    me.store = PgCrawlStore(postgres_db, partitions=4, worker="w2", idle_timeout_ms=300)
    me.frontier = Frontier(PolitenessPolicy(0.01, 1.0, 60.0))
    me.leases = PartitionLeases(etcd_client("http://127.0.0.1:9"), "t", "w2", 4, 2)  # not joined
    url = "http://a.test/p.html"
    h = url_hash(url)
    try:
        assert me.store.grant_partition(1, 10, "w2", time.time())
        token = current_fence.set(Fence(1, 10))
        try:
            me.store.insert_url(UrlRecord(h, url, "a.test", "queued", part=1), if_absent=False)
            me.store.lease_url(h, time.time() + 60)
        finally:
            current_fence.reset(token)
        me._held[1], me._loaded[1] = 10, set()
        lease = HostTurn("a.test", "127.0.0.2", "page", FrontierEntry(url, h, "a.test"), 0.0)
        me._lease_epoch[id(lease)] = (1, 10)
        me._inflight[1] += 1

        async def frozen_commit(lease: HostTurn) -> None:
            with me.store.transaction():  # the page's commit under epoch 10
                me.store.settle_url(h, "done", "ok")
                # Frozen here: the newer owner's grant waits on this transaction's lock
                # until the server ends it (idle 0.3 s, far below the grant's 4 s wait).
                assert other.grant_partition(1, 12, "w1", time.time())

        me._do_page = frozen_commit  # type: ignore[method-assign]
        asyncio.run(me._work(lease))
        assert len(me.fenced) == 1 and "epoch 10 refused" in me.fenced[0], me.fenced
        assert 1 not in me._held and me._inflight[1] == 0
        assert other.url(h).state == "leased"  # type: ignore[union-attr]  # nothing committed
        assert other.partition_epochs() == {1: (12, "w1")}
    finally:
        other.close()
        me.store.close()


def test_a_writer_frozen_in_an_unfenced_write_does_not_hold_its_hosts_rows(
    postgres_db: str,
) -> None:
    """The frontier's per-host state is written unfenced (a view, twice a second). A
    worker frozen inside that write must not keep its hosts' rows locked: the new owner's
    commit for such a host would wait as long as it stays frozen (and, the store's calls
    being synchronous, its whole crawl loop with it). The server ends the frozen
    transaction after the idle timeout, as it does a fenced one. Oracle: the other
    writer's row lock wait, bounded here by a lock timeout of its own."""
    frozen = PgCrawlStore(postgres_db, partitions=4, worker="w1", idle_timeout_ms=300)
    other = PgCrawlStore(postgres_db, partitions=4, worker="w2")
    try:
        frozen.ensure_host("a.test", "127.0.0.2")
        state = FrontierHostState("a.test", time.time(), 3, 1, 0, time.time())
        blocked: Exception | None = None
        ended = False
        try:
            with frozen.transaction():
                frozen.write_frontier_state([state])
                # Frozen here. The new owner commits a pause for the host; 10 s is the
                # longest it waits (the server ends the frozen one after 0.3 s idle).
                try:
                    with other.transaction():
                        assert other._conn is not None
                        other._conn.execute("SET LOCAL lock_timeout = '10s'")
                        other.set_host_pause("a.test", HostPause(2.5, 123.0))
                except (Unavailable, psycopg.OperationalError) as exc:  # its lock timeout
                    blocked = exc
        except (Unavailable, psycopg.Error):
            ended = True  # its commit fails: the server ended the transaction
        assert blocked is None, f"the new owner waited on the frozen writer: {blocked}"
        assert ended
        host = next(h for h in other.hosts() if h.host == "a.test")
        assert (host.last_delay, host.ready_at) == (2.5, 123.0)
    finally:
        frozen.close()
        other.close()


# ------------------------------------------------------------------------- etcd leases


@pytest.fixture
def etcd() -> Iterator[EtcdServer]:
    yield from etcd_server()


def test_leases_split_partitions_and_hand_over_on_join(etcd: EtcdServer) -> None:
    a = PartitionLeases(etcd_client(etcd.url), "t", "w1", 16, 2).start()
    b = None
    try:
        wait_for("w1 holding every partition", lambda: len(a.owned()) == 16, 20)
        epochs = a.owned()
        b = PartitionLeases(etcd_client(etcd.url), "t", "w2", 16, 2).start()
        want_b = {p for p in range(16) if preferred_owner(["w1", "w2"], p) == "w2"}
        wait_for("w1 draining w2's share", lambda: a.draining() == want_b, 20)
        for p in want_b:
            assert not a.permits(p)  # no new work on a partition being handed over
            a.release(p)
        wait_for("w2 taking its share", lambda: set(b.owned()) == want_b, 20)
        assert all(b.owned()[p] > epochs[p] for p in want_b)  # a new grant, a larger epoch
        assert set(a.owned()) == set(range(16)) - want_b
    finally:
        a.stop()
        if b is not None:
            b.stop()


def test_a_partition_drained_before_it_was_taken_over_is_handed_over(
    etcd: EtcdServer, postgres_db: str, tmp_path: Path
) -> None:
    """On a loaded machine the keep-alive thread's next balance round can come before the
    crawl loop's first turn: a second worker has joined, so some partitions granted here
    are draining before this worker ever took them over. Nothing is in flight in them:
    they are handed over at once (they stayed in etcd under this worker's lease, renewed,
    and their URLs waited until the crawl's time limit)."""
    me = FleetWorker(CrawlConfig(tmp_path), FleetOptions(postgres_db, etcd.url, "w1"))
    me.store = PgCrawlStore(postgres_db, partitions=8, worker="w1")
    me.partitions = 8
    me.frontier = Frontier(PolitenessPolicy(0.01, 1.0, 60.0))
    me.leases = mine = PartitionLeases(etcd_client(etcd.url), "t", "w1", 8, 2).start()
    other = None
    try:
        wait_for("w1 holding every partition", lambda: len(mine.owned()) == 8, 20)
        other = PartitionLeases(etcd_client(etcd.url), "t", "w2", 8, 2).start()
        want = {p for p in range(8) if preferred_owner(["w1", "w2"], p) == "w2"}
        assert want  # (blake2b's choice for these names: not all 8 stay w1's)
        wait_for("w1 draining w2's share", lambda: mine.draining() == want, 20)
        me._sync_partitions()  # the crawl loop's first turn
        wait_for("w2 taking its share", lambda: set(other.owned()) == want, 20)
        assert set(me.held()) == set(range(8)) - want
    finally:
        mine.stop()
        if other is not None:
            other.stop()
        me.store.close()


class _SlowEtcd(etcd3gw.Etcd3Client):
    """A real etcd client whose transactions take 80 ms each (a loaded machine)."""

    def transaction(self, txn: Any) -> Any:
        time.sleep(0.08)
        return super().transaction(txn)


def test_a_join_slower_than_the_lease_keeps_its_lease(etcd: EtcdServer) -> None:
    """Joining grants the partitions one transaction each: 64 at 80 ms outlast a 2 s TTL.
    The lease is renewed during a long round, so the join neither fails ("Not Found": the
    worker died at start) nor loses everything at the first renewal."""
    url = urlsplit(etcd.url)
    client = _SlowEtcd(host=url.hostname, port=url.port, timeout=5.0, api_path="/v3/")
    started = time.monotonic()
    leases = PartitionLeases(client, "t", "w1", 64, 2).start()
    try:
        assert time.monotonic() - started > 2  # the join did outlast the TTL
        assert len(leases.owned()) == 64
        time.sleep(1.0)  # the keep-alive thread's first rounds
        kinds = [kind for _t, kind, _d in leases.log.events]
        assert not {"lost", "balance-failed", "renewal-failed"} & set(kinds), kinds
        assert len(leases.owned()) == 64
    finally:
        leases.stop()


def test_a_lease_not_renewed_stops_permitting_at_its_deadline(own_etcd: EtcdServer) -> None:
    leases = PartitionLeases(etcd_client(own_etcd.url, timeout=1.0), "t", "w1", 4, 2).start()
    try:
        wait_for("partitions held", lambda: len(leases.owned()) == 4, 20)
        part, epoch = next(iter(leases.owned().items()))
        own_etcd.pause()  # renewals hang or fail from now on
        frozen = time.monotonic()
        wait_for("the deadline to pass", lambda: not leases.permits(part, epoch), 10)
        stopped_after = time.monotonic() - frozen
        # never later than the TTL after the last renewal (generous: a loaded machine polls late)
        assert stopped_after <= 2 + 2.0
        assert leases.owned() == {}
        own_etcd.resume()
        wait_for("partitions held again", lambda: len(leases.owned()) == 4, 30)
        assert any("renewal-failed" == kind for _t, kind, _d in leases.log.events)
    finally:
        own_etcd.resume()
        leases.stop()


@pytest.fixture
def own_etcd() -> Iterator[EtcdServer]:
    yield from etcd_server()


def test_lookup_up_with_etcd_starts_one_for_crawler_fleets(tmp_path: Path) -> None:
    need_etcd()
    from lookup.fleet import ServingFleet

    fleet = ServingFleet(tmp_path, ("etcd",), dashboard=False, aggregators=False, quiet=True)
    try:
        fleet._start_servers()
        url = fleet.environment()["LOOKUP_ETCD_URL"]
        assert fleet.describe()["servers"]["etcd"] == {"url": url, "started": True}
        assert etcd_client(url).status()  # a real etcd answers there
    finally:
        fleet.stop()
    assert fleet.etcd is not None and fleet.etcd.proc is None


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--store", "postgresql://127.0.0.1:1/x"], "needs --store postgresql"),
        (["--store", "sqlite:///x", "--coordinator", "etcd://127.0.0.1:1"], "postgresql://"),
        (["--store", "postgresql://h/x", "--coordinator", "ftp://h"], "not an etcd"),
        (["--store", "postgresql://h/x", "--coordinator", "etcd://h:1", "--recrawl"],
         "embedded crawl"),
    ],
)  # fmt: skip
def test_fleet_options_refuse_bad_input_with_a_clear_message(
    extra: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from lookup.cli import main

    code = main(["crawl", "http://a.test/", "--out", str(tmp_path / "o"), "--quiet", *extra])
    assert code == 2
    assert message in capsys.readouterr().err


def test_health_names_the_owner_of_a_host_first_seen_in_the_fetch_log(postgres_db: str) -> None:
    """A host the health view reads only from the fetch log (its host row came after the
    view read the hosts: a crawl goes on while the page reads) still gets its owner — the
    owner is looked up by each row's address, not from a host list read beforehand."""
    store = PgCrawlStore(postgres_db, partitions=4, worker="w1")
    try:
        store.set_meta("partitions", 4)
        for part in range(4):
            assert store.grant_partition(part, 10 + part, f"w{part % 2 + 1}", 1.0)
        store.ensure_host("a.test", "127.0.0.2")
        store.add_fetch(FetchRecord("http://b.test/", "b.test", "127.0.0.3", "page",
                                    time.time(), 0.01, 200, "ok", 0.1))  # fmt: skip
        owner = store_owner(store)
        assert owner is not None
        rows = {r.host: r for r in host_health(store, owner=owner)}
        assert set(rows) == {"a.test", "b.test"}
        for host, address in (("a.test", "127.0.0.2"), ("b.test", "127.0.0.3")):
            part = partition_of(address, 4)
            assert (rows[host].worker, rows[host].epoch) == (f"w{part % 2 + 1}", 10 + part)
    finally:
        store.close()
