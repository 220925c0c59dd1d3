"""The safety scanner: checks links after creation and for their whole life, off the request path.

Creation already refuses blocked domains synchronously (:mod:`~lookup.shortener.urls`).
The scanner is the second and third line of the seed's defence:

* **after creation** — ``created`` and ``retargeted`` events (the service's ``notify``,
  which :mod:`lookup.shortener.app` routes to :meth:`Scanner.on_link_event`) put the key
  on a :class:`ScanQueue`; a worker thread scans it within moments;
* **over time** — popular links (the ``hot_top`` most clicked keys of the last day,
  from the click aggregator) are rescanned every ``hot_interval_s``; every other link
  is rescanned by a sweep that walks the store in key order, one page every
  ``sweep_interval_s``, and starts again at the end;
* **when the rules change** — a new blocklist version (an edit of its source — the file,
  or the fleet's table — or ``POST /v1/shortener/blocklist`` through any process) or a
  changed threat feed starts a full sweep at once; so does a start with rules other than
  those of the last full sweep (remembered in ``<data-dir>/shortener/scanner.json``), e.g.
  a blocklist edited while the server was down.

**Once per fleet.** The sweeps, the rule-change rescans and the hot-link rescans run on
one elected process (:class:`~lookup.kit.leadership.Leadership`: an advisory lock when the
store is PostgreSQL; a successor takes over when the leader dies); every process still
scans the links it created or retargeted itself, at once.

Each scan also asks where the destination's host points *now* (``resolve``, the system
resolver by default; tests inject a stub): a name that has started resolving into a
private, loopback, link-local or other non-public range (:class:`~lookup.shortener.urls.
AddressPolicy` — DNS rebinding, a parked domain re-pointed at 169.254.169.254) makes the
link ``MALICIOUS`` and disables it; it is re-enabled when the name points back out.

The verdict (:func:`assess`) needs no network: the blocklist, then a score from a
local threat feed (``threats.txt``: known-bad hosts, abused TLDs, phishing keywords,
brands and their real domains, other shorteners) and the URL's shape (IP-literal
host, punycode, many labels, odd port). ``MALICIOUS`` disables the link and purges
every cache layer (the :class:`LinkActions` port, i.e. ``service.set_scan_verdict``),
so the next click gets the warning
page; ``SUSPICIOUS`` is shown on the preview page. A later clean verdict (say, the
domain left the blocklist) re-enables a link the scanner had disabled — never one
its owner disabled.
"""

from __future__ import annotations

import hashlib
import heapq
import ipaddress
import itertools
import json
import logging
import os
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

from lookup.kit.admin import ADMIN_TOKEN_ENV, is_admin
from lookup.kit.background import BackgroundTask
from lookup.kit.leadership import Leadership, open_leadership
from lookup.shortener.links import LinkStore
from lookup.shortener.model import Link, Status
from lookup.shortener.urls import (
    AddressPolicy,
    Blocklist,
    UrlRejected,
    normalize_host,
    system_resolver,
)

log = logging.getLogger("lookup.shortener.scanner")

DEFAULT_FEED = Path(__file__).with_name("threats.txt")
MALICIOUS_SCORE = 6
SUSPICIOUS_SCORE = 3
MAX_KEYWORD_SCORE = 3
SCANNER_ACTOR = "scanner"

_WORDS = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


# -- the threat feed ---------------------------------------------------------------------


