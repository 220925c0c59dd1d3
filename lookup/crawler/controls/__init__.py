"""Operator controls of a running crawl: block, slow down, pause, recrawl — as versioned rows.

Seed 003: when a site asks us to stop, we stop "immediately and permanently". A control
is one **command** appended to a log with a version that only grows (``block-host``,
``block-pattern``, ``set-delay``, ``pause-host``, ``pause-crawl``, ``recrawl``, and the
inverses). The API process appends; every crawler process polls ``since(version)`` at
least once a second (:mod:`lookup.crawler.steering`) and folds the new rows into a
:class:`ControlState`, then writes an acknowledgement (worker, version, time), so the
page shows which version each worker has applied.

This package is the seam. Its ``__init__`` is the port and imports no backend: the
commands (:class:`ControlCommand`, :func:`validate`), the log's records
(:class:`ControlRecord`, :class:`Ack`), their fold (:class:`ControlState`), the
protocol :class:`CrawlControls`, :data:`BACKENDS` (the registry ``scheme →
"module:Class"``) and :func:`open_crawl_controls`, which imports the backend a URL names
when it is called; :func:`controls_url` names a crawl's controls from its store's URL.
The backends:

* :mod:`.sqlite` — ``DIR/controls.sqlite`` next to the crawl's own state (a separate
  file, so the API never takes the crawl writer's lock);
* :mod:`.postgres` — tables in the fleet's PostgreSQL database, next to its crawl state.

Adding a backend is one file with a class that has ``from_url`` plus one line in
:data:`BACKENDS`; ``tests/crawler/test_controls.py`` then runs the log's contract
against it. This package was the module ``lookup/crawler/controls.py``: every name it
had is still here, :class:`~.sqlite.SqliteCrawlControls` (now in :mod:`.sqlite`)
imported on first use, for one release.

A host target matches the crawl's ``host[:port]`` exactly, or every port when given
without one; a pattern is a shell glob over the whole normalised URL
(``http://a.sandbox.test*/private/*``).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, cast, runtime_checkable

from lookup.kit.engines.storeurl import StoreUrl, parse_store_url, sqlite_url
from lookup.kit.lazy import lazy_exports
from lookup.kit.registry import load_backend, open_backend
from lookup.kit.urlnorm import normalize_url

__all__ = [
    "BACKENDS",
    "COMMANDS",
    "CONTROLS_FILE",
    "EVERY_HOST",
    "MAX_DELAY_S",
    "Ack",
    "Backend",
    "ControlCommand",
    "ControlError",
    "ControlRecord",
    "ControlState",
    "CrawlControls",
    "backend",
    "controls_url",
    "host_matches",
    "open_crawl_controls",
    "validate",
]

#: Each URL scheme and the class that serves it, imported when a URL names the scheme.
BACKENDS: dict[str, str] = {
    "sqlite": "lookup.crawler.controls.sqlite:SqliteCrawlControls",
    "postgresql": "lookup.crawler.controls.postgres:PostgresCrawlControls",
}

#: Names this module had before it was a package, now in a backend's module: imported
#: the first time they are used (kept for one release).
_MOVED = {"SqliteCrawlControls": "lookup.crawler.controls.sqlite"}
__getattr__, __dir__ = lazy_exports(__name__, _MOVED)

#: The controls' file inside a crawl directory.
CONTROLS_FILE = "controls.sqlite"
#: Every command, and what its target is.
COMMANDS: dict[str, str] = {
    "block-host": "host",
    "unblock-host": "host",
    "block-pattern": "pattern",
    "unblock-pattern": "pattern",
    "set-delay": "host",  # value: seconds between requests; None: the crawl's own; "*": all
    "pause-host": "host",
    "resume-host": "host",
    "pause-crawl": "",
    "resume-crawl": "",
    "recrawl": "url",
}
MAX_DELAY_S = 3600.0
#: ``set-delay``'s target for every host: the crawl's global per-host rate ceiling.
EVERY_HOST = "*"
_HOST = re.compile(r"^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?(:[0-9]{1,5})?$")


class ControlError(ValueError):
    """A command that cannot be applied: ``code`` is the API's error code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class ControlCommand:
    """What an operator asks: a command, its target and (``set-delay``) a value."""

    command: str
    target: str = ""
    value: float | None = None
    note: str = ""


