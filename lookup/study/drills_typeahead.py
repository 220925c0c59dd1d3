"""Typeahead drills: a bad snapshot reaches the store, and a spike of searches from a few
accounts tries to trend.

Both run the real read path, :class:`~lookup.typeahead.serving.SuggestService`, over a
real snapshot store (:class:`~lookup.typeahead.snapshot.TrieSnapshotStore`) in a scratch
directory. The suggestions are the English queries people searched in the typeahead's own
generated log (:func:`lookup.study.experiments_typeahead.english_queries`), ranked by
count into the real radix trie and written with :func:`~lookup.typeahead.snapshot.
write_snapshot`. The service's validation and the trending thresholds are its own.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from lookup.study.drills_common import outcome, scratch_dir
from lookup.study.experiments_typeahead import english_queries
from lookup.study.measure import Drill, DrillOutcome
from lookup.typeahead.filters import DEFAULT_BLOCKLIST, HotBlocklist, TermBlocklist, looks_private
from lookup.typeahead.serving import SuggestService
from lookup.typeahead.snapshot import Snapshot, open_snapshot_store, write_snapshot
from lookup.typeahead.trending import Clock, TrendingPolicy, TrendingTracker
from lookup.typeahead.trie import K, RadixTrie

__all__ = ["TYPEAHEAD_DRILLS", "bad_snapshot_published", "trending_spike"]

_MARKET = "en-IN"
_EVENTS, _SEED = 30_000, 11
#: brand-new queries for the spike; the first one absent from the log is used
_SPIKE_QUERIES = ("kabaddi league final live", "chess olympiad final live", "zzq cup final live")
_DAMAGES = ("truncated", "corrupt", "none")


def _clean_queries() -> tuple[list[str], list[float]]:
    """The log's English queries with what the build's filters would drop left out."""
    queries, counts = english_queries(_EVENTS, _SEED)
    blocklist = TermBlocklist(DEFAULT_BLOCKLIST)
    kept = [(q, float(c)) for q, c in zip(queries, counts, strict=True)
            if not blocklist.blocks(q) and not looks_private(q)]  # fmt: skip
    return [q for q, _ in kept], [c for _, c in kept]


def _write(directory: Path, queries: list[str], scores: list[float]) -> Path:
    """One market's snapshot of ``queries`` (best first) written into ``directory``."""
    trie = RadixTrie(K)
    trie.add_many((q, rank) for rank, q in enumerate(queries))
    return write_snapshot(directory, _MARKET, trie.build(), queries, scores, {"drill": True})


def _service(root: Path, tracker_policy: TrendingPolicy | None = None,
             clock: Clock = time.time) -> SuggestService:  # fmt: skip
    """A suggest service over the store at ``root / snapshots``, serving its current one."""
    service = SuggestService(
        store=open_snapshot_store(root / "snapshots"),
        blocklist=HotBlocklist(root / "blocklist.txt"),
        markets=(_MARKET,),
    )
    if tracker_policy is not None:
        service.tracker = TrendingTracker(
            tracker_policy,
            clock=clock,
            baseline=service.baseline,
            blocklist=lambda: service.blocklist.effective,
        )
    service.load_current()
    return service


# ----------------------------------------------------------------------------- bad snapshot

BAD_SNAPSHOT_CHOICES = {
    "refused": "The service refuses the new file; every suggestion keeps coming from the "
    "version already serving",
    "served": "The new file is swapped in and answers every lookup from then on, whatever "
    "is wrong with it",
    "errors": "Lookups fail while the new file is loaded and checked",
}


class _Reader(threading.Thread):
    """Looks prefixes up in a loop, noting which version answered and how."""

    def __init__(self, service: SuggestService, prefixes: list[str]) -> None:
        super().__init__(name="drill-typeahead-reader", daemon=True)
        self.service, self.prefixes = service, prefixes
        self.stop = threading.Event()
        self.answers: list[tuple[str, int, str]] = []  # (version, suggestions, phase)
        self.errors = 0
        self.phase = "before"

    def run(self) -> None:
        i = 0
        while not self.stop.is_set():
            p = self.prefixes[i % len(self.prefixes)]
            i += 1
            phase = self.phase
            try:
                got = self.service.lookup(p, _MARKET)
            except Exception:  # any failure of a lookup is what the drill counts
                self.errors += 1
                continue
            self.answers.append((got.version, len(got.suggestions), phase))

    def wait_for(self, count: int, timeout: float = 30.0) -> None:
        """Block until ``count`` answers are in (or ``timeout`` seconds passed)."""
        end = time.monotonic() + timeout
        while len(self.answers) < count and time.monotonic() < end and self.is_alive():
            time.sleep(0.005)


