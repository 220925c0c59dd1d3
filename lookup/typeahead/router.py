"""The shard router: the one public ``/v1/suggest`` in front of the shard servers.

The **router** (:class:`ShardRouter`) has the same contract as the unsharded server:
the empty and one-character prefixes come from the replicated head table without a
network hop, every longer prefix goes to the one shard
(:mod:`~lookup.typeahead.shard_server`) owning its first two code points, over one
pooled ``aiohttp`` session (keep-alive connections, a timeout per call; ``aiohttp``
because on this machine it makes the hop several times faster than
``httpx.AsyncClient``, see ``benchmarks/README.md``). A shard that is down or too slow
fails only its own range, with ``503 SHARD_UNAVAILABLE``.

The router is also where the serve-time policy lives, as on the single server: the
**hot blocklist** (the same :class:`~lookup.typeahead.filters.HotBlocklist`, its source and
its ``/v1/typeahead/blocklist`` endpoints) is applied to every answer — the shards serve
the snapshots as built, and when blocked suggestions leave a page short the router
*over-fetches* (``fetch=N``: the shard's exact best N beyond its stored top k; for the
head table, the same from every shard the prefix spans, merged by global rank) — and
``POST /v1/searches`` feeds the same :class:`~lookup.typeahead.trending.TrendingTracker`,
whose terms are blended into the page by score + boost exactly as the single server does.
With the same blocklist and the same searches, the router answers what ``/v1/suggest``
on one machine answers. The endpoints they share are declared once, in
:mod:`~lookup.typeahead.manage`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import aiohttp
import httpx
from starlette.routing import Route
from starlette.types import Receive, Scope, Send
from yarl import URL

from lookup import settings
from lookup.kit.admin import admin_token_of
from lookup.kit.http import ApiError
from lookup.typeahead.filters import HotBlocklist
from lookup.typeahead.fuzzy import NEIGHBOURS, TypoPolicy, highlight, transliterations
from lookup.typeahead.http import (
    NOT_GET,
    allows_get,
    encode_json,
    install_recent,
    mount_poller,
    public_suggest_params,
    search_limiter,
    send_answer,
    send_refusal,
)
from lookup.typeahead.manage import TAGS, mount_serve_time, unknown_market
from lookup.typeahead.normalize import normalize_prefix, normalize_query
from lookup.typeahead.pipeline import open_hot_blocklist
from lookup.typeahead.reload import SnapshotFollower
from lookup.typeahead.searchfeed import SearchFeed, open_search_feed, open_trending
from lookup.typeahead.shard_server import MAX_EXACT, MAX_FETCH, SHARD_HEADER, SHARD_PATH
from lookup.typeahead.sharding import ShardLayout, ShardPlan, describe_range, shard_snapshot
from lookup.typeahead.trending import (
    Clock,
    Pick,
    TrendingPolicy,
    TrendingTerm,
    TrendingTracker,
    usable_query,
)

if TYPE_CHECKING:
    from lookup.kit.mounts import Mounts

log = logging.getLogger("lookup.typeahead.shards")


def shards_spanned(plan: ShardPlan, prefix: str) -> list[int]:
    """The shards holding keys that start with a prefix shorter than two characters."""
    if not prefix:
        return list(range(plan.n))
    nxt = chr(ord(prefix) + 1) if ord(prefix) < 0x10FFFF else None
    return [i for i, (lo, hi) in enumerate(plan.ranges())
            if (nxt is None or lo < nxt) and (hi is None or hi > prefix)]  # fmt: skip


@dataclass
class ShardStats:
    """What the router has seen of one shard."""

    shard: int
    address: str
    calls: int = 0
    failures: int = 0
    last_error: str | None = None
    last_error_at: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able form."""
        return {"shard": self.shard, "address": self.address, "calls": self.calls,
                "failures": self.failures, "lastError": self.last_error,
                "lastErrorAt": self.last_error_at}  # fmt: skip