@dataclass(frozen=True)
class ThreatFeed:
    """The parsed local threat feed (see ``threats.txt`` for the format)."""

    domains: frozenset[str] = frozenset()
    tlds: dict[str, int] = field(default_factory=dict)
    keywords: dict[str, int] = field(default_factory=dict)
    brands: dict[str, tuple[str, ...]] = field(default_factory=dict)
    shorteners: frozenset[str] = frozenset()
    version: str = ""

    @classmethod
    def parse(cls, text: str) -> ThreatFeed:
        """A feed from its text; malformed lines are skipped (a feed never crashes the scanner)."""
        domains: set[str] = set()
        tlds: dict[str, int] = {}
        keywords: dict[str, int] = {}
        brands: dict[str, tuple[str, ...]] = {}
        shorteners: set[str] = set()
        for line in text.splitlines():
            parts = line.split("#", 1)[0].split()
            if len(parts) < 2:
                continue
            kind, args = parts[0].lower(), [p.lower() for p in parts[1:]]
            try:
                if kind == "domain":
                    domains.add(normalize_host(args[0]))
                elif kind == "shortener":
                    shorteners.add(normalize_host(args[0]))
                elif kind == "tld":
                    tlds[args[0].lstrip(".")] = int(args[1]) if len(args) > 1 else 1
                elif kind == "keyword":
                    keywords[args[0]] = int(args[1]) if len(args) > 1 else 1
                elif kind == "brand" and len(args) > 1:
                    brands[args[0]] = tuple(normalize_host(d) for d in args[1:])
            except (UrlRejected, ValueError):
                continue
        digest = hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:16]
        return cls(
            frozenset(domains), tlds, keywords, brands, frozenset(shorteners), version=digest
        )

    @classmethod
    def load(cls, path: str | os.PathLike[str] = DEFAULT_FEED) -> ThreatFeed:
        """The feed in ``path`` (an empty feed if the file cannot be read)."""
        try:
            return cls.parse(Path(path).read_text(encoding="utf-8", errors="replace"))
        except OSError:
            log.warning("threat feed %s cannot be read; scanning with the blocklist only", path)
            return cls()


class FeedFile:
    """A :class:`ThreatFeed` that re-reads its file when the file's mtime changes."""

    def __init__(self, path: str | os.PathLike[str] = DEFAULT_FEED) -> None:
        self.path = Path(path)
        self._mtime: int | None = None
        self.feed = ThreatFeed()
        self.current()

    def current(self) -> ThreatFeed:
        """The feed as the file says now."""
        try:
            mtime: int | None = self.path.stat().st_mtime_ns
        except OSError:
            mtime = None
        if mtime != self._mtime:
            self._mtime = mtime
            self.feed = ThreatFeed.load(self.path) if mtime is not None else ThreatFeed()
        return self.feed


# -- the verdict -------------------------------------------------------------------------


@dataclass(frozen=True)
class Assessment:
    """A verdict with its score and the reasons behind it (shown to people)."""

    verdict: str
    score: int
    reasons: tuple[str, ...]


def _under(host: str, domains: Iterable[str]) -> str | None:
    for domain in domains:
        if host == domain or host.endswith("." + domain):
            return domain
    return None


def _label_words(host: str) -> set[str]:
    words: set[str] = set()
    for label in host.split("."):
        words.add(label)
        words.update(p for p in re.split(r"[-_0-9]+", label) if p)
    return words


