"""The typo-tolerant fallback through the shard router: the same answers as one machine.

Shard servers are real processes, the router the real app over loopback HTTP (as in
``test_shard_http.py``). A typo may move a prefix into another shard's range, so the
router asks every shard for its corrections and merges them by typos, then global rank.
The oracle is the unsharded service over the same snapshot, with its word-anywhere index
off (the shards are cut without one).
"""

from __future__ import annotations

import random
import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from lookup.server import create_app
from lookup.typeahead.router import ShardRouter, install_router
from lookup.typeahead.serving import SuggestService
from lookup.typeahead.sharding import ensure_shard_sets
from lookup.typeahead.supervisor import ShardCluster
from tests.conftest import serve_in_thread

from .conftest import Built

N_SHARDS = 3


@pytest.fixture(scope="module")
def routed(
    built: Built, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Path, ShardRouter]]:
    data_dir = tmp_path_factory.mktemp("typo-shards") / "data"
    shutil.copytree(built.data_dir, data_dir)
    root = ensure_shard_sets(data_dir, N_SHARDS)
    with ShardCluster(root, N_SHARDS) as cluster:
        router = ShardRouter.from_root(root, cluster.addresses)
        app = create_app(data_dir, subsystems=[lambda m: install_router(m, router)])
        with serve_in_thread(app) as url:
            yield url, data_dir, router


def misspelt(keys: list[str], seed: int, count: int = 40) -> list[str]:
    """Prefixes of keys with one letter swapped, dropped or replaced (after the first)."""
    rng = random.Random(seed)
    out = set()
    for key in rng.sample(keys, min(count, len(keys))):
        p = list(key[: rng.randint(4, max(4, min(len(key), 12)))])
        i = rng.randrange(1, len(p))
        op = rng.choice(["swap", "drop", "replace"])
        if op == "swap" and i + 1 < len(p):
            p[i], p[i + 1] = p[i + 1], p[i]
        elif op == "drop":
            del p[i]
        else:
            p[i] = rng.choice("aeiounst")
        out.add("".join(p))
    return sorted(out)


@pytest.mark.parametrize(("market", "below"), [("en-IN", 1), ("hi-IN", 1), ("en-IN", 10)])
def test_routed_corrections_equal_one_machine(
    routed: tuple[str, Path, ShardRouter], market: str, below: int
) -> None:
    url, data_dir, router = routed
    router.typo = replace(router.typo, below=below)  # 10: short pages are filled too
    oracle = SuggestService.from_data_dir(data_dir)
    oracle.typo = router.typo
    snap = oracle.snapshot(market)
    snap.infix = None  # the shards hold no word-anywhere index
    keys = [k for k, _ in snap.reader.iter_keys() if len(k) >= 5]
    corrected = 0
    with httpx.Client(base_url=url, trust_env=False, timeout=30.0) as client:
        for q in [*misspelt(keys, seed=len(market)), "ipohne", "iphomw", "dilli", "mosam"]:
            r = client.get(f"/v1/suggest?q={quote(q, safe='')}&market={market}&highlight=1")
            assert r.status_code == 200, (q, r.text)
            want = oracle.lookup(q, market).body(highlights=True)
            assert r.json() == want, q
            corrected += "typos" in want
    assert corrected >= 10  # the fallback was exercised, not only exact prefixes
    oracle.close()