def _corrupt(path: Path) -> None:
    """Flip bytes in the middle of the payload (the header stays readable)."""
    data = bytearray(path.read_bytes())
    for at in range(len(data) // 2, len(data) // 2 + 64):
        data[at] ^= 0xFF
    path.write_bytes(bytes(data))


def bad_snapshot_published(damage: str = "truncated", keep: float = 0.4, compare: bool = True,
                           lookups: int = 600) -> DrillOutcome:  # fmt: skip
    """A new snapshot lands in the store as ``CURRENT`` while lookups flow; the service picks
    it up on its poll (``compare``: validated against the serving one) or an operator
    deploys it without the comparison. ``damage``: ``truncated`` (built from only the share
    ``keep`` of the queries), ``corrupt`` (bytes flipped after the checksum was taken) or
    ``none`` (a healthy rebuild)."""
    compare, lookups = bool(compare), int(lookups)
    if damage not in _DAMAGES:
        raise ValueError(f"damage must be one of {', '.join(_DAMAGES)}")
    if not 0 < keep <= 1 or lookups < 50:
        raise ValueError("need 0 < keep <= 1 and lookups >= 50")
    queries, scores = _clean_queries()
    if damage == "truncated":
        step = max(1, round(1 / keep))
        new_q = [q for i, q in enumerate(queries) if i % step == 0]
        new_s = [s for i, s in enumerate(scores) if i % step == 0]
    else:
        new_q, new_s = queries, [s * 1.01 for s in scores]  # a later build, same queries
    prefixes = sorted({q[:n] for q in queries[:200] for n in (1, 2, 3, 5) if len(q) >= n})
    with scratch_dir("typeahead") as tmp:
        root = Path(tmp)
        store = open_snapshot_store(root / "snapshots")
        first = _write(root / "staging", queries, scores)
        good = Snapshot(first).version
        store.publish(_MARKET, good, first)
        service = _service(root)
        reader = _Reader(service, prefixes)
        reader.start()
        try:
            reader.wait_for(lookups // 2)
            second = _write(root / "staging", new_q, new_s)
            bad = Snapshot(second, verify=False).version
            if damage == "corrupt":
                _corrupt(second)
            reader.phase = "during"
            store.publish(_MARKET, bad, second)  # the build (forced) makes it CURRENT
            if compare:
                changed = service.poll()  # what the service does every second
                message = changed["deployed"].get(_MARKET, "not picked up")
            else:
                out = service.deploy(_MARKET, bad, compare=False)  # the management API's way
                message = out.message
            reader.phase = "after"
            reader.wait_for(len(reader.answers) + lookups // 2)
        finally:
            reader.stop.set()
            reader.join(timeout=30)
            serving = service.snapshot(_MARKET).version
            status = service.market_status()[_MARKET]
            service.close()
    answers = reader.answers
    from_bad = [a for a in answers if a[0] == bad]
    before = [a for a in answers if a[2] == "before"]
    after = [a for a in answers if a[2] != "before"]
    empty_before = sum(n == 0 for _, n, _ in before) / max(1, len(before))
    empty_bad = sum(n == 0 for _, n, _ in from_bad) / max(1, len(from_bad))
    if reader.errors:
        choice = "errors"
    elif from_bad:
        choice = "served"
    else:
        choice = "refused"
    refused_as = status["refused"] == bad
    figures = {
        "suggestions before": len(queries), "suggestions in the new file": len(new_q),
        "validated against the serving one": float(compare),
        "lookups answered": len(answers), "lookups answered once it was published": len(after),
        "failed lookups": reader.errors, "answered by the new file": len(from_bad),
        "answered by the old version": sum(a[0] == good for a in answers),
        "new file refused": float(refused_as), "new file serving at the end": float(serving == bad),
        "empty answers before": round(empty_before, 4),
        "empty answers from the new file": round(empty_bad, 4),
    }  # fmt: skip
    what = {
        "truncated": f"built from {keep:.0%} of the queries",
        "corrupt": "with bytes flipped after its checksum",
        "none": "that is a healthy rebuild",
    }[damage]
    summary = (
        f"A new snapshot {what} was published; {len(after)} lookups answered after that, "
        f"{len(from_bad)} of them by the new file, {reader.errors} failed; serving at the "
        f"end: {'the new file' if serving == bad else 'the previous version'}."
    )
    chain = (
        f"{len(queries):,} English queries from a generated log of {_EVENTS:,} searches "
        f"(unsafe and private ones dropped), ranked into the real radix trie; version "
        f"{good} published and served",
        f"one thread looks up {len(prefixes)} prefixes in a loop ({len(before)} answers "
        "before the new file)",
        f"the new file ({what}, {len(new_q):,} suggestions) is made CURRENT in the store; "
        + (
            "the service's poll loads it beside the old one and validates it against it"
            if compare
            else "an operator deploys it without the comparison (integrity, "
            "blocklist and privacy checks only)"
        ),
        f"outcome: {message}; {len(from_bad)} answers from the new file, empty-answer share "
        f"{empty_before:.1%} before and {empty_bad:.1%} from the new file",
        "choice: a failed lookup → errors; any answer from the new file → served; "
        "otherwise → refused",
    )
    return outcome(BAD_SNAPSHOT_CHOICES, choice, figures, summary, chain)


# ----------------------------------------------------------------------------- trending spike

SPIKE_CHOICES = {
    "shown": "Within minutes it appears among the suggestions for its prefix, blended in "
    "above older favourites",
    "held": "It is counted, but never suggested: too few distinct accounts or networks "
    "stand behind it",
    "batch": "It is too small for the real-time path; only a later batch build could "
    "bring it into the suggestions",
}


def trending_spike(searches: int = 2000, users: int = 3, networks: int = 1, minutes: int = 5,
                   floor: int = 500, min_users: int = 20, min_networks: int = 10,
                   ) -> DrillOutcome:  # fmt: skip
    """``searches`` searches of a brand-new query over ``minutes`` minutes from ``users``
    accounts on ``networks`` client networks, recorded by the service; then its prefix is
    looked up. ``floor``, ``min_users``, ``min_networks``: the trending policy."""
    searches, users, networks, minutes = int(searches), int(users), int(networks), int(minutes)
    floor, min_users, min_networks = int(floor), int(min_users), int(min_networks)
    if searches < 1 or users < 1 or not 1 <= networks <= users or not 1 <= minutes <= 10:
        raise ValueError("need searches >= 1, 1 <= networks <= users, 1 <= minutes <= 10")
    if floor < 1 or min_users < 1 or min_networks < 1:
        raise ValueError("floor, min_users and min_networks must be at least 1")
    policy = TrendingPolicy(floor=floor, min_users=min_users, min_networks=min_networks)
    queries, scores = _clean_queries()
    known = set(queries)
    query = next(q for q in _SPIKE_QUERIES if q not in known)
    prefix = query[:3]
    now = [1_790_000_000.0]
    with scratch_dir("trending") as tmp:
        root = Path(tmp)
        store = open_snapshot_store(root / "snapshots")
        first = _write(root / "staging", queries, scores)
        store.publish(_MARKET, Snapshot(first).version, first)
        service = _service(root, policy, clock=lambda: now[0])
        try:
            before = service.lookup(prefix, _MARKET).suggestions
            step = minutes * 60.0 / searches
            for i in range(searches):
                now[0] += step
                who = i % users
                service.record_search(query, _MARKET, user=f"acct-{who}",
                                      network=f"10.0.{who % networks}.0/24")  # fmt: skip
            now[0] += 1.0
            got = service.lookup(prefix, _MARKET)
            assert service.tracker is not None
            window = service.tracker.window_count(_MARKET, query)
            trending = {t.query: t for t in service.tracker.trending(_MARKET)}
            base = service.baseline(_MARKET, query, now[0])
        finally:
            service.close()
    shown = query in got.suggestions
    term = trending.get(query)
    if shown:
        choice = "shown"
    elif window >= floor:
        choice = "held"
    else:
        choice = "batch"
    figures = {
        "searches": searches, "accounts": users, "networks": networks, "minutes": minutes,
        "window count": window, "floor": floor, "min distinct accounts": min_users,
        "min distinct networks": min_networks, "normal count for the window": round(base, 3),
        "trending": float(term is not None), "boost": round(term.boost, 1) if term else 0.0,
        "shown for its prefix": float(shown),
        "rank among the suggestions": float(got.suggestions.index(query) + 1) if shown else 0.0,
        "suggestions before": len(before),
    }  # fmt: skip
    summary = (
        f"{searches:,} searches of {query!r} in {minutes} min from {users} account(s) on "
        f"{networks} network(s): window count {window:,}, "
        + (
            f"shown at rank {got.suggestions.index(query) + 1} for {prefix!r}"
            if shown
            else f"not suggested for {prefix!r}"
        )
        + "."
    )
    chain = (
        f"{len(queries):,} logged queries served from a snapshot; {query!r} is not among "
        "them, so its normal count is about zero",
        f"{searches:,} searches recorded through the service over {minutes} simulated "
        f"minutes, from {users} account(s) on {networks} network(s)",
        f"the trending job's window holds {window:,} of them; it needs at least {floor} "
        f"searches, {min_users} distinct accounts, {min_networks} distinct networks and "
        f"{policy.ratio:g}× the normal count",
        f"lookup of {prefix!r}: "
        + (
            f"the term is blended in with boost {term.boost:,.0f}"
            if term and shown
            else "the stored top list alone"
        ),
        "choice: in the suggestions → shown; at or above the floor but not shown → held; "
        "otherwise → batch",
    )
    return outcome(SPIKE_CHOICES, choice, figures, summary, chain)


TYPEAHEAD_DRILLS: dict[str, Drill] = {
    "bad_snapshot_published": Drill(
        "bad_snapshot_published",
        "A bad typeahead snapshot is published",
        BAD_SNAPSHOT_CHOICES,
        bad_snapshot_published,
        {"damage": "truncated", "keep": 0.4, "compare": True, "lookups": 600},
    ),
    "trending_spike": Drill(
        "trending_spike",
        "A sudden spike of searches for a new query",
        SPIKE_CHOICES,
        trending_spike,
        {
            "searches": 2000,
            "users": 3,
            "networks": 1,
            "minutes": 5,
            "floor": 500,
            "min_users": 20,
            "min_networks": 10,
        },
    ),
}