def assess(url: str, blocklist: Blocklist | None, feed: ThreatFeed) -> Assessment:
    """The scanner's verdict for one (already normalised) long URL; no network."""
    try:
        parts = urlsplit(url)
        host = normalize_host(parts.hostname or "")
        port = parts.port
    except (ValueError, UrlRejected):
        return Assessment("MALICIOUS", MALICIOUS_SCORE, ("the URL cannot be parsed",))
    if blocklist is not None:
        blocked = blocklist.match(host)
        if blocked is not None:
            return Assessment("MALICIOUS", MALICIOUS_SCORE, (f"{blocked} is on the blocklist",))
    bad = _under(host, feed.domains)
    if bad is not None:
        return Assessment("MALICIOUS", MALICIOUS_SCORE, (f"{bad} is in the threat feed",))
    score = 0
    reasons: list[str] = []

    def add(points: int, reason: str) -> None:
        nonlocal score
        score += points
        reasons.append(f"{reason} (+{points})")

    is_ip = False
    try:
        ipaddress.ip_address(host)
        is_ip = True
    except ValueError:
        pass
    if is_ip:
        add(3, "the host is a bare IP address")
    else:
        tld = host.rsplit(".", 1)[-1]
        if tld in feed.tlds:
            add(feed.tlds[tld], f".{tld} is a frequently abused top-level domain")
        if any(label.startswith("xn--") for label in host.split(".")):
            add(2, "the host name uses punycode (look-alike letters)")
        if host.count(".") >= 4:
            add(1, "the host name has many labels")
        if len(host) > 50:
            add(1, "the host name is unusually long")
    if port is not None and port not in (80, 443):
        add(1, f"a non-standard port ({port})")
    shortener = _under(host, feed.shorteners)
    if shortener is not None:
        add(2, f"it points to another shortener ({shortener}), hiding the destination")
    host_words = _label_words(host)
    path_text = unquote(f"{parts.path}?{parts.query}").lower()
    path_words = set(_WORDS.findall(path_text))
    for brand, official in feed.brands.items():
        if _under(host, official) is not None:
            continue
        if brand in host_words:
            add(5, f"the host imitates {brand} but is not {official[0]}")
        elif brand in path_words:
            add(2, f"the path names {brand} on a host that is not {official[0]}")
    found = sorted((host_words | path_words) & set(feed.keywords))
    if found:
        points = min(MAX_KEYWORD_SCORE, sum(feed.keywords[w] for w in found))
        add(points, "phishing words: " + ", ".join(found))
    if score >= MALICIOUS_SCORE:
        verdict = "MALICIOUS"
    elif score >= SUSPICIOUS_SCORE:
        verdict = "SUSPICIOUS"
    else:
        verdict = "SAFE"
    return Assessment(verdict, score, tuple(reasons))


# -- the queue ---------------------------------------------------------------------------