@dataclass(frozen=True)
class ControlRecord:
    """A command as stored: with its version (order of issue) and when it was issued."""

    version: int
    at: float
    command: str
    target: str
    value: float | None
    note: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Ack:
    """The version a worker has applied, and when it applied it."""

    worker: str
    version: int
    at: float


def validate(cmd: ControlCommand) -> ControlCommand:
    """The command with its target normalised, or :class:`ControlError` saying what is wrong."""
    kind = COMMANDS.get(cmd.command)
    if kind is None:
        raise ControlError("UNKNOWN_COMMAND", f"commands are: {', '.join(COMMANDS)}")
    target = (cmd.target or "").strip()
    note = (cmd.note or "")[:500]
    if cmd.command == "set-delay" and target == EVERY_HOST:
        pass  # the global ceiling: no host's delay goes below it
    elif kind == "host":
        target = target.lower().rstrip(".")
        if not _HOST.match(target) or ".." in target:
            raise ControlError("BAD_HOST", f"not a host name (host or host:port): {cmd.target!r}")
    elif kind == "pattern":
        if not target or len(target) > 2048 or any(c.isspace() for c in target):
            raise ControlError("BAD_PATTERN", "a pattern is a URL glob: 1-2048 chars, no spaces")
    elif kind == "url":
        url = normalize_url(target) if len(target) <= 4096 else None
        if url is None:
            raise ControlError("BAD_URL", f"not a crawlable http(s) URL: {cmd.target[:200]!r}")
        target = url
    else:
        target = ""
    value = cmd.value
    if cmd.command == "set-delay":
        if value is not None and not (0.0 <= float(value) <= MAX_DELAY_S):
            raise ControlError("BAD_DELAY", f"a delay is 0..{MAX_DELAY_S:g} seconds (or null)")
        value = None if value is None else float(value)
    else:
        value = None
    return ControlCommand(cmd.command, target, value, note)


def host_matches(target: str, host: str) -> bool:
    """Does a host target (``name`` or ``name:port``) name the crawl host ``host[:port]``?"""
    host = host.lower()
    return host == target or (":" not in target and host.split(":", 1)[0] == target)


@dataclass
class ControlState:
    """What the commands up to :attr:`version` add up to (folded in version order)."""

    version: int = 0
    blocked_hosts: set[str] = field(default_factory=set)
    blocked_patterns: set[str] = field(default_factory=set)
    paused_hosts: set[str] = field(default_factory=set)
    delays: dict[str, float] = field(default_factory=dict)
    crawl_paused: bool = False
    _index: _Index | None = field(default=None, repr=False, compare=False)

    def apply(self, rec: ControlRecord) -> None:
        """Fold one command in (records must come in version order)."""
        self._index = None
        c, t = rec.command, rec.target
        if c == "block-host":
            self.blocked_hosts.add(t)
        elif c == "unblock-host":
            self.blocked_hosts.discard(t)
        elif c == "block-pattern":
            self.blocked_patterns.add(t)
        elif c == "unblock-pattern":
            self.blocked_patterns.discard(t)
        elif c == "pause-host":
            self.paused_hosts.add(t)
        elif c == "resume-host":
            self.paused_hosts.discard(t)
        elif c == "pause-crawl":
            self.crawl_paused = True
        elif c == "resume-crawl":
            self.crawl_paused = False
        elif c == "set-delay":
            if rec.value is None:
                self.delays.pop(t, None)
            else:
                self.delays[t] = rec.value
        self.version = max(self.version, rec.version)

    @classmethod
    def of(cls, records: Iterable[ControlRecord]) -> ControlState:
        state = cls()
        for rec in sorted(records, key=lambda r: r.version):
            state.apply(rec)
        return state

    def _built(self) -> _Index:
        if self._index is None:
            self._index = _Index.of(self)
        return self._index

    def host_blocked(self, host: str) -> str | None:
        """The block target that stops ``host``, if one does."""
        if not self.blocked_hosts:
            return None
        return self._built().blocks.get(host.lower())

    def url_blocked(self, url: str) -> str | None:
        """The pattern that stops ``url``, if one does."""
        if not self.blocked_patterns:
            return None
        rx = self._built().patterns
        m = rx.match(url) if rx is not None else None
        return None if m is None else self._built().pattern_of[m.lastgroup or ""]

    def holds(self, host: str) -> bool:
        """May ``host`` not be asked anything now (blocked, paused, or the crawl paused)?"""
        if self.crawl_paused:
            return True
        if not self.blocked_hosts and not self.paused_hosts:
            return False
        return self._built().holds.get(host.lower()) is not None

    @property
    def ceiling(self) -> float | None:
        """The global per-host delay (``set-delay *``): no host is asked more often."""
        return self.delays.get(EVERY_HOST)

    def floor_for(self, host: str, default: float) -> float | None:
        """The least pause between two requests to ``host`` the controls allow (None: no
        control speaks for it): the host's own delay, or ``default`` (the crawl's own
        ``min_delay``) when it has none, raised to the global ceiling."""
        own, ceiling = self.delay_for(host), self.ceiling
        if ceiling is None:
            return own
        return max(default if own is None else own, ceiling)

    def delay_for(self, host: str) -> float | None:
        """The operator's delay for ``host`` (an exact ``host:port`` target wins)."""
        if host.lower() in self.delays:
            return self.delays[host.lower()]
        return self.delays.get(host.lower().split(":", 1)[0])

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "blockedHosts": sorted(self.blocked_hosts),
            "blockedPatterns": sorted(self.blocked_patterns),
            "pausedHosts": sorted(self.paused_hosts),
            "delays": dict(sorted(self.delays.items())),
            "globalDelay": self.ceiling,
            "crawlPaused": self.crawl_paused,
        }


