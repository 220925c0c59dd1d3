"""robots.txt to RFC 9309, parsed by ``protego``, cached per host, failing closed.

The rules that matter (RFC 9309 §2.3.1):

- **2xx**: parse the file (only its first 500 KiB) and obey the group for our
  product token, falling back to ``*``; the most specific (longest) rule wins,
  ``*`` and ``$`` wildcards included. ``Crawl-delay`` is not in the RFC, but we
  honour it.
- **4xx** ("unavailable"): there are no restrictions.
- **5xx, 429, timeouts, refused connections** ("unreachable"): assume complete
  disallow until the file can be read. Scrapy's default fails open here; we do not —
  a struggling server is the last one to crawl.
- Cache a good answer for at most 24 hours; retry an unreachable one sooner.
- While the file is unreachable for a network reason (timeout, refused connection,
  DNS), the last parsed copy stands in for up to 30 days after it was fetched
  (RFC 9309 §2.4 allows a cached copy then). It is never an "allow-all" from a 4xx and
  never stands in for a 5xx or 429: a server that says it is struggling is not crawled.
- A 2xx answer that is not a rules file (binary, an HTML page, no rule line) is
  disallow-all, retried like an unreachable file (seed 003: never permission).

Meta robots tags and ``X-Robots-Tag`` headers (page-level) are handled by
:mod:`lookup.crawler.parse`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from protego import Protego
from w3lib.encoding import read_bom

from lookup.crawler.state import HostRecord, RobotsRecord
from lookup.kit.urlnorm import host_of, normalize_url

if TYPE_CHECKING:
    from lookup.crawler.fetcher import Fetcher, FetchResult

__all__ = ["MAX_ROBOTS_BYTES", "MAX_ROBOTS_REDIRECTS", "RobotsCache", "RobotsHop", "RobotsPolicy"]

#: RFC 9309 §2.5: crawlers must parse at least 500 KiB; we parse exactly that much.
MAX_ROBOTS_BYTES = 500 * 1024
#: RFC 9309 §2.3.1.2: follow at least five consecutive redirects.
MAX_ROBOTS_REDIRECTS = 5
DAY = 24 * 3600.0
#: How long after it was fetched the last parsed copy may stand in for an unreachable file.
LAST_GOOD_COPY = 30 * DAY


@dataclass
class RobotsPolicy:
    """What one host's robots.txt allows us, and until when we may rely on it.

    ``state`` is ``"rules"`` (a parsed file), ``"allow-all"`` (4xx) or
    ``"disallow-all"`` (unreachable). Times are wall-clock seconds.
    """

    host: str
    state: str
    agent: str
    status: int | None = None
    body: str = ""
    reason: str = ""
    fetched_at: float = field(default_factory=time.time)
    expires_at: float = 0.0
    _parser: Protego | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.state == "rules" and self._parser is None:
            self._parser = Protego.parse(self.body)

    def allows(self, url: str) -> bool:
        """May ``url`` (on this host) be fetched?"""
        if self.state == "allow-all":
            return True
        if self.state == "disallow-all":
            return False
        assert self._parser is not None
        return bool(self._parser.can_fetch(url, self.agent))

    def decision(self, url: str) -> str:
        """A short human explanation of the decision for ``url``."""
        if self.state == "allow-all":
            return f"allowed: robots.txt answered {self.status} (no restrictions)"
        if self.state == "disallow-all":
            what = "not a rules file" if self.reason.startswith("unparseable") else "unreachable"
            return f"disallowed: robots.txt {what} ({self.reason}); failing closed"
        verdict = "allowed" if self.allows(url) else "disallowed"
        path = urlsplit(url).path or "/"
        return f"{verdict} by robots.txt rules for {self.agent} ({path})"

    @property
    def crawl_delay(self) -> float | None:
        if self._parser is None:
            return None
        delay = self._parser.crawl_delay(self.agent)
        return float(delay) if delay is not None else None

    @property
    def sitemaps(self) -> list[str]:
        return list(self._parser.sitemaps) if self._parser is not None else []

    def expired(self, now: float | None = None) -> bool:
        return (time.time() if now is None else now) >= self.expires_at

    # -- construction --------------------------------------------------------------
    @classmethod
    def from_response(
        cls,
        host: str,
        agent: str,
        status: int,
        body: bytes,
        *,
        ttl: float = DAY,
        retry: float = 600.0,
        now: float | None = None,
    ) -> RobotsPolicy:
        """The policy implied by an HTTP answer for ``/robots.txt`` (after redirects)."""
        now = time.time() if now is None else now
        ttl = min(ttl, DAY)
        if 200 <= status < 300:
            text, problem = read_rules_file(body[:MAX_ROBOTS_BYTES])
            if problem is not None:  # seed 003: an unparseable file is never permission
                reason = f"unparseable: {problem}"
                return cls(host, "disallow-all", agent, status, "", reason, now, now + retry)
            return cls(host, "rules", agent, status, text, "", now, now + ttl)
        if status == 429 or status >= 500:
            return cls(host, "disallow-all", agent, status, "", f"HTTP {status}", now, now + retry)
        if 400 <= status < 500:
            return cls(host, "allow-all", agent, status, "", f"HTTP {status}", now, now + ttl)
        # 1xx, or a 3xx that was not followed: treat as unreachable.
        return cls(host, "disallow-all", agent, status, "", f"HTTP {status}", now, now + retry)

    @classmethod
    def unreachable(
        cls, host: str, agent: str, reason: str, *, retry: float = 600.0, now: float | None = None
    ) -> RobotsPolicy:
        """The policy when robots.txt could not be fetched at all: disallow everything."""
        now = time.time() if now is None else now
        return cls(host, "disallow-all", agent, None, "", reason, now, now + retry)


#: Lines of a rules file (RFC 9309 §2.2 and the common extensions): a file with text
#: but none of these is not a rules file.
_DIRECTIVE = re.compile(
    r"\s*(user-agent|allow|disallow|sitemap|crawl-delay|host|request-rate|visit-time"
    r"|clean-param|noindex)\s*:",
    re.I,
)
_HTML = re.compile(rb"<\s*(!doctype\s+html|html|head|body|title|form)\b", re.I)


def read_rules_file(raw: bytes) -> tuple[str, str | None]:
    """A 2xx robots.txt body as text, or why it is not a rules file.

    A byte-order mark says how to read it (UTF-8 or UTF-16); otherwise it is UTF-8 (RFC
    9309 §2.3), with undecodable bytes replaced. Refused: bytes that are not text (NULs,
    control characters — UTF-16 without a mark looks like this), an HTML page (a login
    or error page served for every path) and text with no rule line at all. Empty and
    comment-only files are valid: they restrict nothing.
    """
    bom, mark = read_bom(raw)
    if bom is not None and mark is not None:
        return raw[len(mark) :].decode(bom, errors="replace"), None
    head = raw[:2048]
    controls = sum(1 for b in head if b < 9 or 13 < b < 32)
    if b"\x00" in head or (head and controls / len(head) > 0.05):
        return "", "binary content (NUL or control bytes; UTF-16 needs a byte-order mark)"
    if head.lstrip()[:1] == b"<" and _HTML.search(head):
        return "", "an HTML page, not a rules file"
    text = raw.decode("utf-8", errors="replace")
    lines = [line.split("#", 1)[0].strip() for line in text.splitlines()]
    content = [line for line in lines if line]
    if content and not any(_DIRECTIVE.match(line) for line in content):
        return "", "no rule lines (user-agent, allow, disallow, sitemap)"
    return text, None


class RobotsCache:
    """Per-host robots policies, each valid until it expires (at most 24 h)."""

    def __init__(self, agent: str, *, ttl: float = DAY, retry: float = 600.0) -> None:
        self.agent = agent
        self.ttl = min(ttl, DAY)
        self.retry = retry
        self._policies: dict[str, RobotsPolicy] = {}

    def get(self, host: str, now: float | None = None) -> RobotsPolicy | None:
        """The host's policy if we have one that has not expired."""
        policy = self._policies.get(host)
        if policy is None or policy.expired(now):
            return None
        return policy

    def peek(self, host: str) -> RobotsPolicy | None:
        """The host's last policy, expired or not."""
        return self._policies.get(host)

    def put(self, policy: RobotsPolicy) -> None:
        self._policies[policy.host] = policy

    def from_response(self, host: str, status: int, body: bytes) -> RobotsPolicy:
        policy = RobotsPolicy.from_response(
            host, self.agent, status, body, ttl=self.ttl, retry=self.retry
        )
        self.put(policy)
        return policy

    def unreachable(self, host: str, reason: str, now: float | None = None) -> RobotsPolicy:
        """The policy while ``host``'s robots.txt cannot be fetched: its last parsed copy
        if that is at most 30 days old (asked again after ``retry``), else disallow-all."""
        now = time.time() if now is None else now
        last = self._policies.get(host)
        if last is not None and last.state == "rules" and now - last.fetched_at <= LAST_GOOD_COPY:
            age = (now - last.fetched_at) / DAY
            policy = RobotsPolicy(
                host, "rules", self.agent, last.status, last.body,
                f"unreachable ({reason}); obeying the copy fetched {age:.1f} days ago",
                last.fetched_at, now + self.retry,
            )  # fmt: skip
        else:
            policy = RobotsPolicy.unreachable(host, self.agent, reason, retry=self.retry, now=now)
        self.put(policy)
        return policy

    def __len__(self) -> int:
        return len(self._policies)

    async def read(
        self, fetcher: Fetcher, host: str, scheme: str, hop: RobotsHop | None = None
    ) -> RobotsAnswer:
        """Ask ``host`` for its robots.txt and cache the policy its answer makes.

        RFC 9309 §2.3.1.2: follow at least five redirects, even to other hosts. A hop on
        the same host is this host's request; a hop to another host goes through ``hop``
        (the crawler asks that host in its turn, under its politeness) — without one, a
        cross-host redirect fails closed. ``took`` counts this host's own requests only.
        """
        url = current = f"{scheme}://{host}/robots.txt"
        res = await fetcher.fetch(url, accept=None, max_bytes=MAX_ROBOTS_BYTES)
        took, hops, followed = res.took, 0, 0
        while res.ok and res.status in _REDIRECTS and followed < MAX_ROBOTS_REDIRECTS:
            target = normalize_url(res.header("location") or "", current)
            if target is None or (host_of(target) != host and hop is None):
                break
            followed += 1
            current = target
            if host_of(target) == host:
                hops += 1
                res = await fetcher.fetch(target, accept=None, max_bytes=MAX_ROBOTS_BYTES)
                took += res.took
            else:
                assert hop is not None
                res = await hop(target, took)
        if not res.ok:
            policy = self.unreachable(host, f"{res.error}: {res.detail}")
        elif res.status in _REDIRECTS:
            policy = self.unreachable(host, f"HTTP {res.status} redirect not followed")
        else:
            assert res.status is not None
            policy = self.from_response(host, res.status, res.body)
        return RobotsAnswer(policy, url, res, took, hops)

    def restore(self, h: HostRecord, now: float) -> None:
        """Put back a host's stored policy after a restart, if it was readable and is fresh.

        A failing robots.txt is re-read at once after a restart: fail closed, retry. An
        expired parsed copy younger than 30 days is kept too, only to stand in if the
        file turns out to be unreachable (it is re-read first, as it has expired).
        """
        fresh = (h.robots_expires_at or 0) > now
        last_good = h.robots_state == "rules" and now - (h.robots_fetched_at or 0) <= LAST_GOOD_COPY
        if h.robots_state in ("rules", "allow-all") and (fresh or last_good):
            assert h.robots_expires_at is not None
            self.put(
                RobotsPolicy(
                    h.host,
                    h.robots_state,
                    self.agent,
                    h.robots_status,
                    h.robots_body or "",
                    h.robots_reason or "",
                    h.robots_fetched_at or now,
                    h.robots_expires_at,
                )  # fmt: skip
            )


_REDIRECTS = (301, 302, 303, 307, 308)

#: Fetch a robots.txt redirect target on another host: ``(url, took so far) -> result``.
RobotsHop = Callable[[str, float], Awaitable["FetchResult"]]


@dataclass(frozen=True)
class RobotsAnswer:
    """A robots.txt request: the policy it made, what was asked and how long it took."""

    policy: RobotsPolicy
    url: str
    result: FetchResult
    took: float  # seconds, every hop included
    hops: int  # same-host redirects followed (this host's extra requests)

    @property
    def record(self) -> RobotsRecord:
        """The policy as the crawl state keeps it."""
        p = self.policy
        return RobotsRecord(
            p.state, p.status, p.body, p.reason, p.fetched_at, p.expires_at, p.crawl_delay
        )
