"""The coordinator: fan a query out to every shard, keep the tail short, merge, paginate.

Sharding by document means every query touches every shard, so a query is as slow as
its slowest shard: with 100 shards each slow one time in a thousand, 1 − 0.999¹⁰⁰ ≈
9.5 % of queries are slow. Two mechanisms fight that here:

* **hedged requests** — every shard has two replicas; if the primary has not answered
  by about the shard's 95th-percentile latency, the same request goes to the other
  replica and the first answer wins; a primary that has lost most of its latest races
  gets the hedge sent along with the request (a *tied request*) until it wins again;
* **per-shard deadline** — a shard that has not answered by the deadline is left out;
  the response says so in ``shardsAnswered`` and the total is extrapolated.

Replicas run in their own thread pools over the shared, immutable snapshot, and each
has a **fault switch** (slow by N ms with probability p, or dead) so both mechanisms
can be watched working. Snippets are made for the final page only. The same code runs
over shard server processes (:mod:`.remote`): only the replicas change.

**Caller runs one shard.** Handing a request to another thread and back costs a GIL
hand-over and a wake-up on each side — for a one-shard index, about as much as the
query itself on a loaded machine. So the coordinator sends every other shard to its
primary's pool first and then answers the first shard whose primary has no fault
switch set on its own thread, as that primary (it counts as the primary's request and
win). The mechanisms keep their meaning: that shard is the one a hedge could not help —
its primary is local and healthy, and its request waits in no queue — while a shard
with a slow or dead primary always goes through its pool and is hedged as before; a
hedge due while the coordinator was busy fires as soon as it is free, and an answer is
kept if it was *ready* by the deadline, so time spent running a shard inline never
costs another shard its place (the inline shard itself is held to the same deadline).
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections import deque
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from queue import Empty, SimpleQueue
from typing import Any

import numpy as np

from lookup.search import query as query_lang
from lookup.search import synonyms
from lookup.search.analysis import STOP_WORD_ALONE, only_stop_words, parse_query
from lookup.search.bm25 import Signals, length_norm, make_plan
from lookup.search.collapse import (
    FIRST_FETCH,
    MAX_COLLAPSE,
    WINDOW,
    fold,
    more_from_site,
    order,
    page_of,
)
from lookup.search.events import iso_time
from lookup.search.expansion import Vocabulary, did_you_mean, expand, strict_found, tolerate
from lookup.search.facets import merge_facets
from lookup.search.features import RERANK_DEPTH
from lookup.search.filters import narrowed
from lookup.search.learned import rescore
from lookup.search.matching import scoring_of
from lookup.search.shard import REALTIME, Hit, IndexVersion, ShardAnswer
from lookup.search.snippets import ForwardQuery, make_snippet, snippet_from_forward

MAX_QUERY_CHARS = 500
MAX_QUERY_TERMS = 32
MAX_LIMIT = 100
#: Deepest result reachable by paging (page × limit); deep pages are capped, not computed.
MAX_DEPTH = 1000
DEFAULT_DEADLINE_MS = 250.0
#: Hedge delay before a shard has enough latency samples for its p95.
DEFAULT_HEDGE_MS = 10.0
MIN_HEDGE_MS = 1.0
LATENCY_WINDOW = 256
MIN_SAMPLES = 20
#: The p95 behind the hedge delay is recomputed after this many new samples.
P95_EVERY = 16
#: Hedged queries remembered per shard, and how many must have been won by the hedge
#: (out of at least MIN_RACES) before the hedge is sent together with the request.
RACE_WINDOW = 20
MIN_RACES = 10
LAGGING_SHARE = 0.8


class QueryError(ValueError):
    """A query that cannot be run as given (the HTTP layer turns it into a 400)."""

    def __init__(self, code: str, message: str, position: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.position = position  # the character a syntax error starts at (0-based)


def check_track_total(value: int | bool) -> int | bool:
    """A ``track_total_hits`` value: ``True`` (count every match) or a threshold ``>= 0``."""
    if value is True:
        return True
    if value is False:
        return 0
    if isinstance(value, int) and value >= 0:
        return value
    raise QueryError(
        "INVALID_TRACK_TOTAL_HITS", "trackTotalHits must be true, false or an integer >= 0"
    )


@dataclass
class FaultSwitch:
    """Injected trouble for one replica: ``ok``, ``slow`` (delay with probability) or ``dead``."""

    mode: str = "ok"
    delay_ms: float = 0.0
    probability: float = 1.0

    def to_json(self) -> dict[str, Any]:
        """JSON form."""
        return {"mode": self.mode, "delayMs": self.delay_ms, "probability": self.probability}


@dataclass
class ReplicaStats:
    """Counters of one replica."""

    requests: int = 0
    hedge_requests: int = 0
    wins: int = 0
    slowed: int = 0
    dropped: int = 0


class Replica:
    """One copy of a shard behind its own worker threads and fault switch."""

    def __init__(self, shard: int, replica: int, workers: int = 2) -> None:
        self.shard = shard
        self.replica = replica
        self.fault = FaultSwitch()
        self.stats = ReplicaStats()
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix=f"shard{shard}r{replica}")

    def submit(self, snapshot: IndexVersion, plan: Any, hedge: bool, inbox: SimpleQueue) -> None:
        """Send a query to this replica; the answer (or error) is put into ``inbox``.

        A dead replica never answers; a slow one sleeps first, holding its worker
        the way an overloaded server holds its request queue.
        """
        self.stats.requests += 1
        if hedge:
            self.stats.hedge_requests += 1
        fault = self.fault
        if fault.mode == "dead":
            self.stats.dropped += 1
            return
        delay = 0.0
        if fault.mode == "slow" and random.random() < fault.probability:
            delay = fault.delay_ms / 1000.0
            self.stats.slowed += 1
        shard = snapshot.shards[self.shard]

        def run() -> None:
            if delay:
                time.sleep(delay)
            self._execute(shard, plan, inbox)

        self._pool.submit(run)

    def run_inline(self, snapshot: IndexVersion, plan: Any, inbox: SimpleQueue) -> None:
        """Answer on the calling thread, as this replica (only while its fault switch is ok)."""
        self.stats.requests += 1
        self._execute(snapshot.shards[self.shard], plan, inbox)

    def _execute(self, shard: Any, plan: Any, inbox: SimpleQueue) -> None:
        try:
            answer = shard.search(plan)
            answer.replica = self.replica
            answer.done_at = time.perf_counter()
            inbox.put((shard.shard, answer))
        except Exception as exc:  # a failed replica answers with its error
            inbox.put((shard.shard, exc))

    def close(self) -> None:
        """Stop the worker threads (pending work is abandoned)."""
        self._pool.shutdown(wait=False, cancel_futures=True)


@dataclass
class ShardGroup:
    """A shard's replicas and the latency history its hedge delay comes from."""

    shard: int
    replicas: list[Replica]
    latencies: deque[float] = field(default_factory=lambda: deque(maxlen=LATENCY_WINDOW))
    hedges: int = 0
    hedge_wins: int = 0
    deadline_misses: int = 0
    queries: int = 0
    _p95: float | None = None
    _p95_at: int = -1  # ``recorded`` when _p95 was computed
    recorded: int = 0
    # of the latest hedged queries: did the primary answer first?
    races: deque[bool] = field(default_factory=lambda: deque(maxlen=RACE_WINDOW))

    def record(self, latency_ms: float) -> None:
        """Add one answered request's latency to the window."""
        self.latencies.append(latency_ms)
        self.recorded += 1

    def hedge_delay_ms(self) -> float:
        """About the shard's 95th-percentile latency (a default until it has samples).

        Recomputed every :data:`P95_EVERY` samples, not on every query.
        """
        n = len(self.latencies)
        if n < MIN_SAMPLES:
            return DEFAULT_HEDGE_MS
        if self._p95 is None or self.recorded - self._p95_at >= P95_EVERY or self._p95_at < 0:
            ordered = sorted(self.latencies)
            self._p95 = ordered[min(n - 1, math.ceil(0.95 * n) - 1)]  # nearest rank
            self._p95_at = self.recorded
        return max(MIN_HEDGE_MS, self._p95)

    def primary_lagging(self) -> bool:
        """Has the primary lost most of the latest races to its hedge?

        Then the hedge goes out with the request (a tied request) instead of after the
        p95 wait: the primary is still asked, so the shard leaves this state as soon as
        the primary starts winning again.
        """
        races = self.races
        return len(races) >= MIN_RACES and races.count(False) >= LAGGING_SHARE * len(races)

    def forget(self) -> None:
        """Clear the latency window and counters."""
        self.latencies.clear()
        self.races.clear()
        self._p95 = None
        self._p95_at = -1
        self.reset_counters()

    def reset_counters(self) -> None:
        """Zero the counters, keeping what was learned (latency window, races)."""
        self.hedges = self.hedge_wins = self.deadline_misses = self.queries = 0

    def status(self) -> dict[str, Any]:
        """JSON summary for the shard panel."""
        lat = np.fromiter(self.latencies, float) if self.latencies else np.zeros(0)
        return {
            "shard": self.shard,
            "queries": self.queries,
            "p50Ms": round(float(np.percentile(lat, 50)), 3) if lat.size else None,
            "p95Ms": round(float(np.percentile(lat, 95)), 3) if lat.size else None,
            "hedgeDelayMs": round(self.hedge_delay_ms(), 3),
            "primaryLagging": self.primary_lagging(),
            "hedgesFired": self.hedges,
            "hedgeWins": self.hedge_wins,
            "deadlineMisses": self.deadline_misses,
            "replicas": [
                {
                    "replica": r.replica,
                    "fault": r.fault.to_json(),
                    "requests": r.stats.requests,
                    "hedgeRequests": r.stats.hedge_requests,
                    "wins": r.stats.wins,
                    "slowed": r.stats.slowed,
                    "dropped": r.stats.dropped,
                    **({"address": r.address} if hasattr(r, "address") else {}),
                }
                for r in self.replicas
            ],
        }