class _HostIndex(dict[str, str]):
    """Host targets by ``name`` and ``name:port``: ``get(host)`` finds the one covering it."""

    def __init__(self, targets: Iterable[str]) -> None:
        super().__init__()
        for t in sorted(targets, reverse=True):  # the smallest target wins a tie
            self[t] = t

    def get(self, host: str, default: str | None = None) -> str | None:  # type: ignore[override]
        found = super().get(host)
        return found if found is not None else super().get(host.split(":", 1)[0], default)


@dataclass(frozen=True)
class _Index:
    """What a :class:`ControlState` looks up per request, built once per change."""

    blocks: _HostIndex
    holds: _HostIndex
    patterns: re.Pattern[str] | None
    pattern_of: dict[str, str]

    @classmethod
    def of(cls, state: ControlState) -> _Index:
        ordered = sorted(state.blocked_patterns)
        names = {f"p{i}": p for i, p in enumerate(ordered)}
        rx = (
            re.compile("|".join(f"(?P<{n}>{fnmatch.translate(p)})" for n, p in names.items()))
            if names
            else None
        )
        exact = {t for t in state.blocked_hosts | state.paused_hosts}
        return cls(_HostIndex(state.blocked_hosts), _HostIndex(exact), rx, names)


@runtime_checkable
class CrawlControls(Protocol):
    """The controls log of one crawl: append commands, read them back, record who applied."""

    def issue(self, cmd: ControlCommand) -> ControlRecord:
        """Validate and append ``cmd`` with the next version."""
        ...

    def since(self, version: int) -> list[ControlRecord]:
        """Every command with a version above ``version``, in version order."""
        ...

    def acknowledge(self, worker: str, version: int) -> None:
        """``worker`` has applied every command up to ``version``."""
        ...

    def acks(self) -> list[Ack]: ...
    def close(self) -> None: ...


class Backend(Protocol):
    """What :data:`BACKENDS` names: a class that opens its controls from a parsed URL."""

    def from_url(self, url: StoreUrl) -> CrawlControls:
        """The controls ``url`` names."""
        ...


def backend(scheme: str) -> Backend:
    """The class registered for ``scheme`` in :data:`BACKENDS`, imported now (ValueError
    naming the registered schemes for another)."""
    return cast(Backend, load_backend(BACKENDS, scheme))


def controls_url(store_url: str) -> str:
    """The controls of the crawl whose state is at ``store_url``.

    ``sqlite:///DIR/crawl.sqlite`` → ``sqlite:///DIR/controls.sqlite``; a PostgreSQL
    crawl store keeps its controls in the same database.
    """
    parsed = parse_store_url(store_url, ("sqlite", "postgresql"))
    if parsed.scheme == "sqlite":
        assert parsed.path is not None
        return sqlite_url(parsed.path.parent / CONTROLS_FILE)
    return parsed.url


def open_crawl_controls(url: str) -> CrawlControls:
    """The controls named by ``url`` (``sqlite:///…/controls.sqlite`` or ``postgresql://…``).

    An unknown scheme raises ValueError naming the registered ones.
    """
    return cast(CrawlControls, open_backend(BACKENDS, url))
