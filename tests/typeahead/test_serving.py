"""The suggest service: atomic swap, rollback, refusal, the hot blocklist, polling."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from lookup.typeahead.pipeline import snapshot_root
from lookup.typeahead.serving import NotBuilt, SuggestService, UnknownMarket
from lookup.typeahead.snapshot import open_snapshot_store, write_snapshot
from lookup.typeahead.trie import RadixTrie

from .conftest import Built


def publish_variant(data_dir: Path, market: str, strings: list[str], version: str) -> str:
    """Write a snapshot with these suggestions into the store (not yet current)."""
    trie = RadixTrie()
    for i, s in enumerate(strings):
        trie.add(s, i)
    scores = np.arange(len(strings), 0, -1, dtype=float)
    root = snapshot_root(data_dir) / market
    write_snapshot(root / f"{version}.trie", market, trie.build(), strings, scores, version=version)
    return version


def test_swap_and_rollback_move_the_pointer_on_disk(data_dir: Path) -> None:
    service = SuggestService.from_data_dir(data_dir)
    old = service.snapshot("en-IN")
    strings = old.strings()
    # a slightly changed build: the same suggestions, one new one at the top
    v = publish_variant(data_dir, "en-IN", ["zebra crossing", *strings], "20991231T000000Z-abcdef")
    held = service.snapshot("en-IN")  # a lookup that started before the swap holds this
    outcome = service.deploy("en-IN", v)
    assert outcome.deployed, outcome.message
    assert service.snapshot("en-IN").version == v
    assert held.version == old.version and held.suggest("z") != service.snapshot("en-IN").suggest(
        "z"
    )
    assert service.lookup("zeb", "en-IN").suggestions[0] == "zebra crossing"
    assert service.store.current("en-IN") == v
    # one-step rollback, and the pointer on disk follows
    back = service.rollback("en-IN")
    assert back.version == old.version and service.lookup("zeb", "en-IN").version == old.version
    assert service.store.current("en-IN") == old.version
    # rolling back again goes forward (the two swap places)
    assert service.rollback("en-IN").version == v


def test_swap_keeps_in_flight_lookups_on_their_trie(data_dir: Path) -> None:
    """Readers in threads look up while the main thread swaps back and forth: every answer
    is wholly one version's (its suggestions are that trie's), and a lookup holding a
    snapshot across swaps keeps answering from it."""
    service = SuggestService.from_data_dir(data_dir)
    old = service.snapshot("en-IN")
    v = publish_variant(
        data_dir, "en-IN", ["zebra crossing", *old.strings()], "20991231T000000Z-fedcba"
    )
    assert service.deploy("en-IN", v).deployed
    new = service.snapshot("en-IN")
    prefixes = ["z", "ze", "i", "ip", "s", ""]
    want = {
        snap.version: {p: service.lookup(p, "en-IN").suggestions for p in prefixes}
        for snap in (new,)
    }
    service.rollback("en-IN")
    want[old.version] = {p: service.lookup(p, "en-IN").suggestions for p in prefixes}
    assert want[old.version]["z"] != want[v]["z"]  # the two tries answer differently
    stop = threading.Event()
    done = [0]
    seen: set[str] = set()
    problems: list[str] = []
    lock = threading.Lock()

    def reader(k: int) -> None:
        i = k
        while not stop.is_set():
            p = prefixes[i % len(prefixes)]
            i += 1
            try:
                got = service.lookup(p, "en-IN")
                if got.suggestions != want[got.version][p]:
                    problems.append(f"{got.version} answered {p!r} with another trie's list")
            except Exception as exc:  # noqa: BLE001 - any failure is the finding
                problems.append(repr(exc))
            with lock:
                seen.add(got.version)
                done[0] += 1

    def held_reader(ready: threading.Barrier, swapped: threading.Event) -> None:
        snap = service.snapshot("en-IN")  # in flight: started before the swaps
        before = {p: snap.suggest(p) for p in prefixes}
        ready.wait()
        swapped.wait(30)
        if snap.version != old.version or {p: snap.suggest(p) for p in prefixes} != before:
            problems.append("a lookup in flight across the swaps changed tries")

    ready, swapped = threading.Barrier(2), threading.Event()
    threads = [threading.Thread(target=reader, args=(k,)) for k in range(4)]
    threads.append(threading.Thread(target=held_reader, args=(ready, swapped)))
    for t in threads:
        t.start()
    ready.wait()
    try:
        for _ in range(20):  # rollback goes forward and back: the two swap places
            service.rollback("en-IN")
            with lock:
                mark = done[0]
            deadline = time.monotonic() + 30  # a hang guard, not a timing assertion
            while done[0] < mark + 8 and time.monotonic() < deadline:
                time.sleep(0.001)
        swapped.set()
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    assert problems == []
    assert seen == {old.version, v}  # both tries answered while the swaps went on
    assert done[0] >= 160


def test_a_bad_snapshot_is_refused_and_the_old_one_keeps_serving(data_dir: Path) -> None:
    service = SuggestService.from_data_dir(data_dir)
    before = service.lookup("i", "en-IN")
    v = publish_variant(data_dir, "en-IN", ["only", "three", "things"], "20991231T000000Z-badbad")
    outcome = service.deploy("en-IN", v)
    assert not outcome.deployed and "size" in outcome.message
    assert service.lookup("i", "en-IN") == before
    # ... and one with a blocked term in it
    strings = service.snapshot("en-IN").strings()
    v2 = publish_variant(
        data_dir, "en-IN", [*strings[:-1], "buy fake aadhaar card"], "20991231T000001Z-badbad"
    )
    outcome = service.deploy("en-IN", v2)
    assert not outcome.deployed and "blocklist" in outcome.message
    # a corrupt file is refused too
    path = snapshot_root(data_dir) / "en-IN" / f"{v2}.trie"
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 1
    path.write_bytes(bytes(raw))
    assert not service.deploy("en-IN", v2).deployed
    assert service.lookup("i", "en-IN") == before


def test_hot_blocklist_takes_effect_at_once_and_refills(data_dir: Path) -> None:
    service = SuggestService.from_data_dir(data_dir)
    before = service.lookup("i", "en-IN").suggestions
    victim = before[0]
    service.blocklist.add([victim])
    after = service.lookup("i", "en-IN").suggestions
    assert victim not in after
    assert after[: len(before) - 1] == before[1:]  # the rest move up ...
    assert len(after) == len(before)  # ... and the next best refills the tenth place
    snap = service.snapshot("en-IN")
    oracle = [s for s in snap.strings() if s.startswith("i") and not service.blocklist.blocks(s)]
    assert after == oracle[:10]
    service.blocklist.remove(victim)
    assert service.lookup("i", "en-IN").suggestions == before


def test_blocklist_file_edits_are_picked_up_by_poll(data_dir: Path) -> None:
    service = SuggestService.from_data_dir(data_dir)
    victim = service.lookup("", "en-IN").suggestions[0]
    path = data_dir / "typeahead" / "blocklist.txt"
    path.write_text(victim + "\n", encoding="utf-8")
    future = time.time() + 5
    os.utime(path, (future, future))
    assert service.poll()["blocklist"] is True
    assert victim not in service.lookup("", "en-IN").suggestions


def test_poll_deploys_what_the_build_published(data_dir: Path) -> None:
    service = SuggestService.from_data_dir(data_dir)
    strings = service.snapshot("hi-IN").strings()
    v = publish_variant(data_dir, "hi-IN", strings, "20991231T000000Z-123456")
    open_snapshot_store(snapshot_root(data_dir)).activate("hi-IN", v)
    result = service.poll()
    assert result["deployed"] == {"hi-IN": "deployed"}
    assert service.snapshot("hi-IN").version == v
    assert service.poll()["deployed"] == {}


def test_not_built_and_unknown_market(tmp_path: Path, built: Built) -> None:
    empty = SuggestService.from_data_dir(tmp_path)
    with pytest.raises(NotBuilt, match="lookup typeahead build"):
        empty.lookup("ip", "en-IN")
    service = SuggestService.from_data_dir(built.data_dir)
    with pytest.raises(UnknownMarket):
        service.lookup("ip", "fr-FR")
    with pytest.raises(LookupError):
        service.rollback("en-IN")  # nothing deployed before this one


def test_limit_and_complete(built: Built) -> None:
    service = SuggestService.from_data_dir(built.data_dir)
    full = service.lookup("s", "en-IN")
    assert len(full.suggestions) == 10 and not full.complete
    assert service.lookup("s", "en-IN", 3).suggestions == full.suggestions[:3]
    unseen = service.lookup("qqqzzz", "en-IN")
    assert unseen.suggestions == [] and unseen.complete


def test_trace_explains_the_walk(built: Built) -> None:
    service = SuggestService.from_data_dir(built.data_dir)
    t = service.trace("iph", "en-IN", repeat=5)
    assert t["found"] and t["path"][0]["label"] == "" and t["path"][-1]["depth"] == 3
    assert "".join(s["label"] for s in t["path"]).startswith("iph")
    assert t["stored"] == service.lookup("iph", "en-IN").suggestions
    assert t["codePoints"] == ["U+0069", "U+0070", "U+0068"]
    assert service.trace("क्ष", "hi-IN", repeat=1)["codePoints"] == ["U+0915", "U+094D", "U+0937"]