class ShardRouter:
    """The one endpoint in front of the shards: head table for short prefixes, one shard else.

    ``addresses[i]`` is the base URL of the server holding shard ``i`` of every market.
    The router loads only the plans and head tables, never a shard's trie. With
    :meth:`attach_serving` (``install_router`` does it over the data directory) it also
    holds the serve-time state the single server holds: the hot blocklist, the trending
    tracker and the search log.
    """

    def __init__(
        self,
        layouts: dict[str, ShardLayout],
        addresses: Sequence[str],
        *,
        timeout: float = 2.0,
        max_connections: int = 64,
    ) -> None:
        if not layouts:
            raise ValueError("a router needs at least one market's shard layout")
        need = max(layout.plan.n for layout in layouts.values())
        if len(addresses) < need:
            raise ValueError(f"the plans have {need} shards but only {len(addresses)} addresses")
        self.layouts = layouts
        self.addresses = [a.rstrip("/") for a in addresses]
        self.timeout = timeout
        self.max_connections = max_connections
        self.stats = [ShardStats(i, a) for i, a in enumerate(self.addresses)]
        self._session: aiohttp.ClientSession | None = None
        self.blocklist: HotBlocklist | None = None
        self.tracker: TrendingTracker | None = None
        self.search_log: SearchFeed | None = None
        self.typo = TypoPolicy.from_settings()
        # per market: the score a term leads to as a key and whether it is that very
        # suggestion, or None for an unknown key (fixed for the cut: never stale)
        self._exact: dict[str, dict[str, tuple[float, bool] | None]] = {m: {} for m in layouts}
        #: grows by one at every switch to a new cut (:meth:`switch_to`)
        self.generation = 0
        self.follower: SnapshotFollower | None = None
        self.switches: list[dict[str, Any]] = []  # the last few switches, for the status page

    def attach_serving(
        self,
        data_dir: str | os.PathLike[str],
        *,
        clock: Clock = time.time,
        trending: TrendingPolicy = TrendingPolicy(),
    ) -> None:
        """Serve-time policy over ``DATA_DIR/typeahead``, as ``SuggestService.from_data_dir``:
        the hot blocklist (the same list), the trending tracker and the search log (in a
        fleet's Redis when setting ``typeahead_searches_url`` names one)."""
        self.blocklist = open_hot_blocklist(data_dir)
        url = settings.get("typeahead_searches_url")
        self.search_log = open_search_feed(url, data_dir, clock=clock)
        blocklist = self.blocklist
        self.tracker = open_trending(
            url,
            trending,
            clock=clock,
            baseline=self.baseline,
            blocklist=lambda: blocklist.effective,
        )

    def baseline(self, market: str, query: str, now: float) -> float:
        """Expected searches of ``query`` in a trending window (``SuggestService.baseline``).

        The score comes from the shard owning the query (fetched when the query nears
        the trending floor, see :meth:`record_search`); until it is known the query
        counts as normal (infinite baseline), so nothing trends on a guess.
        """
        layout = self.layouts.get(market)
        if layout is None or self.tracker is None:
            return 0.0
        cache = self._exact[market]
        if query not in cache:
            return float("inf")
        known = cache[query]
        if known is None:
            return 0.0
        decay = layout.source_meta.get("decay", {})
        period_s = float(decay.get("period_s", 86400))
        factor = float(decay.get("factor", 0.5 ** (1 / 7)))
        per_second = known[0] * (1.0 - factor) / period_s
        shares = layout.source_meta.get("hour_share") or [1 / 24] * 24
        hour = int(((now + 19800) // 3600) % 24)
        return per_second * self.tracker.policy.window_s * 24.0 * float(shares[hour])

    async def record_search(
        self,
        query: str,
        market: str,
        user: str | None = None,
        network: str | None = None,
        *,
        is_bot: bool = False,
        pick: Pick | None = None,
    ) -> str | None:
        """A submitted search: count it for trending, append it to the search log.

        A query about to reach the trending floor first gets its snapshot score from its
        shard (once per cut), so the tracker's baseline for it is the single server's.
        """
        if self.tracker is None:
            raise RuntimeError("the router has no trending tracker; call attach_serving")
        if is_bot:  # logged for the build (weighed as the log's bots), never trending
            bot_query = usable_query(query)
            if bot_query is not None and self.search_log is not None:
                self.search_log.append(bot_query, market, user, True, pick)
            return bot_query
        layout = self.layouts[market]
        q = normalize_query(query)
        policy = self.tracker.policy
        if (
            len(q) >= policy.min_chars
            and q not in self._exact[market]
            and self.tracker.window_count(market, q) + 1 >= policy.floor
        ):
            try:
                await self._fetch_exact(layout, [q])
            except ApiError as exc:  # counted anyway; it cannot trend until its shard answers
                log.warning("no baseline for %r: %s", q, exc.message)
        recorded = self.tracker.record(query, market, user, network)
        if recorded is not None and self.search_log is not None:
            self.search_log.append(recorded, market, user, pick=pick)
        return recorded

    @classmethod
    def from_root(cls, root: str | os.PathLike[str], addresses: Sequence[str],
                  **kwargs: Any) -> ShardRouter:  # fmt: skip
        """A router over every market's shard directory under ``root``."""
        layouts = {}
        for d in sorted(Path(root).iterdir()):
            if d.is_dir() and not d.name.startswith(".") and (d / "plan.json").exists():
                layout = ShardLayout.load(d)
                layouts[layout.market] = layout
        return cls(layouts, addresses, **kwargs)

    def session(self) -> aiohttp.ClientSession:
        """The pooled session (created on first use, inside the serving event loop)."""
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self.max_connections),
                timeout=aiohttp.ClientTimeout(total=self.timeout),
                trust_env=False,  # shards are internal: never through a proxy from the env
                auto_decompress=False,
            )
        return self._session

    def follow(
        self, store: Any, *, size_weight: float = 0.5, poll_s: float = 1.0, wait_s: float = 120.0
    ) -> SnapshotFollower:
        """Follow a snapshot store: for each new current version of a market, plan its cut
        (the same boundaries the shard servers draw, ``size_weight`` as theirs), wait until
        every shard of it holds the version, then switch (:meth:`switch_to`)."""

        def load(market: str, version: str) -> None:
            snap = store.open(market, version)
            if snap is None:
                raise LookupError(f"no snapshot {version} for {market}")
            with tempfile.TemporaryDirectory(prefix="lookup-router-") as tmp:
                shard_snapshot(snap, len(self.addresses), tmp, size_weight=size_weight, only=())
                layout = ShardLayout.load(tmp)
            self.wait_until_held(layout, wait_s)
            self.switch_to(layout)

        def held(market: str) -> str | None:
            layout = self.layouts.get(market)
            return layout.source_version if layout is not None else None

        self.follower = SnapshotFollower(
            store, held, load, poll_s=poll_s, markets=self.markets, name="router-follower"
        ).start()
        return self.follower

    def wait_until_held(self, layout: ShardLayout, timeout: float) -> None:
        """Block until every shard of ``layout``'s plan reports holding its version
        (``/healthz``); ``TimeoutError`` if one does not within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        version = layout.source_version
        with httpx.Client(trust_env=False, timeout=2.0) as client:
            for i in range(layout.plan.n):
                while True:
                    try:
                        body = client.get(f"{self.addresses[i]}/healthz").json()
                        holds = body["systems"]["typeahead-shard"]["markets"][layout.market]
                        if version in holds.get("held", [holds.get("version")]):
                            break
                    except (httpx.HTTPError, ValueError, KeyError, TypeError):
                        pass  # down, starting or not holding the market yet: ask again
                    if time.monotonic() > deadline:
                        raise TimeoutError(
                            f"shard {i} of {layout.market} did not load {version} in time"
                        )
                    time.sleep(0.05)

    def switch_to(self, layout: ShardLayout) -> None:
        """Serve ``layout``'s cut of its market from now on (requests under way finish on
        the cut they started with, which the shards still hold)."""
        before = self.layouts.get(layout.market)
        self._exact[layout.market] = {}
        self.layouts[layout.market] = layout
        self.generation += 1
        self.switches = [*self.switches[-9:], {
            "market": layout.market, "from": before.source_version if before else None,
            "to": layout.source_version, "at": time.time()}]  # fmt: skip
        log.info("%s: switched to %s", layout.market, layout.source_version)

    async def aclose(self) -> None:
        """Close the pooled connections (the shards', the blocklist source's)."""
        if self.follower is not None:
            self.follower.stop()
        if self._session is not None:
            await self._session.close()
            self._session = None
        if self.blocklist is not None:
            self.blocklist.close()

    def markets(self) -> list[str]:
        """The markets this router serves."""
        return sorted(self.layouts)

    async def answer(self, raw: bytes) -> tuple[bytes, list[tuple[bytes, bytes]]]:
        """``(body, extra headers)`` for a raw ``/v1/suggest`` query string, or ``ApiError``.

        Every shard request pins the version of the router's cut, so an answer comes from
        one version only; when the router switched to a new cut while the request ran and a
        shard no longer holds the old one, the whole request is answered again on the new
        cut (never a mix of two).
        """
        generation = self.generation
        try:
            return await self._answer(raw)
        except ApiError as exc:
            if exc.code != "SHARD_MISMATCH" or self.generation == generation:
                raise
        return await self._answer(raw)

    async def _answer(self, raw: bytes) -> tuple[bytes, list[tuple[bytes, bytes]]]:
        """:meth:`answer` on the cut the router holds now."""
        q, market, limit, marks = public_suggest_params(raw)
        layout = self.layouts.get(market)
        if layout is None:
            raise unknown_market(market, self.markets())
        p = normalize_prefix(q)
        version = layout.source_version or ""
        boosted = self.tracker.matching(market, p) if self.tracker is not None else []
        typos = self.typo.typos(len(p))
        if len(p) <= 1:
            page, complete = await self._head_page(layout, p, limit)
            header = b"head"
        else:
            shard = layout.plan.shard_of(p)
            header = str(shard).encode()
            if self.blocklist is None and not boosted and not marks:  # as built, byte for byte
                body = await self._ask(shard, layout, f"q={quote(p, safe='')}&limit={limit}")
                if not typos or not self._short(json.loads(body)["suggestions"], limit):
                    return body, [(SHARD_HEADER, header)]
            page, complete, as_built = await self._shard_page(
                shard, layout, p, limit, bool(boosted)
            )
            if as_built is not None and not boosted and not marks:
                if not typos or not self._short(page, limit):
                    return as_built, [(SHARD_HEADER, header)]
        suggestions = [text for text, _, _ in page]
        scores = [score for _, score, _ in page]
        if boosted:
            suggestions, complete, scores = await self._blend(
                layout, page, complete, boosted, limit
            )
        reply: dict[str, Any] = {"q": p, "version": version, "complete": complete,
                                 "suggestions": suggestions, "scores": scores}  # fmt: skip
        if typos and len(suggestions) < limit and self._short(page, limit):
            await self._corrected(layout, reply, limit)
        if marks:
            variants = transliterations(p)
            reply["highlights"] = [highlight(p, s, variants) for s in reply["suggestions"]]
        return encode_json(reply), [(SHARD_HEADER, header)]

    def _short(self, found: Sequence[object], limit: int) -> bool:
        """Whether the prefix's own answers leave room for the typo fallback."""
        return self.typo.wanted(len(found), limit, self.typo.one_typo_from)

    async def _corrected(self, layout: ShardLayout, reply: dict[str, Any], limit: int) -> None:
        """Fill a short page with typo-tolerant matches, as ``SuggestService`` does, merged
        by typos, then global rank; blocked and shown ones left out. A typo may move a
        prefix into another range: with one typo allowed the first character may only
        become a QWERTY neighbour (an edit of it counts twice, a neighbour slip half), so
        the shards spanning it, its neighbours and its transliteration's first letter are
        asked (``typos=1``); with two, every shard. A shard that fails is left out (the
        extras are best effort; the prefix's own shard has answered)."""
        p = reply["q"]
        n = limit + len(reply["suggestions"])  # some may be shown already
        query = f"q={quote(p, safe='')}&limit=1&fetch={n}&typos=1"
        if self.typo.typos(len(p)) >= 2:
            shards = list(range(layout.plan.n))
        else:
            firsts = {p[0], *(b for a, b in NEIGHBOURS if a == p[0])}
            firsts |= {v[0] for v in transliterations(p) if v}
            shards = sorted({i for ch in firsts for i in shards_spanned(layout.plan, ch)})
        answers = await asyncio.gather(
            *(self._ask(i, layout, query) for i in shards), return_exceptions=True
        )
        found: dict[str, tuple[float, int, float]] = {}
        for raw_body in answers:
            if isinstance(raw_body, ApiError):
                continue
            if isinstance(raw_body, BaseException):
                raise raw_body
            got = json.loads(raw_body)
            for text, typo, rank, score in zip(
                got["suggestions"], got["typos"], got["ranks"], got["scores"], strict=True
            ):
                old = found.get(text)
                if old is None or (typo, rank) < old[:2]:
                    found[text] = (typo, rank, score)
        shown = set(reply["suggestions"])
        extra = sorted(
            (t for t in found if t not in shown and not self._blocked(t)), key=found.__getitem__
        )[: limit - len(shown)]
        if extra:
            reply["typos"] = [0.0] * len(reply["suggestions"]) + [found[t][0] for t in extra]
            reply["suggestions"] = reply["suggestions"] + extra
            reply["scores"] = reply["scores"] + [found[t][2] for t in extra]
            reply["complete"] = False

    def _blocked(self, text: str) -> bool:
        return self.blocklist is not None and self.blocklist.blocks(text)

    async def _shard_page(
        self, shard: int, layout: ShardLayout, p: str, limit: int, scored: bool
    ) -> tuple[list[tuple[str, float, int]], bool, bytes | None]:
        """The best ``limit`` unblocked ``(text, score, 0)`` from the owning shard.

        Asks for ``limit`` first; if blocked ones leave the page short and the shard may
        hold more, asks again for more (doubling), as the single server descends its trie.
        The third item is the shard's body when nothing was filtered (to pass it on).
        """
        base = f"q={quote(p, safe='')}&limit={limit}" + ("&scores=1" if scored else "")
        n = limit
        first = await self._ask(shard, layout, base)
        got = json.loads(first)
        complete = bool(got["complete"])
        while True:
            texts: list[str] = got["suggestions"]
            scores: list[float] = got.get("scores") or [0.0] * len(texts)
            page = [(t, sc, 0) for t, sc in zip(texts, scores, strict=True) if not self._blocked(t)]
            if len(page) == len(texts) and n == limit:
                return page, complete, first
            if len(page) >= limit or len(texts) < n or n >= MAX_FETCH:
                return page[:limit], complete, None
            n = min(MAX_FETCH, max(layout.k, 2 * n, limit + 2 * (len(texts) - len(page))))
            more = f"{base}&fetch={n}" + ("" if scored else "&scores=1")
            got = json.loads(await self._ask(shard, layout, more))

    async def _head_page(
        self, layout: ShardLayout, p: str, limit: int
    ) -> tuple[list[tuple[str, float, int]], bool]:
        """The head table's answer, filtered; over-fetched from every shard ``p`` spans."""
        entry = layout.head.get(p)
        if entry is None:
            return [], True
        top: list[str] = entry["suggestions"]
        scores: list[float] = entry.get("scores") or [0.0] * len(top)
        complete = bool(entry["complete"]) and len(top) <= limit
        page = [(t, sc, 0) for t, sc in zip(top, scores, strict=True) if not self._blocked(t)]
        if len(page) >= limit or len(top) < layout.k:
            return page[:limit], complete
        n = layout.k
        while True:
            n = min(MAX_FETCH, max(2 * n, limit + 2 * (len(top) - len(page))))
            merged, more = await self._scatter(layout, p, n)
            page = [(t, sc, r) for r, t, sc in merged if not self._blocked(t)]
            if len(page) >= limit or not more or n >= MAX_FETCH:
                return page[:limit], complete
            top = [t for _, t, _ in merged]

    async def _scatter(
        self, layout: ShardLayout, p: str, n: int
    ) -> tuple[list[tuple[int, str, float]], bool]:
        """The best ``n`` ``(rank, text, score)`` for a short prefix from every shard it spans,
        merged by global rank; ``more`` if some shard may hold further ones."""
        query = f"q={quote(p, safe='')}&limit=1&fetch={n}&scatter=1&scores=1&ranks=1"
        shards = shards_spanned(layout.plan, p)
        answers = await asyncio.gather(*(self._ask(i, layout, query) for i in shards))
        best: dict[int, tuple[int, str, float]] = {}
        more = False
        for raw_body in answers:
            got = json.loads(raw_body)
            texts = got["suggestions"]
            more = more or len(texts) >= n
            for r, t, sc in zip(got["ranks"], texts, got["scores"], strict=True):
                best[r] = (r, t, sc)  # an id reached by keys in two shards is one suggestion
        return [best[r] for r in sorted(best)[:n]], more

    async def _fetch_exact(self, layout: ShardLayout, terms: Sequence[str]) -> None:
        """Ask the owning shards the scores the given terms lead to, and remember them."""
        by_shard: dict[int, list[str]] = {}
        for term in terms:
            by_shard.setdefault(layout.plan.shard_of(term), []).append(term)

        async def one(shard: int, group: list[str]) -> None:
            for i in range(0, len(group), MAX_EXACT):
                chunk = group[i : i + MAX_EXACT]
                query = f"q={quote(chunk[0], safe='')}&limit=1&scatter=1&" + "&".join(
                    f"exact={quote(t, safe='')}" for t in chunk
                )
                found = json.loads(await self._ask(shard, layout, query)).get("exact", {})
                if self.layouts.get(layout.market) is not layout:
                    return  # the router switched cuts meanwhile: these scores are the old cut's
                cache = self._exact[layout.market]
                if len(cache) > 100_000:
                    cache.clear()  # a bound; the entries are cheap to fetch again
                for t in chunk:
                    hit = found.get(t)
                    cache[t] = (float(hit[0]), bool(hit[1])) if hit else None

        await asyncio.gather(*(one(i, g) for i, g in by_shard.items()))

    async def _blend(
        self,
        layout: ShardLayout,
        page: list[tuple[str, float, int]],
        complete: bool,
        boosted: list[TrendingTerm],
        limit: int,
    ) -> tuple[list[str], bool, list[float]]:
        """``SuggestService._blend`` over the routed page: re-rank by score + boost.

        A trending term not on the page needs its snapshot score; it is usually known
        from :meth:`record_search`, else asked of its shard (whose failure fails the
        request with 503, like any routed prefix of that shard).
        """
        total: dict[str, float] = {text: score for text, score, _ in page}
        usable = [t for t in boosted if not self._blocked(t.query)]
        cache = self._exact[layout.market]
        missing = [t.query for t in usable if t.query not in total and t.query not in cache]
        if missing:
            await self._fetch_exact(layout, missing)
        for term in usable:
            q = term.query
            if q not in total:
                known = cache.get(q)
                total[q] = known[0] if known is not None and known[1] else 0.0
            total[q] += term.boost
        ranked = sorted(total, key=lambda s: (-total[s], s))[:limit]
        return ranked, complete and len(total) <= limit, [total[s] for s in ranked]

    async def _ask(self, shard: int, layout: ShardLayout, query: str) -> bytes:
        stats = self.stats[shard]
        stats.calls += 1
        if layout.source_version:  # answered from this cut only, also while shards switch
            query += f"&version={quote(layout.source_version, safe='')}"
        url = URL(f"{self.addresses[shard]}{SHARD_PATH}?market={quote(layout.market, safe='')}"
                  f"&{query}", encoded=True)  # fmt: skip
        try:
            async with self.session().get(url) as r:
                status, body = r.status, await r.read()
                got = r.headers.get("x-lookup-version", "")
        except TimeoutError:
            raise self._down(stats, layout, f"did not answer within {self.timeout:g} s") from None
        except aiohttp.ClientError as exc:
            reason = str(exc) or type(exc).__name__
            raise self._down(stats, layout, f"is unreachable ({reason})") from None
        if status == 200:
            if layout.source_version and got != layout.source_version:
                raise self._down(
                    stats, layout,
                    f"serves a different cut ({got or 'unknown'}, the router has "
                    f"{layout.source_version})",
                    code="SHARD_MISMATCH",
                )  # fmt: skip
            return body
        if status == 421:
            raise self._down(stats, layout, "does not own this range", code="SHARD_MISMATCH")
        if status == 409:
            if b"VERSION_NOT_HELD" in body:
                what = f"no longer or not yet holds {layout.source_version}"
                raise self._down(stats, layout, what, code="SHARD_MISMATCH")
            raise self._down(stats, layout, "was cut by an older version", code="SHARD_MISMATCH")
        if status >= 500:
            raise self._down(stats, layout, f"answered {status}")
        try:  # a 4xx from the shard is the client's error: pass it on as it is
            err = json.loads(body)
            code, message = str(err["error"]), str(err["message"])
        except (ValueError, KeyError, TypeError):
            code, message = "BAD_REQUEST", body[:200].decode("utf-8", "replace")
        raise ApiError(status, code, message)

    def _down(
        self, stats: ShardStats, layout: ShardLayout, what: str, *, code: str = "SHARD_UNAVAILABLE"
    ) -> ApiError:
        lo, hi = layout.plan.ranges()[stats.shard]
        message = (
            f"shard {stats.shard} of {layout.market} (prefixes {describe_range(lo, hi)}, at "
            f"{stats.address}) {what}; prefixes in other ranges are unaffected"
        )
        stats.failures += 1
        stats.last_error, stats.last_error_at = message, time.time()
        return ApiError(503, code, message, headers={"Retry-After": "1"})

    async def probe(self, timeout: float = 1.0) -> list[dict[str, Any]]:
        """Every shard's own ``/healthz`` (concurrently), beside what the router has seen."""

        async def one(stats: ShardStats) -> dict[str, Any]:
            out = stats.to_dict()
            t0 = time.perf_counter()
            try:
                async with self.session().get(
                    f"{stats.address}/healthz", timeout=aiohttp.ClientTimeout(total=timeout)
                ) as r:
                    out["up"] = r.status == 200
                    held = json.loads(await r.read()).get("systems", {}).get("typeahead-shard", {})
                out["pid"] = held.get("pid")
                out["holds"] = held.get("markets", {})
            except (aiohttp.ClientError, TimeoutError, ValueError, AttributeError) as exc:
                out["up"], out["error"] = False, str(exc) or type(exc).__name__
            out["probeMs"] = round((time.perf_counter() - t0) * 1000, 2)
            return out

        return list(await asyncio.gather(*(one(s) for s in self.stats)))

    def describe(self) -> dict[str, Any]:
        """The plans, ranges and head-table sizes per market (for the status endpoint)."""
        return {
            m: {
                "version": layout.source_version,
                "shards": layout.plan.n,
                "ranges": [list(r) for r in layout.plan.ranges()],
                "cost": [round(c, 4) for c in layout.plan.cost],
                "keys": layout.plan.keys,
                "traffic": [round(t, 4) for t in layout.plan.traffic],
                "headPrefixes": len(layout.head),
            }
            for m, layout in self.layouts.items()
        }


