"""The read path: the suggest service that answers a prefix from the current snapshot.

:class:`SuggestService` holds, per market, the snapshot being served and the one
before it. Deploying loads the new file beside the old one, validates it, and swaps
one reference — a lookup reads that reference once, so an in-flight lookup finishes
on the trie it started on and no lookup ever sees a half-built index. Rolling back
swaps the two. A canary (:mod:`~lookup.typeahead.canary`) serves a validated candidate
to a hashed share of clients first and swaps it in only when it held up on live traffic.

Per keystroke it normalises the prefix, walks the trie, reads the stored top 10,
drops anything the hot blocklist blocks (a set lookup per candidate: the blocked ids
are computed once per snapshot and blocklist version), blends in trending terms by
score + boost, and returns.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from lookup import settings
from lookup.errors import Damaged, NotBuilt
from lookup.kit.integrity import DamageLog
from lookup.kit.snapshots import SnapshotStore
from lookup.typeahead.canary import Canary, CanaryPolicy
from lookup.typeahead.filters import HotBlocklist
from lookup.typeahead.fuzzy import TYPO, TypoPolicy, corrections, highlight
from lookup.typeahead.insights import ZeroHits
from lookup.typeahead.normalize import normalize_prefix
from lookup.typeahead.pipeline import open_hot_blocklist, snapshot_store_url
from lookup.typeahead.searchfeed import SearchFeed, open_search_feed, open_trending
from lookup.typeahead.snapshot import (
    Snapshot,
    SnapshotError,
    ValidationPolicy,
    ValidationReport,
    open_snapshot_store,
    snapshot_damage,
    validate,
)
from lookup.typeahead.trending import (
    Clock,
    Pick,
    TrendingPolicy,
    TrendingTerm,
    TrendingTracker,
    usable_query,
)

log = logging.getLogger("lookup.typeahead")
#: One line in the server log per damaged snapshot file (shared by every service).
DAMAGE_LOG = DamageLog(log, "typeahead")

#: The markets this deployment serves (a snapshot for another market is served too).
MARKETS = ("en-IN", "hi-IN")
MAX_LIMIT = 10
#: Prefixes shorter than this get no word-anywhere matches (one or two letters would
#: match a word in nearly every suggestion; Meilisearch waits for a few as well).
INFIX_MIN_CHARS = 3


def not_built(market: str) -> NotBuilt:
    """The error for a market with no snapshot yet, naming the commands that build one."""
    return NotBuilt(
        f"no typeahead snapshot for {market} yet; build one with "
        "`lookup datasets build typeahead` then `lookup typeahead build`",
        command="lookup typeahead build",
    )


def with_infix(
    result: SuggestResult, snap: Snapshot, matches: list[int], limit: int
) -> SuggestResult:
    """``result`` with word-anywhere ``matches`` (ids, best first, none of the prefix's own
    nor blocked) appended up to ``limit``; ``complete`` only if there were none."""
    shown = set(result.suggestions)
    need = limit - len(result.suggestions)
    found = [s for s in snap.texts(matches) if s not in shown][:need]
    if not found:
        return result
    return result._replace(suggestions=result.suggestions + found, complete=False, infix=len(found))


def scores_by_text(snap: Snapshot, result: SuggestResult) -> list[float]:
    """``result``'s scores, those of suggestions appended without one looked up by text."""
    scores = list(result.scores or [])
    for text in result.suggestions[len(scores) :]:
        t = snap.exact(text)
        scores.append(snap.score(t) if t >= 0 else 0.0)
    return scores


class UnknownMarket(LookupError):
    """A market this service knows nothing about."""