class ScanQueue:
    """Keys waiting for a scan, earliest due first; a key waits at most once (thread-safe)."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, str, str]] = []
        self._due: dict[str, float] = {}
        self._seq = itertools.count()
        self._cond = threading.Condition()

    def put(self, key: str, due: float, reason: str) -> None:
        """Scan ``key`` at ``due`` (or earlier, if it is already waiting for an earlier time)."""
        with self._cond:
            known = self._due.get(key)
            if known is not None and known <= due:
                return
            self._due[key] = due
            heapq.heappush(self._heap, (due, next(self._seq), key, reason))
            self._cond.notify_all()

    def pop_due(self, now: float, limit: int = 100) -> list[tuple[str, str]]:
        """Up to ``limit`` ``(key, reason)`` pairs whose time has come."""
        out: list[tuple[str, str]] = []
        with self._cond:
            while self._heap and len(out) < limit and self._heap[0][0] <= now:
                due, _, key, reason = heapq.heappop(self._heap)
                if self._due.get(key) != due:
                    continue  # superseded by an earlier entry for the same key
                del self._due[key]
                out.append((key, reason))
        return out

    def next_due(self) -> float | None:
        """When the earliest waiting key is due, or None when nothing waits."""
        with self._cond:
            while self._heap and self._due.get(self._heap[0][2]) != self._heap[0][0]:
                heapq.heappop(self._heap)
            return self._heap[0][0] if self._heap else None

    def wait(self, timeout: float) -> None:
        """Sleep until something is put or ``timeout`` passes."""
        with self._cond:
            self._cond.wait(timeout)

    def wake(self) -> None:
        """Wake a waiting worker."""
        with self._cond:
            self._cond.notify_all()

    def __len__(self) -> int:
        with self._cond:
            return len(self._due)


# -- the scanner -------------------------------------------------------------------------


class LinkActions(Protocol):
    """What the scanner does to links: record verdicts, re-enable (the link service)."""

    def set_scan_verdict(
        self,
        key: str,
        verdict_name: str,
        *,
        reasons: tuple[str, ...] | list[str] = (),
        actor: str = SCANNER_ACTOR,
    ) -> Link:
        """Store a verdict (MALICIOUS also disables) and purge every cache layer."""
        ...

    def enable(self, key: str, *, actor: str = SCANNER_ACTOR) -> Link:
        """Lift a safety disable."""
        ...


#: The most clicked keys since a time, most first (the click aggregator's ``top_keys``).
HotKeys = Callable[[float, int], list[tuple[str, int]]]


class Scanner:
    """Scans links off the request path and acts on the verdicts (see the module docstring).

    It reads links from ``store``, judges them against ``blocklist`` and the threat feed,
    acts through ``actions`` (the link service), and rescans the keys ``hot_keys`` names
    (analytics; None without it). Its state file lives in ``state_dir``.
    """

    def __init__(
        self,
        store: LinkStore,
        actions: LinkActions,
        blocklist: Blocklist,
        *,
        state_dir: str | os.PathLike[str],
        feed: FeedFile | None = None,
        hot_keys: HotKeys | None = None,
        clock: Callable[[], float] = time.time,
        hot_interval_s: float = 3_600.0,
        hot_top: int = 100,
        sweep_interval_s: float = 60.0,
        sweep_page: int = 500,
        tick_s: float = 0.5,
        addresses: AddressPolicy | None = None,
        resolve: Callable[[str], list[str]] | None = None,
        leadership: Leadership | None = None,
    ) -> None:
        self.store = store
        self.leadership = leadership or open_leadership("solo:", "lookup.shortener.scanner")
        self.leading = False
        self.addresses = addresses or AddressPolicy()
        self.resolve = resolve or system_resolver
        self.actions = actions
        self.blocklist = blocklist
        self.feed_file = feed or FeedFile()
        self.hot_keys = hot_keys
        self.clock = clock
        self.hot_interval_s = hot_interval_s
        self.hot_top = hot_top
        self.sweep_interval_s = sweep_interval_s
        self.sweep_page = sweep_page
        self.tick_s = tick_s
        self.queue = ScanQueue()
        self._lock = threading.RLock()
        self._stopping = threading.Event()
        self._task = BackgroundTask("link-scanner", self._round, tick_s, logger=log, drain=True)
        self._rules = self._rules_version()
        self._state_path = Path(state_dir) / "scanner.json"
        self._sweep_cursor: str | None = ""
        # A full sweep at once unless the last one ran with these very rules.
        self._sweep_fast = self._load_state() != list(self._rules)
        self._next_sweep = clock() + sweep_interval_s
        self._next_hot = 0.0
        self.scanned = 0
        self.verdicts: Counter[str] = Counter()
        self.disabled = 0
        self.reenabled = 0
        self.full_sweeps = 0
        self.rule_changes = 0
        self.errors = 0
        self.private_answers = 0
        self.last_assessment: dict[str, Assessment] = {}

    # -- inputs ------------------------------------------------------------------------

    def on_link_event(self, event: str, link: Link) -> None:
        """Queue new and retargeted links for a scan now (the service's ``notify``)."""
        if event in ("created", "retargeted"):
            self.queue.put(link.key, self.clock(), event)

    def _load_state(self) -> Any:
        try:
            return json.loads(self._state_path.read_text(encoding="utf-8")).get("rules")
        except (OSError, ValueError, AttributeError):
            return None

    def _save_state(self) -> None:
        try:
            tmp = self._state_path.with_name(f".{self._state_path.name}.{os.getpid()}")
            tmp.write_text(json.dumps({"rules": list(self._rules)}), encoding="utf-8")
            os.replace(tmp, self._state_path)
        except OSError:
            log.warning("could not record the scanner's state in %s", self._state_path)

    def _rules_version(self) -> tuple[str, str]:
        self.blocklist.domains()  # re-reads the file if its mtime changed
        return (self.blocklist.version, self.feed_file.current().version)

    def request(self, key: str, reason: str = "requested") -> None:
        """Queue ``key`` for a scan now."""
        self.queue.put(key, self.clock(), reason)

    def rules_changed(self) -> None:
        """Start a full sweep now (the blocklist or the feed changed)."""
        with self._lock:
            self.rule_changes += 1
            self._sweep_cursor = ""
            self._sweep_fast = True
        self.queue.wake()

    # -- one scan ----------------------------------------------------------------------

    def scan(self, key: str) -> Assessment | None:
        """Scan one link now and act on the verdict; None for unknown keys and tombstones."""
        link = self.store.get(key)
        if link is None or link.is_tombstone:
            return None
        feed = self.feed_file.current()
        result = self._where_it_points(link, assess(link.long_url, self.blocklist, feed), {})
        self._act(link, result)
        return result

    def _where_it_points(
        self, link: Link, result: Assessment, answers: dict[str, list[str]]
    ) -> Assessment:
        """``result``, or MALICIOUS when the host is (or now resolves to) no public address.

        ``answers`` caches resolutions within one round (many links share a host)."""
        if result.verdict == "MALICIOUS":
            return result
        host = urlsplit(link.long_url).hostname or ""
        why = self.addresses.refusal_of_host(host)
        if why is not None:
            return Assessment("MALICIOUS", MALICIOUS_SCORE, (f"{host} is {why}",))
        try:
            ipaddress.ip_address(host)
            return result  # a public literal: nothing to resolve
        except ValueError:
            pass
        if host not in answers:
            answers[host] = self.resolve(host)
        why = self.addresses.refusal_of_answers(host, answers[host])
        if why is not None:
            self.private_answers += 1
            return Assessment("MALICIOUS", MALICIOUS_SCORE, (why,))
        return result

    def _act(self, link: Link, result: Assessment) -> None:
        svc = self.actions
        self.scanned += 1
        self.verdicts[result.verdict] += 1
        self.last_assessment[link.key] = result
        if len(self.last_assessment) > 10_000:
            self.last_assessment.pop(next(iter(self.last_assessment)))
        news = link.scan_verdict != result.verdict or link.scan_reasons != result.reasons
        if result.verdict == "MALICIOUS":
            if link.status is not Status.DISABLED or news:
                svc.set_scan_verdict(
                    link.key, "MALICIOUS", reasons=result.reasons, actor=SCANNER_ACTOR
                )
                self.disabled += link.status is not Status.DISABLED
                log.warning("disabled %s: %s", link.key, "; ".join(result.reasons))
            return
        if news:
            svc.set_scan_verdict(
                link.key, result.verdict, reasons=result.reasons, actor=SCANNER_ACTOR
            )
        reason = link.status_reason or ""
        if link.status is Status.DISABLED and reason.startswith(f"{SCANNER_ACTOR}:"):
            svc.enable(link.key, actor=SCANNER_ACTOR)
            self.reenabled += 1
            log.info("re-enabled %s: its destination scans %s now", link.key, result.verdict)

    # -- the schedule ------------------------------------------------------------------

    def tick(self) -> int:
        """One round of scheduled work: rule changes, the sweep, hot keys, due scans.

        The fleet-wide work — following rule changes, the sweep, the hot keys — is done
        by the leader only (:class:`~lookup.kit.leadership.Leadership`), so a fleet of N
        processes sweeps each link once, not N times; the keys this process queued
        itself (the links it created or retargeted) it scans in any case.
        Returns how many links were scanned.
        """
        with self._lock:
            now = self.clock()
            self.leading = self.leadership.hold()
            scanned = 0
            for key, _reason in self.queue.pop_due(now, limit=self.sweep_page):
                scanned += self._safe_scan(key)
            if not self.leading:
                return scanned
            rules = self._rules_version()
            if rules != self._rules:
                self._rules = rules
                self.rules_changed()
            if self._sweep_fast or now >= self._next_sweep:
                scanned += self._sweep_page()
                self._next_sweep = now + self.sweep_interval_s
            if self.hot_keys is not None and now >= self._next_hot:
                self._next_hot = now + self.hot_interval_s
                top = self.hot_keys(now - 86_400, self.hot_top)
                for key, _clicks in top:
                    self.queue.put(key, now, "popular")
                for key, _reason in self.queue.pop_due(now, limit=self.sweep_page):
                    scanned += self._safe_scan(key)
            return scanned

    def _sweep_page(self) -> int:
        cursor = self._sweep_cursor or ""
        links = self.store.iter_links(
            after=cursor, limit=self.sweep_page, statuses=(Status.ACTIVE, Status.DISABLED)
        )
        scanned = 0
        feed = self.feed_file.current()
        answers: dict[str, list[str]] = {}
        for link in links:
            try:
                result = assess(link.long_url, self.blocklist, feed)
                self._act(link, self._where_it_points(link, result, answers))
                scanned += 1
            except Exception:
                self.errors += 1
                log.exception("scanning %s failed", link.key)
        if len(links) < self.sweep_page:
            self._sweep_cursor = ""
            if self._sweep_fast:
                self.full_sweeps += 1
                self._save_state()
            self._sweep_fast = False
        else:
            self._sweep_cursor = links[-1].key
        return scanned

    def _safe_scan(self, key: str) -> int:
        try:
            return 1 if self.scan(key) is not None else 0
        except Exception:
            self.errors += 1
            log.exception("scanning %s failed", key)
            return 0

    def drain(self, max_rounds: int = 10_000) -> int:
        """Run ticks until nothing is due and no fast sweep is running; returns links scanned."""
        total = 0
        for _ in range(max_rounds):
            total += self.tick()
            due = self.queue.next_due()
            sweeping = self._sweep_fast and self.leading
            if not sweeping and (due is None or due > self.clock()):
                break
        return total

    # -- background --------------------------------------------------------------------

    def start(self) -> None:
        """Run :meth:`tick` in a background task until :meth:`stop` (idempotent)."""
        self._stopping.clear()
        self._task.start()

    def _round(self) -> int:
        """One round of the background task: a tick, then a nap on the queue.

        A fast sweep goes on at once; otherwise it sleeps until the next key is due (at
        most ``tick_s``), woken early by a newly queued key. Returns 1 so the task itself
        never adds a wait; a failing tick is logged and counted by the task, which then
        waits ``tick_s``."""
        self.tick()
        if (self._sweep_fast and self.leading) or self._stopping.is_set():
            return 1
        due = self.queue.next_due()
        wait = self.tick_s if due is None else max(0.0, min(self.tick_s, due - self.clock()))
        if wait > 0:
            self.queue.wait(wait)
        return 1

    def stop(self) -> None:
        """Stop the background task (wakes it if it is waiting for work)."""
        self._stopping.set()
        self.queue.wake()
        self._task.stop(timeout=10)
        self.leadership.release()

    def stats(self) -> dict[str, Any]:
        """Scans, verdicts, disables, sweeps and the queue, for the metrics endpoint."""
        return {
            "scanned": self.scanned,
            "verdicts": dict(self.verdicts),
            "disabled": self.disabled,
            "reenabled": self.reenabled,
            "queued": len(self.queue),
            "fullSweeps": self.full_sweeps,
            "ruleChanges": self.rule_changes,
            "errors": self.errors + self._task.failures,
            "privateAnswers": self.private_answers,
            "blocklistVersion": self.blocklist.version,
            "feedVersion": self.feed_file.current().version,
            "leader": self.leading,
            "leadership": self.leadership.describe(),
        }


__all__ = [
    "ADMIN_TOKEN_ENV",
    "DEFAULT_FEED",
    "Assessment",
    "FeedFile",
    "HotKeys",
    "LinkActions",
    "ScanQueue",
    "Scanner",
    "ThreatFeed",
    "assess",
    "is_admin",
]