class RouterEndpoint:
    """``GET /v1/suggest`` answered by a :class:`ShardRouter` (plain ASGI, like the original)."""

    def __init__(self, router: ShardRouter) -> None:
        self.router = router

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not allows_get(scope):
            await send_refusal(scope, send, NOT_GET)
            return
        try:
            body, headers = await self.router.answer(scope.get("query_string", b""))
        except ApiError as exc:
            await send_refusal(scope, send, exc)
            return
        await send_answer(scope, send, body, headers)


@dataclass(frozen=True)
class RouterPolicy:
    """The router's :class:`~lookup.typeahead.manage.ServeTimePolicy` (the state
    :meth:`ShardRouter.attach_serving` gave it)."""

    router: ShardRouter
    blocklist: HotBlocklist
    tracker: TrendingTracker

    def known_markets(self) -> list[str]:
        return self.router.markets()

    async def record_search(
        self,
        query: str,
        market: str,
        user: str | None,
        network: str | None = None,
        *,
        is_bot: bool = False,
        pick: Pick | None = None,
    ) -> str | None:
        return await self.router.record_search(
            query, market, user, network, is_bot=is_bot, pick=pick
        )

    def trending_now(self, market: str) -> tuple[list[TrendingTerm], TrendingPolicy | None]:
        return self.tracker.trending(market), self.tracker.policy

    def hot_blocklist(self) -> HotBlocklist:
        return self.blocklist