class CanaryRefused(ValueError):
    """A canary that cannot start: one is running, or the candidate failed validation."""

    def __init__(self, code: str, message: str, report: ValidationReport | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.report = report


@dataclass(frozen=True)
class Slot:
    """What one market serves: the current snapshot and the previous one (for rollback)."""

    current: Snapshot
    previous: Snapshot | None = None


class SuggestResult(NamedTuple):
    """One answer of the suggest service."""

    q: str
    market: str
    version: str
    complete: bool
    suggestions: list[str]
    trending: tuple[str, ...] = ()
    #: How many of the last suggestions are word-anywhere matches (after the prefix ones).
    infix: int = 0
    #: Each suggestion's score (its decayed popularity, plus a trending boost if blended).
    scores: list[float] | None = None
    #: Typos each suggestion needed (0: it starts with the prefix); empty if none was
    #: corrected. ``variants``: other spellings of the prefix the correction walked.
    typos: tuple[float, ...] = ()
    variants: tuple[str, ...] = ()

    def body(self, highlights: bool = False) -> dict[str, Any]:
        """The ``/v1/suggest`` response body (``match`` only when infix answers are in it:
        one ``prefix``/``infix`` per suggestion; ``typos`` only when some suggestion was
        corrected); ``highlights`` adds the ranges a client may bold."""
        body: dict[str, Any] = {
            "q": self.q,
            "version": self.version,
            "complete": self.complete,
            "suggestions": self.suggestions,
            "scores": self.scores or [0.0] * len(self.suggestions),
        }
        if self.infix:  # prefix matches, then the infix ones, then any typo-corrected ones
            typo = sum(1 for t in self.typos if t > 0)
            n = len(self.suggestions) - self.infix - typo
            body["match"] = ["prefix"] * n + ["infix"] * self.infix + ["typo"] * typo
        if self.typos:
            body["typos"] = list(self.typos)
        if highlights:
            body["highlights"] = [highlight(self.q, s, self.variants) for s in self.suggestions]
        return body


@dataclass
class DeployOutcome:
    """What :meth:`SuggestService.deploy` did."""

    market: str
    version: str
    deployed: bool
    report: ValidationReport | None = None
    previous: str | None = None
    message: str = ""


@dataclass
class SuggestService:
    """Serves suggestions for every market from memory-mapped snapshots."""

    store: SnapshotStore[Snapshot]
    blocklist: HotBlocklist
    tracker: TrendingTracker | None = None
    markets: tuple[str, ...] = MARKETS
    policy: ValidationPolicy = field(default_factory=ValidationPolicy)
    search_log: SearchFeed | None = None
    _slots: dict[str, Slot] = field(default_factory=dict, repr=False)
    _refused: dict[str, str] = field(default_factory=dict, repr=False)
    #: Per market, why its current snapshot could not be loaded (checksum, missing file).
    _damaged: dict[str, Damaged] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    #: Per market, the latest canary (running or decided) and its candidate while it runs.
    _canaries: dict[str, Canary] = field(default_factory=dict, repr=False)
    _candidates: dict[str, Snapshot] = field(default_factory=dict, repr=False)
    #: Whether a short page is filled with word-anywhere matches (when the snapshot has
    #: the index). The shard router has none: an oracle for it turns this off.
    infix: bool = True
    #: Per market, the prefixes answered with nothing (issue 27 item 10's zero hits).
    zero_hits: ZeroHits = field(default_factory=ZeroHits, repr=False)
    #: The typo-tolerant fallback (settings ``typeahead_typo_*``), and the cache of its
    #: answers and of the word-anywhere ones (bounded by ``typo.cache_entries``).
    typo: TypoPolicy = field(default_factory=TypoPolicy.from_settings)
    _typo_cache: dict[tuple[Any, ...], Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_data_dir(
        cls,
        data_dir: str | os.PathLike[str],
        *,
        clock: Clock = time.time,
        trending: TrendingPolicy = TrendingPolicy(),
        load: bool = True,
    ) -> SuggestService:
        """A service over ``DATA_DIR/typeahead`` (snapshots, hot blocklist, search log);
        setting ``typeahead_searches_url`` says where searches and trending windows live
        (a fleet's Redis, else the searches CSV and this process's memory)."""
        feed_url = settings.get("typeahead_searches_url")
        service = cls(
            store=open_snapshot_store(snapshot_store_url(data_dir)),
            blocklist=open_hot_blocklist(data_dir),
            search_log=open_search_feed(feed_url, data_dir, clock=clock),
        )
        service.tracker = open_trending(
            feed_url,
            trending,
            clock=clock,
            baseline=service.baseline,
            blocklist=lambda: service.blocklist.effective,
        )
        if load:
            service.load_current()
        return service

    # -- deployment

    def load_current(self) -> dict[str, str]:
        """Load every market's ``CURRENT`` snapshot from the store (integrity-checked)."""
        loaded = {}
        for market in self.store.names():
            version = self.store.current(market)
            slot = self._slots.get(market)
            if version is None or (slot and slot.current.version == version):
                continue
            outcome = self.deploy(market, version, compare=slot is not None)
            if outcome.deployed:
                loaded[market] = version
        return loaded

    def deploy(
        self, market: str, version: str | None = None, *, compare: bool = True
    ) -> DeployOutcome:
        """Load a stored version beside the current one, validate it, swap one pointer.

        ``compare=False`` skips the comparison with the current snapshot (size, probes)
        but never the integrity, blocklist and privacy checks. A refused snapshot
        changes nothing: the current one keeps serving.
        """
        version = version or self.store.current(market)
        if version is None:
            raise not_built(market)
        try:
            new = self.store.open(market, version)
        except (SnapshotError, ValueError, LookupError) as exc:
            # a damaged or missing file: that market answers 503 DAMAGED (or keeps serving
            # the snapshot it has), every other market serves on
            self._refused[market] = version
            damage = snapshot_damage(self.store, market, version, exc)
            if version == self.store.current(market):  # not an operator's bad choice
                self._damaged[market] = damage
                DAMAGE_LOG.report(damage)
            return DeployOutcome(market, version, False, message=damage.message)
        assert new is not None
        with self._lock:
            slot = self._slots.get(market)
            current = slot.current if slot else None
            report = validate(
                new, current if compare else None, self.blocklist.effective, self.policy
            )
            if not report.ok:
                self._refused[market] = version
                failed = "; ".join(f"{c.name}: {c.detail}" for c in report.failures())
                return DeployOutcome(
                    market,
                    version,
                    False,
                    report,
                    current.version if current else None,
                    f"refused: {failed}",
                )
            self._slots[market] = Slot(new, current)  # the swap: one reference replaced
            self._refused.pop(market, None)
            self._damaged.pop(market, None)
            self._end_canary(market, "ABORTED", f"{version} was deployed over it")
        if self.store.current(market) != version:
            self.store.activate(market, version)
        return DeployOutcome(
            market, version, True, report, current.version if current else None, "deployed"
        )

    def rollback(self, market: str) -> DeployOutcome:
        """Swap back to the previous snapshot (one step); ``LookupError`` if there is none."""
        with self._lock:
            slot = self._slots.get(market)
            if slot is None:
                raise not_built(market)
            if slot.previous is None:
                raise LookupError(f"{market} has no previous snapshot to roll back to")
            if slot.previous.version not in self.store.versions(market):
                raise LookupError(f"the file of {slot.previous.version} was pruned from the store")
            self._slots[market] = Slot(slot.previous, slot.current)
            self._end_canary(market, "ABORTED", "the market was rolled back")
        self.store.activate(market, slot.previous.version)
        return DeployOutcome(
            market, slot.previous.version, True, None, slot.current.version, "rolled back"
        )

    def poll(self) -> dict[str, Any]:
        """Pick up outside changes: the blocklist file, and snapshots published by the CLI."""
        changed: dict[str, Any] = {"blocklist": self.blocklist.refresh(), "deployed": {}}
        changed["canaries"] = self.judge_canaries()
        for market in self.store.names():
            version = self.store.current(market)
            slot = self._slots.get(market)
            if version is None or (slot and slot.current.version == version):
                continue
            if self._refused.get(market) == version:
                continue
            out = self.deploy(market, version, compare=slot is not None)
            changed["deployed"][market] = out.message
        return changed

    # -- canary (see lookup.typeahead.canary)

    def start_canary(self, market: str, version: str, policy: CanaryPolicy | None = None) -> Canary:
        """Serve stored ``version`` to a share of clients beside the current snapshot.

        The candidate passes the same integrity, blocklist and privacy checks as a
        deploy (the comparison with the current snapshot is what the canary does, on
        live traffic). :class:`CanaryRefused` when a canary runs or validation fails."""
        slot = self._slots.get(market)
        if slot is None:
            self.snapshot(market)  # raises UnknownMarket or NotBuilt
        assert slot is not None
        running = self._canaries.get(market)
        if running is not None and running.running:
            raise CanaryRefused(
                "CANARY_RUNNING", f"a canary of {running.version} is running for {market}"
            )
        if version == slot.current.version:
            raise CanaryRefused("ALREADY_SERVING", f"{market} already serves {version}")
        try:
            candidate = self.store.open(market, version)
        except (SnapshotError, ValueError) as exc:
            raise CanaryRefused("VALIDATION_FAILED", str(exc)) from None
        assert candidate is not None
        report = validate(candidate, None, self.blocklist.effective, self.policy)
        if not report.ok:
            failed = "; ".join(f"{c.name}: {c.detail}" for c in report.failures())
            raise CanaryRefused("VALIDATION_FAILED", f"refused: {failed}", report)
        canary = Canary(market, version, slot.current.version, policy or CanaryPolicy())
        with self._lock:
            other = self._canaries.get(market)
            if other is not None and other.running:  # started meanwhile
                raise CanaryRefused("CANARY_RUNNING", f"a canary of {other.version} is running")
            self._candidates[market] = candidate
            self._canaries[market] = canary
        return canary

    def canary(self, market: str) -> Canary | None:
        """The market's latest canary (running or decided), if any."""
        return self._canaries.get(market)

    def abort_canary(self, market: str, reason: str = "aborted by an operator") -> Canary:
        """Stop a running canary; everyone gets the current snapshot again."""
        canary = self._canaries.get(market)
        if canary is None or not canary.running:
            raise LookupError(f"no canary is running for {market}")
        with self._lock:
            self._end_canary(market, "ABORTED", reason)
        return canary

    def _end_canary(self, market: str, state: str, reason: str) -> None:
        """Decide a running canary and drop its candidate (the caller holds the lock)."""
        canary = self._canaries.get(market)
        if canary is not None and canary.running:
            canary.decide(state, reason)
        self._candidates.pop(market, None)

    def judge_canaries(self) -> dict[str, str]:
        """Apply every running canary's verdict: promote (swap the candidate in) or roll
        back (drop it). Called by :meth:`poll`; returns ``{market: outcome}``."""
        out: dict[str, str] = {}
        for market, canary in list(self._canaries.items()):
            decision = canary.verdict()
            if decision is None:
                continue
            action, why = decision
            with self._lock:
                candidate = self._candidates.get(market)
                slot = self._slots.get(market)
                if not canary.running or candidate is None or slot is None:
                    continue
                if action == "promote":
                    self._slots[market] = Slot(candidate, slot.current)
                    self._end_canary(market, "PROMOTED", why)
                else:
                    self._end_canary(market, "ROLLED_BACK", why)
            if action == "promote" and self.store.current(market) != canary.version:
                self.store.activate(market, canary.version)
            out[market] = f"{canary.state}: {why}"
        return out

    def answer_token(self, market: str) -> tuple[str, int, int] | None:
        """What an answer for ``market`` is computed from besides the request: the live
        snapshot's version, the hot blocklist's and the trending sets'. An answer kept
        with an older token is out of date (:class:`~lookup.kit.answercache.AnswerCache`).
        None when answers must not be shared: no snapshot, or a canary running (the answer
        then depends on the client)."""
        slot = self._slots.get(market)
        if slot is None or self.canary_running(market):
            return None
        tracker = self.tracker
        trend = tracker.sets_version() if tracker is not None else 0
        return slot.current.version, self.blocklist.current()[0], trend

    def canary_running(self, market: str) -> bool:
        """Whether answers for ``market`` depend on the client (no shared caching then)."""
        canary = self._canaries.get(market)
        return canary is not None and canary.running

    def snapshot(self, market: str) -> Snapshot:
        """The snapshot serving ``market`` now."""
        slot = self._slots.get(market)
        if slot is None:
            damage = self._damaged.get(market)
            if damage is not None:
                raise damage
            if market not in self.markets and market not in self.store.names():
                raise UnknownMarket(market)
            raise not_built(market)
        return slot.current

    def known_markets(self) -> list[str]:
        """Markets configured or served."""
        return sorted(set(self.markets) | set(self._slots))

    def status(self) -> dict[str, Any]:
        """Health (:class:`~lookup.kit.service.LiveService`): what each market serves."""
        markets = self.market_status()
        served = {m: s["current"]["version"] for m, s in markets.items() if s["current"]}
        damaged = {m: d.report() for m, d in self._damaged.items()}
        if any(m not in served for m in damaged):  # a market with nothing to serve
            first = next(d for m, d in self._damaged.items() if m not in served)
            return {**first.report(), "markets": served, "damaged": damaged}
        if not served:
            return {"status": "NOT_BUILT", "message": not_built("any market").message}
        out = {"status": "ok", "markets": served, "blocklistTerms": len(self.blocklist.hot_terms)}
        if self.blocklist.path is None:  # a shared list: say which server (never a password)
            out["blocklist"] = self.blocklist.describe()
        if damaged:  # a newer snapshot is damaged; the market serves the one it had
            out["damaged"] = damaged
        return out

    def close(self) -> None:
        """Let go of every served snapshot (their mapped files close with them) and of the
        blocklist's connections."""
        self._slots.clear()
        self.blocklist.close()
        self.stop_feeds()

    def start_feeds(self) -> None:
        """Start the background work of the searches feed (a stream's copier) and of the
        trending tracker (a shared store's refresher); none for the embedded ones."""
        if self.search_log is not None:
            self.search_log.start()
        if self.tracker is not None:
            self.tracker.start()

    def stop_feeds(self) -> None:
        """Stop what :meth:`start_feeds` started (idempotent)."""
        if self.search_log is not None:
            self.search_log.close()
        if self.tracker is not None:
            self.tracker.close()

    def market_status(self) -> dict[str, Any]:
        """Per market: the serving version, the previous one, and what is stored."""
        out: dict[str, Any] = {}
        for market in self.known_markets():
            slot = self._slots.get(market)
            out[market] = {
                "current": slot.current.summary() if slot else None,
                "previous": slot.previous.version if slot and slot.previous else None,
                "stored": self.store.versions(market) if market in self.store.names() else [],
                "refused": self._refused.get(market),
                "canary": self._canaries[market].to_dict() if market in self._canaries else None,
            }
        return out

    # -- serving

    def lookup(
        self,
        prefix: str,
        market: str = "en-IN",
        limit: int = MAX_LIMIT,
        client: str | None = None,
    ) -> SuggestResult:
        """The suggestions for what the user has typed so far (see the module docstring).

        During a canary, a ``client`` (its identity: a session id, a token, an address)
        whose hash falls in the canary's share is answered by the candidate, compared
        in the shadow with the current snapshot on the same prefix."""
        slot = self._slots.get(market)
        if slot is None:
            self.snapshot(market)  # raises UnknownMarket or NotBuilt
        snap = slot.current  # type: ignore[union-attr]
        p = normalize_prefix(prefix)
        canary = self._canaries.get(market)
        if canary is not None and client is not None and canary.running:
            candidate = self._candidates.get(market)
            if candidate is not None and canary.takes(client):
                return self._canary_answer(canary, candidate, snap, p, market, limit)
            canary.record_control()
        result = self._answer(snap, p, market, limit)
        if not result.suggestions:
            self.zero_hits.add(market, p)
        return result

    def _canary_answer(
        self, canary: Canary, candidate: Snapshot, snap: Snapshot, p: str, market: str, limit: int
    ) -> SuggestResult:
        """The candidate's answer, with the current snapshot's in the shadow for the
        comparison; the current one's if the candidate fails."""
        t0 = time.perf_counter()
        try:
            ours: SuggestResult | None = self._answer(candidate, p, market, limit)
        except Exception:  # a broken candidate must never fail the request
            ours = None
        t1 = time.perf_counter()
        theirs = self._answer(snap, p, market, limit)
        t2 = time.perf_counter()
        canary.record(
            None if ours is None else ours.suggestions,
            theirs.suggestions,
            (t1 - t0) * 1000,
            (t2 - t1) * 1000,
        )
        return theirs if ours is None else ours

    def _answer(self, snap: Snapshot, p: str, market: str, limit: int) -> SuggestResult:
        """One normalised prefix answered from ``snap``: stored top list, hot blocklist,
        trending blended in."""
        version, effective = self.blocklist.current()  # together: edits land on other threads
        excluded = snap.blocked_ids(effective, version) if len(effective) else frozenset()
        ids, complete, _ = snap.find(p, limit, excluded)
        tracker = self.tracker
        boosted = tracker.matching(market, p) if tracker is not None else None
        if not boosted:
            result = SuggestResult(
                p, market, snap.version, complete, snap.texts(ids), scores=snap.scores_of(ids)
            )
        else:
            result = self._blend(p, market, snap, ids, complete, boosted, limit)
        if (
            len(result.suggestions) < limit
            and snap.infix is not None
            and self.infix
            and len(p) >= INFIX_MIN_CHARS
        ):  # room left: words inside
            matches = self._infix_matches(snap, p, ids, excluded, limit, version)
            result = with_infix(result, snap, matches, limit)
            if result.scores is not None and len(result.scores) < len(result.suggestions):
                result = result._replace(scores=scores_by_text(snap, result))
        if len(result.suggestions) < limit and self.typo.wanted(len(ids), limit, len(p)):
            return self._corrected(snap, result, limit, excluded, version)
        return result

    def _infix_matches(
        self,
        snap: Snapshot,
        p: str,
        ids: list[int],
        excluded: frozenset[int],
        limit: int,
        token: object,
    ) -> list[int]:
        """Word-anywhere ids for ``p`` (:mod:`~lookup.typeahead.infix`), cached like the typo
        fallback per snapshot, prefix, page size and blocklist version: the walk over the
        index costs ~0.3 ms, a repeated short page then costs a dictionary lookup."""
        assert snap.infix is not None
        key = ("infix", snap.version, p, limit, token)
        found = self._typo_cache.get(key)
        if found is None:
            found = snap.infix.find(p, limit, excluded | set(ids))
            if len(self._typo_cache) >= self.typo.cache_entries:
                self._typo_cache.clear()  # a bound; entries are cheap to find again
            self._typo_cache[key] = found
        return list(found)

    def _corrected(
        self,
        snap: Snapshot,
        result: SuggestResult,
        limit: int,
        excluded: frozenset[int],
        token: object,
    ) -> SuggestResult:
        """Fill a short page with typo-tolerant matches (:mod:`~lookup.typeahead.fuzzy`),
        ranked after the exact ones and marked with their typos; the fallback's answer is
        cached per snapshot, prefix, page size and blocklist version."""
        p = result.q
        n = limit + len(result.suggestions)  # some may be shown already
        key = (snap.version, p, n, token)
        found = self._typo_cache.get(key)
        if found is None:
            found = corrections(snap, p, n, excluded, self.typo)
            if len(self._typo_cache) >= self.typo.cache_entries:
                self._typo_cache.clear()  # a bound; entries are cheap to find again
            self._typo_cache[key] = found
        fixes, variants = found
        texts = list(result.suggestions)
        scores = scores_by_text(snap, result)
        typos = [0.0] * len(texts)
        have = set(texts)
        for target, cost in fixes:
            text = snap.string(target)
            if len(texts) >= limit:
                break
            if text in have:
                continue
            have.add(text)
            texts.append(text)
            scores.append(snap.score(target))
            typos.append(cost / TYPO)
        if len(texts) == len(result.suggestions):
            return result._replace(scores=scores)
        return result._replace(
            complete=False, suggestions=texts, scores=scores, typos=tuple(typos),
            variants=variants,
        )  # fmt: skip

    def _blend(
        self,
        p: str,
        market: str,
        snap: Snapshot,
        ids: list[int],
        complete: bool,
        boosted: list[TrendingTerm],
        limit: int,
    ) -> SuggestResult:
        """Re-rank the stored top ``limit`` plus trending terms by score + boost, deduplicated."""
        total: dict[str, float] = {snap.string(i): snap.score(i) for i in ids}
        used = []
        for term in boosted:
            if self.blocklist.blocks(term.query):
                continue
            q = term.query
            if q not in total:
                t = snap.exact(q)
                total[q] = snap.score(t) if t >= 0 and snap.string(t) == q else 0.0
            total[q] += term.boost
            used.append(q)
        ranked = sorted(total, key=lambda s: (-total[s], s))[:limit]
        return SuggestResult(
            p,
            market,
            snap.version,
            complete and len(total) <= limit,
            ranked,
            tuple(q for q in used if q in ranked),
            scores=[total[s] for s in ranked],
        )

    def baseline(self, market: str, query: str, now: float) -> float:
        """Expected searches of ``query`` in a trending window at ``now`` (the "normal" rate).

        From the snapshot: a score ≈ per-period count / (1 − factor) in steady state,
        spread over the hours of the day by the market's traffic share. Near zero for
        a query the snapshot does not know.
        """
        slot = self._slots.get(market)
        if slot is None or self.tracker is None:
            return 0.0
        snap = slot.current
        t = snap.exact(query)
        if t < 0:
            return 0.0
        decay = snap.meta.get("decay", {})
        period_s = float(decay.get("period_s", 86400))
        factor = float(decay.get("factor", 0.5 ** (1 / 7)))
        per_second = snap.score(t) * (1.0 - factor) / period_s
        shares = snap.meta.get("hour_share") or [1 / 24] * 24
        hour = int(((now + 19800) // 3600) % 24)
        return per_second * self.tracker.policy.window_s * 24.0 * float(shares[hour])

    def record_search(
        self,
        query: str,
        market: str,
        user: str | None = None,
        network: str | None = None,
        *,
        is_bot: bool = False,
        pick: Pick | None = None,
    ) -> str | None:
        """A submitted search: count it for trending and append it for the next build.
        A bot's search is only logged (flagged, as the query log flags them): it never
        trends, and the build weighs it like the log's bots."""
        if market not in self.known_markets():
            raise UnknownMarket(market)
        if is_bot:
            q = usable_query(query)
        else:
            q = self.tracker.record(query, market, user, network) if self.tracker else None
        if q is not None and self.search_log is not None:
            self.search_log.append(q, market, user, is_bot, pick)
        return q

    def trace(self, prefix: str, market: str = "en-IN", repeat: int = 200) -> dict[str, Any]:
        """The trie walk for a prefix: nodes visited, the stored list, the time a lookup takes."""
        snap = self.snapshot(market)
        p = normalize_prefix(prefix)
        node, steps = snap.reader.walk(p)
        t0 = time.perf_counter_ns()
        for _ in range(repeat):
            snap.reader.locate(p)
        walk_ns = (time.perf_counter_ns() - t0) / repeat
        t0 = time.perf_counter_ns()
        for _ in range(repeat):
            self.lookup(prefix, market)
        lookup_ns = (time.perf_counter_ns() - t0) / repeat
        stored = [snap.string(i) for i in snap.reader.top(node)] if node >= 0 else []
        return {
            "q": p,
            "market": market,
            "version": snap.version,
            "found": node >= 0,
            "nodesVisited": len(steps),
            "path": [
                {"node": s.node, "label": s.label, "depth": s.depth, "probes": s.probes}
                for s in steps
            ],
            "stored": stored,
            "complete": bool(node >= 0 and snap.reader.is_complete(node)),
            "walkMicros": round(walk_ns / 1000, 3),
            "lookupMicros": round(lookup_ns / 1000, 3),
            "codePoints": [f"U+{ord(c):04X}" for c in p],
        }


__all__ = [
    "MARKETS",
    "MAX_LIMIT",
    "CanaryRefused",
    "DeployOutcome",
    "NotBuilt",
    "Slot",
    "SuggestResult",
    "SuggestService",
    "UnknownMarket",
]
