"""The typeahead client of the seed's design: debounce, a local prefix cache, ``complete`` reuse.

Most keystrokes should never reach the server. A client gets there in four steps:

* **debounce** (:class:`Debouncer`): hold the text until typing pauses, so a burst of
  keystrokes becomes one report (the dashboard's box does this in the browser);
* **the local prefix cache**: an unexpired answer for this exact prefix, honouring the
  answer's ``Cache-Control: max-age``;
* **reuse of ``complete`` answers**: an answer marked ``complete`` lists every
  completion of its prefix, so a longer prefix is answered by filtering it locally;
* otherwise **one request**, numbered: answers may arrive out of order, and a late answer
  to an old keystroke never replaces what a newer one put on screen. An answer from a
  newer snapshot version evicts the cached answers of older ones.

:class:`SuggestClient` does the last three, synchronously with :meth:`SuggestClient.resolve`
or in two halves (:meth:`SuggestClient.begin`, :meth:`SuggestClient.finish`) for a client
with requests in flight. Time comes from an injected clock, so all of it is testable
without sleeping. The module knows nothing of HTTP libraries or of Streamlit: the caller
passes ``fetch(raw, market)`` returning anything shaped like :class:`SuggestReply`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from lookup.typeahead.normalize import normalize_prefix

#: Seconds an answer is reused when it carries no ``max-age`` (the server sends 300).
DEFAULT_MAX_AGE = 300.0
#: Lines kept in :attr:`SuggestClient.history`.
HISTORY = 12

Clock = Callable[[], float]


class SuggestReply(Protocol):
    """What the client reads of one ``GET /v1/suggest`` response (or of its failure)."""

    @property
    def ok(self) -> bool: ...
    @property
    def status(self) -> int: ...
    @property
    def body(self) -> Any: ...
    @property
    def headers(self) -> Mapping[str, str]: ...
    @property
    def ms(self) -> float: ...
    @property
    def error(self) -> str | None: ...
    def message(self) -> str: ...


Fetch = Callable[[str, str], SuggestReply]


def max_age(headers: Mapping[str, str]) -> float:
    """Seconds an answer may be reused, from its ``Cache-Control`` header."""
    m = re.search(r"max-age=(\d+)", headers.get("cache-control", ""))
    return float(m.group(1)) if m else DEFAULT_MAX_AGE


def edits(before: str, after: str) -> int:
    """Keystrokes that turn ``before`` into ``after``: delete back to the common prefix,
    then type the rest."""
    n = 0
    for a, b in zip(before, after, strict=False):
        if a != b:
            break
        n += 1
    return (len(before) - n) + (len(after) - n)


class Debouncer:
    """Holds the newest text until typing pauses for ``wait_s`` (trailing edge).

    :meth:`push` is one keystroke (the text after it); :meth:`ready` returns the text
    once no keystroke came for ``wait_s``, once per pause. ``wait_s=0`` reports every
    keystroke at once.
    """

    def __init__(self, wait_s: float, clock: Clock = time.monotonic) -> None:
        if wait_s < 0:
            raise ValueError("wait_s must be >= 0")
        self.wait_s = wait_s
        self.clock = clock
        self._value: str | None = None
        self._last = 0.0

    def push(self, value: str) -> None:
        """A keystroke: remember the text and restart the wait."""
        self._value = value
        self._last = self.clock()

    @property
    def pending(self) -> bool:
        """True while a text waits for the pause."""
        return self._value is not None

    def ready(self) -> str | None:
        """The text to report now that typing paused, else None."""
        if self._value is None or self.clock() - self._last < self.wait_s:
            return None
        value, self._value = self._value, None
        return value


@dataclass
class Cached:
    """One answer kept by the client."""

    suggestions: list[str]
    complete: bool
    version: str
    expires: float  # a deadline on the client's clock
    match: list[str] = field(default_factory=list)  # the answer's marks (infix), if any


@dataclass
class Shown:
    """What the dropdown shows for the current text, and where it came from."""

    raw: str
    prefix: str
    market: str
    suggestions: list[str] = field(default_factory=list)
    complete: bool = False
    version: str | None = None
    source: str = "empty"  # empty | server | cache | complete | error
    via: str | None = None  # the prefix whose complete answer was filtered
    ms: float | None = None
    problem: str | None = None
    code: str | None = None
    #: How each suggestion matched (``prefix``/``infix``/…), when the answer said so.
    match: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Ticket:
    """A request the client decided to send; :meth:`SuggestClient.finish` takes its answer."""

    seq: int  # the order the requests were decided in
    raw: str
    prefix: str
    market: str
    sent_at: float  # on the client's clock


@dataclass
class SuggestClient:
    """The design's typeahead client: local prefix cache and reuse of ``complete`` answers.

    What arrives here is the text once debounced; it is answered in this order: nothing
    to ask for an empty box; an unexpired answer for this exact prefix; an unexpired
    ``complete`` answer for a shorter prefix, filtered locally; otherwise one request.
    An answer from a newer snapshot version evicts the answers of older ones. Every
    decision is numbered, and an answer is shown only if nothing decided after its
    request is on screen yet.
    """

    cache: dict[tuple[str, str], Cached] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    last_value: str = ""
    keystrokes: int = 0
    reports: int = 0
    requests: int = 0
    refreshes: int = 0  # requests made with no keystroke (market switch, swap, block)
    from_cache: int = 0
    from_complete: int = 0
    late: int = 0  # answers that came after a newer one was shown (cached, not shown)
    shown: Shown | None = None
    history: list[dict[str, str]] = field(default_factory=list)
    clock: Clock = time.monotonic
    seq: int = 0  # the last decision's number
    shown_seq: int = 0  # the number of the decision on screen
    # per market: the number of the decision whose answer set ``versions[market]``
    _version_seq: dict[str, int] = field(default_factory=dict, init=False, repr=False)

    @property
    def answered_locally(self) -> int:
        """Answers that needed no request."""
        return self.from_cache + self.from_complete

    def typed(self, value: str) -> bool:
        """Take the text the box reported; True if it changed.

        The keystrokes are the edits from the last reported text (delete back to the
        common prefix, type the rest): what a person typed, however many of those
        keystrokes the debounce merged into this one report.
        """
        n = edits(self.last_value, value)
        self.keystrokes += n
        if n:
            self.reports += 1
        self.last_value = value
        return n > 0

    def forget(self, market: str | None = None) -> None:
        """Drop cached answers (all, or one market's) and re-resolve the text on screen."""
        for key in [k for k in self.cache if market is None or k[0] == market]:
            del self.cache[key]
        self.shown = None

    def local(self, prefix: str, market: str, now: float) -> Shown | None:
        """An answer without a request, if the cache has one."""
        hit = self.cache.get((market, prefix))
        if hit is not None and hit.expires > now:
            self.from_cache += 1
            return Shown(
                "", prefix, market, list(hit.suggestions), hit.complete, hit.version, "cache",
                match=list(hit.match),
            )  # fmt: skip
        for n in range(len(prefix) - 1, 0, -1):
            shorter = self.cache.get((market, prefix[:n]))
            if shorter is not None and shorter.complete and shorter.expires > now:
                self.from_complete += 1
                kept = [s for s in shorter.suggestions if s.startswith(prefix)]
                return Shown(
                    "", prefix, market, kept, True, shorter.version, "complete", via=prefix[:n]
                )
        return None

    def resolve(self, raw: str, market: str, fetch: Fetch, *, typed: bool = True) -> Shown:
        """The answer for what the box holds now, asking ``fetch`` if it must.

        ``typed=False`` marks a refresh that no keystroke caused (the market changed, or
        the page dropped the cache after a swap or a block).
        """
        decided = self.begin(raw, market, typed=typed)
        if isinstance(decided, Shown):
            return decided
        shown = self.finish(decided, fetch(raw, market))
        assert shown is not None  # the newest decision is always shown
        return shown

    def begin(self, raw: str, market: str, *, typed: bool = True) -> Shown | Ticket:
        """Decide what the box's text needs: a local answer (shown at once) or a request.

        A :class:`Ticket` means: send ``GET /v1/suggest`` for ``ticket.raw`` and hand its
        answer to :meth:`finish`, whenever it arrives.
        """
        self.seq += 1
        prefix = normalize_prefix(raw)
        if not prefix.strip():
            self._note(raw, "empty box: nothing to ask")
            return self._show(Shown(raw, prefix, market), self.seq)
        now = self.clock()
        shown = self.local(prefix, market, now)
        if shown is not None:
            shown.raw = raw
            return self._show(shown, self.seq)
        self.requests += 1
        if not typed:
            self.refreshes += 1
        return Ticket(self.seq, raw, prefix, market, now)

    def finish(self, ticket: Ticket, answer: SuggestReply) -> Shown | None:
        """Take the answer to a request; the :class:`Shown` if it goes on screen, None if a
        newer decision is already there (the answer is still cached when it is current)."""
        raw, prefix, market = ticket.raw, ticket.prefix, ticket.market
        body = answer.body if isinstance(answer.body, dict) else {}
        late = ticket.seq < self.shown_seq
        if not answer.ok or "suggestions" not in body:
            if late:
                self.late += 1
                self._note(raw, "a late failure, ignored: a newer answer is on screen")
                return None
            self._note(raw, f"request failed: {answer.error or answer.status or 'no answer'}")
            shown = Shown(
                raw, prefix, market, source="error", problem=answer.message(), code=answer.error
            )
            return self._show(shown, ticket.seq)
        version = str(body.get("version"))
        served = str(body.get("q", prefix))
        if ticket.seq >= self._version_seq.get(market, 0):
            if self.versions.get(market) not in (None, version):
                stale = [
                    k for k, v in self.cache.items() if k[0] == market and v.version != version
                ]
                for key in stale:
                    del self.cache[key]
            self.versions[market] = version
            self._version_seq[market] = ticket.seq
        entry = Cached(
            list(body["suggestions"]),
            bool(body.get("complete")),
            version,
            ticket.sent_at + max_age(answer.headers),
            [str(m) for m in body.get("match") or []],
        )
        if version == self.versions.get(market):  # an older cut's late answer is not kept
            self.cache[(market, served)] = entry
        if late:
            self.late += 1
            self._note(raw, f"a late answer ({answer.ms:.1f} ms), cached, not shown")
            return None
        self._note(raw, f"request sent ({answer.ms:.1f} ms)")
        shown = Shown(
            raw, served, market, entry.suggestions, entry.complete, version, "server",
            ms=answer.ms, match=list(entry.match),
        )  # fmt: skip
        return self._show(shown, ticket.seq)

    def _show(self, shown: Shown, seq: int) -> Shown:
        self.shown, self.shown_seq = shown, seq
        return shown

    def _note(self, raw: str, what: str) -> None:
        self.history.append({"typed": raw, "client did": what})
        del self.history[:-HISTORY]

    def note_local(self, shown: Shown) -> None:
        """Record in the history what a local answer was."""
        if shown.source == "cache":
            self._note(shown.raw, "answered from the local cache")
        elif shown.source == "complete":
            self._note(shown.raw, f"filtered the complete answer for {shown.via!r}")


__all__ = [
    "DEFAULT_MAX_AGE",
    "Cached",
    "Debouncer",
    "Shown",
    "SuggestClient",
    "SuggestReply",
    "Ticket",
    "edits",
    "max_age",
]