def install_router(mounts: Mounts, router: ShardRouter) -> ShardRouter:
    """Mount ``/v1/suggest`` through the router, its status page and health probe, and the
    single server's serve-time endpoints: ``POST /v1/searches``, the trending set and the
    hot blocklist (over ``mounts.data_dir`` unless :meth:`ShardRouter.attach_serving` ran)."""
    if router.blocklist is None or router.tracker is None:
        router.attach_serving(mounts.data_dir)
    blocklist, tracker = router.blocklist, router.tracker
    assert blocklist is not None and tracker is not None
    mounts.fast_routes.append(Route("/v1/suggest", RouterEndpoint(router)))
    api = mounts.api
    api.state.shard_router = router

    @api.get(
        "/v1/typeahead/shards",
        tags=TAGS,
        summary="The shard plan per market and every shard server's health",
    )
    async def shards() -> dict[str, Any]:
        follower = router.follower
        return {"markets": router.describe(), "servers": await router.probe(),
                "following": follower is not None, "switches": router.switches,
                "followErrors": dict(follower.errors) if follower is not None else {}}  # fmt: skip

    mount_serve_time(
        api,
        RouterPolicy(router, blocklist, tracker),
        admin_token_of(mounts),
        limiter=search_limiter(),
        trust_forwarded_for=settings.get("trust_forwarded_for"),
        recent=install_recent(mounts, admin_token_of(mounts), router.markets),
    )

    mount_poller(mounts, blocklist.refresh, "blocklist refresh")  # as the single server
    mounts.on_shutdown.append(router.aclose)
    feed = router.search_log
    if feed is not None:  # a stream's copier, as the single server runs it
        mounts.on_startup.append(feed.start)
        mounts.on_shutdown.append(feed.close)
    mounts.on_startup.append(tracker.start)  # a shared store's trending refresher
    mounts.on_shutdown.append(tracker.close)

    def probe() -> dict[str, Any]:
        return {
            "status": "ok",
            "markets": {m: lay.source_version for m, lay in router.layouts.items()},
            "shards": [s.to_dict() for s in router.stats],
            "blocklistTerms": len(blocklist.hot_terms),
        }

    mounts.health["typeahead-router"] = probe
    return router


__all__ = [
    "RouterEndpoint",
    "RouterPolicy",
    "ShardRouter",
    "ShardStats",
    "install_router",
    "shards_spanned",
]
