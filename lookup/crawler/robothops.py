"""Reading a robots.txt whose redirect leads to another host (RFC 9309 §2.3.1.2).

Part of :class:`~lookup.crawler.engine.Crawler` (a mixin, to keep the crawl loop's module
short): a cross-host hop waits for that host's turn in the frontier — its own delay and
its address's — and is recorded like any request to it. When the target is that host's
own ``/robots.txt``, the answer is its policy too (read once, never twice): a copy still
fresh is used without a request, a new answer is kept as that host's robots.txt.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from lookup.crawler.fetcher import FetchResult
from lookup.crawler.robots import MAX_ROBOTS_BYTES, RobotsAnswer, RobotsPolicy
from lookup.crawler.soft404 import probe_path
from lookup.crawler.state import FetchRecord, HostPause
from lookup.kit.urlnorm import host_of

__all__ = ["RobotsHops"]


class RobotsHops:
    """The crawler's robots.txt bookkeeping shared by its own reads and cross-host hops."""

    # The crawler's state these methods use (set by Crawler._open / run).
    frontier: Any
    robots: Any
    store: Any
    fetcher: Any
    _probe_urls: dict[str, str]
    _counts: Any

    if TYPE_CHECKING:  # the crawler's own methods these use (defined by Crawler)

        def _wants_probe(self, host: str) -> bool: ...

        async def _addresses(self, hosts: set[str]) -> dict[str, str | Exception]: ...

        def _pause(self, host: str, delay: float) -> HostPause: ...

    def _robots_known(self, host: str, scheme: str, policy: RobotsPolicy) -> bool:
        """The frontier learns ``host``'s policy (and whether to probe it); True: failing."""
        failing = policy.state == "disallow-all"
        self.frontier.robots_known(host, crawl_delay=policy.crawl_delay)
        hq = self.frontier.host(host)
        if hq is not None:
            hq.needs_robots = hq.waiting_robots = failing
        probe = not failing and self._wants_probe(host)
        if probe and host not in self._probe_urls:
            self._probe_urls[host] = f"{scheme}://{host}{probe_path()}"
        self.frontier.probe_needed(host, probe)
        return failing

    async def _robots_hop(self, url: str) -> FetchResult:
        """One robots.txt redirect hop to another host, in that host's turn (its delay and
        its address's), recorded like any request to it."""
        host = host_of(url)
        address = (await self._addresses({host})).get(host)
        hop = await self.frontier.wait_lease(host, address) if isinstance(address, str) else None
        if hop is None:
            return FetchResult(url, "", time.time(), 0.0, error="timeout", detail=f"{host}")
        scheme = urlsplit(url).scheme
        own = url == f"{scheme}://{host}/robots.txt"
        cached = self.robots.get(host) if own else None
        if cached is not None and cached.state != "disallow-all":  # read already: no request
            self.frontier.release(hop)
            body = cached.body.encode("utf-8")
            return FetchResult(url, hop.address, time.time(), 0.0, status=cached.status, body=body)
        try:
            res = await self.fetcher.fetch(url, accept=None, max_bytes=MAX_ROBOTS_BYTES)
        except BaseException:  # cancelled: the host's turn is given back all the same
            self.frontier.complete(hop, 0.0)
            raise
        delay = self.frontier.complete(hop, res.took)
        self._counts["requests"] += 1
        own = own and res.ok and res.status not in (301, 302, 303, 307, 308)
        if own:  # the target is that host's own robots.txt: its policy too, read once
            self._counts["robots"] += 1
            policy = self.robots.from_response(host, res.status or 0, res.body)
            self._counts["robots-unparseable"] += policy.reason.startswith("unparseable")
            self._robots_known(host, scheme, policy)
        with self.store.transaction():
            if own:
                record = RobotsAnswer(policy, url, res, res.took, 0).record
                self.store.ensure_host(host, hop.address, scheme)
                self.store.record_robots(
                    host, record, self._pause(host, delay), self._probe_urls.get(host)
                )
            self.store.add_fetch(
                FetchRecord(
                    url,
                    host,
                    hop.address,
                    "robots",
                    res.started,
                    res.took,
                    res.status,
                    policy.state if own else "robots-redirect-hop",
                    delay,
                )  # fmt: skip
            )
        return res