@dataclass
class FanoutTrace:
    """What happened to each shard during one query."""

    shard: int
    latency_ms: float | None
    replica: int | None
    hedged: bool
    missed_deadline: bool
    matched: int | None
    mode: str | None
    inline: bool = False

    def to_json(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "shard": self.shard,
            "latencyMs": None if self.latency_ms is None else round(self.latency_ms, 3),
            "replica": self.replica,
            "hedged": self.hedged,
            "missedDeadline": self.missed_deadline,
            "matched": self.matched,
            "mode": self.mode,
            "inline": self.inline,
        }


class Coordinator:
    """Runs queries over a snapshot (and the real-time tier) across replicated shards."""

    def __init__(
        self,
        replicas: int = 2,
        workers_per_replica: int = 2,
        deadline_ms: float | None = None,
        hedge: bool = True,
        signals: Signals | None = None,
        inline: bool = True,
        track_total_hits: int | bool = True,
        typo_below: int = 1,
    ) -> None:
        """``inline``: the caller runs one healthy shard itself (see the module docstring).
        ``typo_below``: typo tolerance for written words in fewer pages (0: off; :mod:`.expansion`).

        ``track_total_hits`` (Elasticsearch's ``track_total_hits``): ``True`` counts every
        match; a number ``N`` lets shards take the top k by dynamic pruning (the same
        results) where a segment may hold more than ``N`` matches, and then reports the
        total as a lower bound (``totalRelation: "gte"``); ``False`` is ``0``. A query
        may override it (:meth:`search`).
        """
        if replicas < 1:
            raise ValueError("a shard needs at least one replica")
        self.replicas_per_shard = replicas
        self.workers = workers_per_replica
        self.deadline_ms = DEFAULT_DEADLINE_MS if deadline_ms is None else deadline_ms
        self.hedge = hedge
        self.inline = inline
        self.signals = signals or Signals()
        self.track_total_hits = check_track_total(track_total_hits)
        self.typo_below = typo_below
        #: The synonym table applied to queries (:mod:`.synonyms`); None: no synonyms.
        self.synonyms: synonyms.SynonymTable | None = None
        self.groups: list[ShardGroup] = []
        #: Makes replica ``r`` of shard ``s`` for a shard group that has none yet (the
        #: in-process :class:`Replica`; a coordinator over shard servers swaps it, .remote).
        self.make_replica: Any = lambda s, r: Replica(s, r, self.workers)
        self.recent: deque[tuple[str, str, float, list[FanoutTrace], int, int]] = deque(maxlen=50)
        self._lock = threading.Lock()

    # --- shard groups and faults ---------------------------------------------------------
    def ensure_shards(self, n: int) -> list[ShardGroup]:
        """Shard groups for ``n`` shards (kept, with their faults, across index versions)."""
        with self._lock:
            while len(self.groups) < n:
                s = len(self.groups)
                self.groups.append(
                    ShardGroup(s, [self.make_replica(s, r) for r in range(self.replicas_per_shard)])
                )
            return self.groups[:n]

    def set_replicas(self, shard: int, replicas: Sequence[Any]) -> list[Any]:
        """Make ``replicas`` (primary first) serve ``shard``, keeping its latency history;
        returns the replicas they replace, for the caller to close."""
        if not replicas:
            raise ValueError("a shard needs at least one replica")
        self.ensure_shards(shard + 1)
        with self._lock:
            group = self.groups[shard]
            old, group.replicas = group.replicas, list(replicas)
        return [r for r in old if all(r is not n for n in replicas)]

    def set_fault(
        self,
        shard: int,
        replica: int | None,
        mode: str,
        delay_ms: float = 0.0,
        probability: float = 1.0,
    ) -> None:
        """Make a replica (or all replicas of a shard, ``replica=None``) slow, dead or ok."""
        if mode not in ("ok", "slow", "dead"):
            raise ValueError("mode must be ok, slow or dead")
        if not 0.0 <= probability <= 1.0:
            raise ValueError("probability must be between 0 and 1")
        if delay_ms < 0:
            raise ValueError("delayMs must not be negative")
        if shard < 0 or shard >= len(self.groups):
            raise IndexError(f"no shard {shard}")
        group = self.groups[shard]
        targets = group.replicas if replica is None else [group.replicas[replica]]
        for r in targets:
            r.fault = FaultSwitch(
                mode, float(delay_ms) if mode == "slow" else 0.0, float(probability)
            )

    def clear_faults(self) -> None:
        """Every replica back to healthy."""
        for g in self.groups:
            for r in g.replicas:
                r.fault = FaultSwitch()

    def reset_stats(self) -> None:
        """Forget latency history and counters (faults stay)."""
        for g in self.groups:
            g.forget()
            for r in g.replicas:
                r.stats = ReplicaStats()
        self.recent.clear()

    def reset_counters(self) -> None:
        """Zero the counters but keep the learned hedge delays (to count one experiment)."""
        for g in self.groups:
            g.reset_counters()
            for r in g.replicas:
                r.stats = ReplicaStats()
        self.recent.clear()

    def close(self) -> None:
        """Stop every replica's threads."""
        for g in self.groups:
            for r in g.replicas:
                r.close()

    def status(self) -> dict[str, Any]:
        """Configuration, per-shard counters and the latest fan-outs."""
        return {
            "deadlineMs": self.deadline_ms,
            "hedging": self.hedge,
            "inline": self.inline,
            "trackTotalHits": self.track_total_hits,
            "replicasPerShard": self.replicas_per_shard,
            "shards": [g.status() for g in self.groups],
            "recent": [_summary(e) for e in list(self.recent)],
        }

    # --- the query -----------------------------------------------------------------------
    def search(
        self,
        snapshot: IndexVersion,
        query: str,
        page: int = 1,
        limit: int = 10,
        *,
        explain: bool = False,
        trace: bool = False,
        deadline_ms: float | None = None,
        hedge: bool | None = None,
        now: float | None = None,
        signals: Signals | None = None,
        suggest: bool = True,
        model: Any = None,
        features: bool = False,
        track_total_hits: int | bool | None = None,
        filters: Sequence[query_lang.Node] = (),
        facets: bool = False,
        sort: str = "score",
        collapse: int = 0,
        typos: bool | None = None,
    ) -> dict[str, Any]:
        """Answer one query: the ``GET /search`` body (plus ``explain``/``fanout`` on request).

        ``filters`` (query-language nodes, :mod:`.filters`) must match too; ``facets`` adds
        the matches' counts by site, language, crawl month and type (:mod:`.facets`);
        ``sort="date"`` ranks the newest first; ``collapse=N`` puts at most N results
        of a site on a page, the rest on later pages and behind ``moreFromSite``
        (:mod:`.collapse`; 0: off).

        A query that finds little gets ``didYouMean`` (``suggest``): a spelling
        correction from the index's terms, kept only if it finds more. ``model`` (a
        :class:`~lookup.search.learned.ActiveModel`) reorders the first hits by the
        learned ranker; ``features=True`` adds each result's ranking features.
        ``track_total_hits`` overrides the coordinator's for this query (see ``__init__``).
        """
        started = time.perf_counter()
        if not isinstance(query, str):
            raise QueryError("INVALID_QUERY", "q must be a string")
        text = query.encode("utf-8", "replace").decode("utf-8").strip()
        if not text:
            raise QueryError("EMPTY_QUERY", "q is empty; type a word or two to search for")
        if len(text) > MAX_QUERY_CHARS:
            raise QueryError(
                "QUERY_TOO_LONG", f"q is {len(text)} characters; the limit is {MAX_QUERY_CHARS}"
            )
        if not 1 <= limit <= MAX_LIMIT:
            raise QueryError("INVALID_LIMIT", f"limit must be between 1 and {MAX_LIMIT}")
        if page < 1:
            raise QueryError("INVALID_PAGE", "page must be 1 or more")
        if page * limit > MAX_DEPTH:
            raise QueryError(
                "PAGE_TOO_DEEP",
                f"results are available to depth {MAX_DEPTH}; page {page} × limit {limit} "
                "goes past it — refine the query instead",
            )
        track = check_track_total(
            self.track_total_hits if track_total_hits is None else track_total_hits
        )
        if sort not in ("score", "date"):
            raise QueryError("INVALID_SORT", "sort must be score or date")
        if not 0 <= collapse <= MAX_COLLAPSE:
            raise QueryError("INVALID_COLLAPSE", f"collapse must be 0 (off) to {MAX_COLLAPSE}")
        node = None
        if query_lang.has_operators(text):
            try:
                node = query_lang.parse(text)
            except query_lang.QuerySyntaxError as exc:
                raise QueryError("QUERY_SYNTAX", exc.message, position=exc.position) from None
        expr = None
        notes: list[dict[str, Any]] = []  # what each prefix* and word~ expanded to
        if query_lang.is_plain(node):  # terms and phrases only: the classic path, as before
            parsed = parse_query(text)
            terms = parsed.terms
            phrases = parsed.phrases
        else:
            if not query_lang.has_positive(node):
                raise QueryError(
                    "ONLY_NEGATIVE",
                    "a query needs something to find, not only what to leave out (add a word)",
                )
            written = query_lang.written_terms(node)
            if written > MAX_QUERY_TERMS:
                raise QueryError(
                    "QUERY_TOO_LONG",
                    f"q has {written} distinct terms; the limit is {MAX_QUERY_TERMS}",
                )
            expr, notes = expand(node, Vocabulary(snapshot))  # type: ignore[arg-type]
            terms = query_lang.positive_terms(expr)  # prefix expansions are bounded apart
            phrases = ()
        if expr is None and len(terms) > MAX_QUERY_TERMS:
            raise QueryError(
                "QUERY_TOO_LONG",
                f"q has {len(terms)} distinct terms; the limit is {MAX_QUERY_TERMS}",
            )
        below = self.typo_below if typos is None else max(self.typo_below, 1) if typos else 0
        typo = tolerate(snapshot, text, terms, expr, below) if below else None
        if typo is not None:  # rare written words ORed with their corrections (.expansion)
            expr, terms, phrases = typo.expr, query_lang.positive_terms(typo.expr), ()
        rewrite = synonyms.rewrite(self.synonyms, text, terms, phrases, expr)  # .synonyms
        if rewrite is not None:
            expr, terms, phrases = rewrite.node, query_lang.positive_terms(rewrite.node), ()
        if filters and (terms or expr is not None):  # they narrow a query (no OR fallback)
            expr, phrases = narrowed(expr, terms, phrases, filters), ()
        n_shards = len(snapshot.shards)
        body: dict[str, Any] = {
            "query": text,
            "estimatedTotal": 0,
            "tookMs": 0.0,
            "results": [],
            "shardsQueried": 0,
            "shardsAnswered": 0,
        }
        if rewrite is not None and rewrite.applied:
            body["synonyms"] = rewrite.applied
        if typo is not None:
            body["corrections"] = typo.corrections
        if notes:
            body["expansions"] = notes
        if not terms and expr is None:  # only stop words or punctuation: nothing to search
            if only_stop_words(text):  # one stop word: no pair for the stop-word phrase index
                body["notice"] = {"code": "ONLY_STOP_WORDS", "message": STOP_WORD_ALONE}
            body["tookMs"] = round((time.perf_counter() - started) * 1000.0, 3)
            if trace:
                body["fanout"] = {"mode": None, "terms": [], "shards": [], "hedgesFired": 0}
            return body

        rt_build = snapshot.realtime
        if rt_build is not None:
            st = rt_build.state
            rt_docs, rt_len, rt_df = st.docs, st.length, st.df
        else:
            rt_docs, rt_len, rt_df = 0, 0, {}
        n_docs = snapshot.live_docs + rt_docs
        total_len = snapshot.live_length + rt_len
        dfs = [snapshot.df(t) + rt_df.get(t, 0) for t in terms]
        if sort == "date":
            model = None  # the newest first: no ranker reorders them
        depth = page * limit if model is None and not features else max(page * limit, RERANK_DEPTH)
        if collapse:  # deeper, so that crowded sites still leave a full page
            depth = min(max(2 * depth, FIRST_FETCH), WINDOW)
        # one deadline for the whole query: a typo fall-back, a deeper collapse round and
        # the "did you mean" search each get what is left of it, not a deadline of their own
        end = started + (self.deadline_ms if deadline_ms is None else deadline_ms) / 1000.0
        while True:
            plan = make_plan(
                terms,
                dfs,
                n_docs,
                total_len,
                k=depth,
                now=time.time() if now is None else now,
                signals=signals or self.signals,
                phrases=phrases,
                expr=expr,
                scoring=None if expr is None else scoring_of(expr),
                weights=rewrite.weights if rewrite is not None else None,
                exact_count=track is True,
                track_total=0 if track is True else int(track),
                facets=facets,
                sort=sort,
                prune=sort == "score",
            )
            answers, traces = self._fan_out(
                snapshot,
                plan,
                max(0.0, (end - time.perf_counter()) * 1000.0),
                self.hedge if hedge is None else hedge,
            )
            if typo is not None and not any(a.matched for a in answers) and typo.fall_back():
                expr = narrowed(typo.expr, terms, (), filters)  # any (corrected) word
                continue
            any_and = any(a.mode == "and" and a.matched > 0 for a in answers)
            mode = "and" if any_and or len(plan.terms) == 1 or not plan.or_fallback else "or"
            used = [a for a in answers if a.mode == mode]
            hits: list[Hit] = sorted((h for a in used for h in a.hits), key=order(snapshot, sort))
            extras: dict[tuple[int, int, int], dict[str, Any]] = {}
            if model is not None or features:  # the learned rescore window (search.learned)
                hits, extras = rescore(snapshot, plan, hits, model)
            deeper = any(len(a.hits) >= plan.k for a in used) and depth < WINDOW
            folded = fold(snapshot, hits, collapse, page, limit, complete=not deeper)
            if folded is None or folded.settled or not deeper:
                break
            depth = min(4 * depth, WINDOW)  # a crowded ranking: look deeper for the page
        page_hits = page_of(hits, folded, page, limit)
        if expr is not None:  # operators decided what matches: neither AND nor an OR fallback
            mode = "or" if typo is not None and typo.fell_back else "query"
        matched = sum(a.matched for a in used)
        exact = all(a.exact for a in used)
        answered_docs = sum(a.docs for a in answers)
        if exact and len(answers) < n_shards and answered_docs > 0:
            estimated = int(round(matched * n_docs / answered_docs))
        else:  # exact, or a lower bound that extrapolating would no longer be
            estimated = matched
        fwd_query = ForwardQuery.of(plan.terms) if page_hits else None
        results = []
        for h in page_hits:
            fwd = None
            if h.segment == REALTIME:
                stored = self._stored(snapshot, h)
            else:
                reader = snapshot.shards[h.shard].segments[h.segment].reader
                stored = reader.stored(h.doc)
                fwd = reader.forward_of(h.doc)
            page_text = stored.get("text") or ""
            if fwd is not None and fwd_query is not None:
                prints, starts, lengths = fwd
                snippet = snippet_from_forward(page_text, prints, starts, lengths, fwd_query)
            else:  # the real-time tier, or a segment written before format 2
                snippet = make_snippet(page_text, frozenset(plan.terms))
            item = {
                "url": stored["url"],
                "title": stored.get("title") or stored["url"],
                "snippet": snippet,
                "score": round(h.score, 6),
                "crawledAt": stored.get("crawledIso")
                or iso_time(float(stored.get("crawledAt") or 0.0)),
            }
            extra = extras.get((h.shard, h.segment, h.doc), {})
            if features and "features" in extra:
                item["features"] = extra["features"]
            if explain:
                item["explain"] = self._explain(snapshot, plan, h)
                if "learned" in extra:
                    item["explain"]["learned"] = extra["learned"]
            results.append(item)
        if folded is not None:
            more_from_site(folded, results, collapse)
        body.update(
            estimatedTotal=estimated,
            results=results,
            shardsQueried=n_shards,
            shardsAnswered=len(answers),
        )
        if not exact:  # only then: the contract's keys stay as they were
            body["totalRelation"] = "gte"
        if facets:
            body["facets"] = merge_facets(used, complete=len(answers) == n_shards)
        if suggest:  # "did you mean": also for a rare word among several (.expansion)

            def again(q: str) -> dict[str, Any]:
                left = max(0.0, (end - time.perf_counter()) * 1000.0)
                return self.search(snapshot, q, limit=1, suggest=False, typos=False,
                                   deadline_ms=left, hedge=hedge)  # fmt: skip

            if hint := did_you_mean(snapshot, text, strict_found(typo, mode, estimated), again):
                body["didYouMean"] = hint
        took = (time.perf_counter() - started) * 1000.0
        body["tookMs"] = round(took, 3)
        entry = (text, mode, took, traces, len(answers), n_shards)
        self.recent.append(entry)  # formatted only when someone looks (status, trace)
        if trace:
            body["fanout"] = {"terms": list(plan.terms), **_summary(entry)}
        return body

    def _fan_out(
        self, snapshot: IndexVersion, plan: Any, deadline_ms: float, hedge: bool
    ) -> tuple[list[ShardAnswer], list[FanoutTrace]]:
        groups = self.ensure_shards(len(snapshot.shards))
        inbox: SimpleQueue = SimpleQueue()
        t0 = time.perf_counter()
        deadline = t0 + deadline_ms / 1000.0
        hedge_at: dict[int, float] = {}
        hedge_sent: dict[int, float] = {}
        hedged: set[int] = set()
        inline = None
        if self.inline:
            inline = next((g for g in groups if g.replicas[0].fault.mode == "ok"), None)
        for g in groups:
            g.queries += 1
            if g is inline:
                continue  # answered below, on this thread, once the others are on their way
            g.replicas[0].submit(snapshot, plan, False, inbox)
            if hedge and len(g.replicas) > 1:
                if g.primary_lagging():  # it keeps losing the race: hedge with the request
                    hedge_sent[g.shard] = time.perf_counter()
                    g.replicas[1].submit(snapshot, plan, True, inbox)
                    hedged.add(g.shard)
                    g.hedges += 1
                else:
                    hedge_at[g.shard] = t0 + g.hedge_delay_ms() / 1000.0
        if inline is not None:
            # its answer (or error) is in the inbox when this returns; an error is hedged
            # to the replica at once below, like a pooled primary's
            inline.replicas[0].run_inline(snapshot, plan, inbox)
        answers: dict[int, ShardAnswer] = {}
        latency: dict[int, float] = {}
        service: dict[int, float] = {}  # the winning request's own time, from when it was sent
        pending = {g.shard for g in groups}

        def accept(s: int, result: ShardAnswer) -> None:
            answers[s] = result
            latency[s] = (result.done_at - t0) * 1000.0
            sent = hedge_sent.get(s, t0) if result.replica != 0 else t0
            service[s] = (result.done_at - sent) * 1000.0
            pending.discard(s)

        def handle(s: int, result: ShardAnswer | BaseException) -> None:
            if s not in pending:
                return
            if isinstance(result, BaseException):
                if s not in hedged and hedge and len(groups[s].replicas) > 1:
                    hedge_at[s] = 0.0  # the primary failed outright: ask the replica at once
                return
            accept(s, result)

        while pending:
            now = time.perf_counter()
            if now >= deadline:
                # answers ready by the deadline count even if this thread was busy then
                while pending:
                    try:
                        s, result = inbox.get_nowait()
                    except Empty:
                        break
                    if isinstance(result, BaseException) or result.done_at <= deadline:
                        handle(s, result)
                break
            try:  # what has already arrived first: no hedge for a shard that has answered
                handle(*inbox.get_nowait())
                continue
            except Empty:
                pass
            wake = deadline
            for s in list(hedge_at):
                if s not in pending:
                    del hedge_at[s]
                elif now >= hedge_at[s]:
                    g = groups[s]
                    hedge_sent[s] = time.perf_counter()
                    g.replicas[1].submit(snapshot, plan, True, inbox)
                    hedged.add(s)
                    g.hedges += 1
                    del hedge_at[s]
                else:
                    wake = min(wake, hedge_at[s])
            try:
                handle(*inbox.get(timeout=max(0.0, wake - now)))
            except Empty:
                continue
        traces: list[FanoutTrace] = []
        for g in groups:
            s = g.shard
            a = answers.get(s)
            if a is None:
                g.deadline_misses += 1
                traces.append(
                    FanoutTrace(s, None, None, s in hedged, True, None, None, g is inline)
                )
                continue
            # The hedge delay learns from how long one request takes, not from when the
            # query got its answer: a hedged answer's time from t0 includes the hedge delay
            # itself, and learning from it would push the delay up until hedging stopped.
            g.record(service[s])
            # the answering replica's place in the group (primary first): a remote
            # replica's number stays its own when the members before it leave
            place = next((i for i, r in enumerate(g.replicas) if r.replica == a.replica), None)
            if s in hedged:
                g.races.append(place == 0)
            if place is not None:
                g.replicas[place].stats.wins += 1
            if place != 0:
                g.hedge_wins += 1
            traces.append(
                FanoutTrace(
                    s,
                    latency[s],
                    a.replica,
                    s in hedged,
                    False,
                    a.matched,
                    a.mode,
                    g is inline and a.replica == 0,
                )
            )
        return [answers[s] for s in sorted(answers)], traces

    @staticmethod
    def _stored(snapshot: IndexVersion, h: Hit) -> dict[str, Any]:
        if h.segment == REALTIME:
            return snapshot.realtime.indexes[h.shard].docs[h.doc].stored  # type: ignore[union-attr]
        return snapshot.stored(h.shard, h.segment, h.doc)

    @staticmethod
    def _explain(snapshot: IndexVersion, plan: Any, h: Hit) -> dict[str, Any]:
        """Per-term idf, tf and length normalisation, plus each signal's contribution."""
        if h.segment == REALTIME:
            mi = snapshot.realtime.indexes[h.shard]  # type: ignore[union-attr]
            doclen = float(mi.doclen[h.doc])
            crawled = float(mi.crawled[h.doc])

            def tf_of(term: str) -> int:
                lists = mi.post.get(term)
                if lists is None:
                    return 0
                docs = lists[0]
                i = int(np.searchsorted(np.asarray(docs), h.doc))
                return int(lists[1][i]) if i < len(docs) and docs[i] == h.doc else 0
        else:
            view = snapshot.shards[h.shard].segments[h.segment]
            doclen = float(view.reader.doclen[h.doc])
            crawled = float(view.reader.crawled[h.doc])

            def tf_of(term: str) -> int:
                return view.term_tf(term, h.doc)

        norm = float(length_norm(np.array([doclen]), plan.avgdl, plan.k1, plan.b)[0])
        terms = []
        boosts = plan.scoring.weights if plan.scoring is not None else {}  # ^N, typos, prefixes
        for term, term_idf, df in zip(plan.terms, plan.idfs, plan.dfs, strict=True):
            tf, w = tf_of(term), boosts.get(term, 1.0)
            terms.append(
                {
                    "term": term,
                    "df": df,
                    "idf": term_idf,
                    "tf": tf,
                    "lengthNorm": norm,
                    "score": w * term_idf * tf / (tf + norm) if tf else 0.0,
                    **({} if w == 1.0 else {"boost": w}),
                }
            )
        sig = plan.signals
        inlinks = float(snapshot.inlinks_for(np.array([h.urlkey]))[0])
        # in score points (bm25 + linkBoost + freshBoost = score): each lift times BM25
        link = h.bm25 * float(sig.link_boost(np.array([inlinks]))[0])
        fresh = h.bm25 * float(sig.fresh_boost(np.array([crawled]), plan.now)[0])
        return {
            "tier": "realtime" if h.segment == REALTIME else "batch",
            "shard": h.shard,
            "docLength": doclen,
            "avgDocLength": plan.avgdl,
            "docs": plan.n_docs,
            "k1": plan.k1,
            "b": plan.b,
            "terms": terms,
            "bm25": h.bm25,
            "signals": {
                "inLinks": inlinks,
                "linkBoost": link,
                "ageDays": max(plan.now - crawled, 0.0) / 86400.0,
                "freshBoost": fresh,
            },
            "score": h.score,
        }


def _summary(entry: tuple[str, str, float, list[FanoutTrace], int, int]) -> dict[str, Any]:
    """One query's fan-out as JSON (the shard panel's row)."""
    text, mode, took, traces, answered, n_shards = entry
    return {
        "query": text,
        "mode": mode,
        "tookMs": round(took, 3),
        "shards": [t.to_json() for t in traces],
        "hedgesFired": sum(t.hedged for t in traces),
        "shardsAnswered": answered,
        "shardsQueried": n_shards,
    }
