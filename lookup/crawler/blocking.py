"""Block detection: a host that starts turning the crawler away is flagged and slowed.

A site that has had enough of a crawler seldom says so in robots.txt. It answers
``403``, ``429``, or a page that asks the visitor to prove it is human (a CAPTCHA or a
browser check, often with ``200``). One such answer means little; a rising *share* of
them among a host's latest answers means we are being blocked, and the polite reaction
is to slow down at once and let a person look (seed 003: reduce the rate first, then
diagnose).

:class:`BlockWindow` keeps, per host, the last ``window`` answers to page and sitemap
requests as refused or not. A host is **flagged** once at least ``min_answers`` are in
its window and the refused share reaches ``share``; it is cleared when the share falls
below half of that (hysteresis: one good page does not unflag a host that refuses most
requests). While flagged, the host's least pause is multiplied by ``slowdown``
(:mod:`lookup.crawler.steering` applies it in the frontier). The crawler feeds its
window as answers arrive; the health view (:mod:`lookup.crawler.health`) replays the
same rule over the crawl's fetch log, so both agree on which hosts are flagged.

:func:`looks_like_challenge` recognises a short page as a challenge by its title, its wording
or the markers of the common CAPTCHA and bot-check widgets in its HTML; the
outcome rule :func:`lookup.crawler.outcomes.challenge` keeps such a page out of the index.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field

from lookup import settings

__all__ = [
    "CHALLENGE_OUTCOMES",
    "REFUSING_STATUSES",
    "BlockPolicy",
    "BlockWindow",
    "HostFlag",
    "looks_like_challenge",
    "refused",
]

#: Statuses that turn a crawler away (a 503 is an overloaded server, not a refusal).
REFUSING_STATUSES = (403, 429)
#: Outcome names of a challenge page (retried, then given up).
CHALLENGE_OUTCOMES = ("challenge", "retry:challenge")
#: Request kinds whose answers count (robots.txt's and the soft-404 probe's do not: a
#: 403 robots.txt is an ordinary answer, and the probe asks for a page that is not there).
COUNTED_KINDS = ("page", "sitemap")

_TITLE = re.compile(
    r"captcha|are you (a )?(robot|human)|verify (that )?you are (a )?human|"
    r"human verification|bot (check|detection|verification)|attention required|"
    r"just a moment|access denied|request blocked|unusual traffic|security check|"
    r"robot check|pardon our interruption",
    re.IGNORECASE,
)
_WORDING = re.compile(
    r"captcha|are you a robot|not a robot|verify (that )?you are (a )?human|"
    r"unusual traffic from your (computer|network)|checking your browser|"
    r"enable javascript and cookies to continue",
    re.IGNORECASE,
)
#: Markers of the widgets and challenge pages of common CAPTCHA and bot-check services.
_MARKERS = (
    b"g-recaptcha",
    b"h-captcha",
    b"cf-turnstile",
    b"/cdn-cgi/challenge-platform",
    b"captcha-delivery.com",
)
#: A page with more visible text than this is a page, whatever words it contains.
_SHORT_TEXT = 1500


def looks_like_challenge(title: str, text: str, body: bytes = b"") -> bool:
    """Is this answer a CAPTCHA or bot check rather than the page asked for?

    Only a short page can be one: an article about CAPTCHAs, or a blog post with a
    reCAPTCHA on its comment form, has the words or the widget but is a page.
    """
    if len(text) > _SHORT_TEXT:
        return False
    if _TITLE.search(title[:300]) or _WORDING.search(text):
        return True
    head = body[:65536].lower()
    return any(m in head for m in _MARKERS)


def refused(kind: str, status: int | None, outcome: str) -> bool | None:
    """Did this answer turn the crawler away? None: an answer that does not count."""
    if kind not in COUNTED_KINDS:
        return None
    if outcome in CHALLENGE_OUTCOMES or status in REFUSING_STATUSES:
        return True
    if status is None:
        return None  # a network failure says nothing about a block
    return False


@dataclass(frozen=True)
class BlockPolicy:
    """The thresholds (settings ``crawl_block_*``)."""

    window: int = 20
    min_answers: int = 8
    share: float = 0.5
    slowdown: float = 4.0

    @classmethod
    def from_settings(cls) -> BlockPolicy:
        return cls(
            window=int(settings.get("crawl_block_window")),
            min_answers=int(settings.get("crawl_block_min_answers")),
            share=float(settings.get("crawl_block_share")),
            slowdown=float(settings.get("crawl_block_slowdown")),
        )


@dataclass(frozen=True)
class HostFlag:
    """Why a host is flagged: the refused answers in its window, and since when."""

    host: str
    refused: int
    answers: int
    since: float | None  # wall clock of the answer that flagged it (None: unknown)

    @property
    def share(self) -> float:
        return self.refused / self.answers if self.answers else 0.0

    def reason(self) -> str:
        return (
            f"{self.refused} of its last {self.answers} answers were 403/429 or a CAPTCHA/bot check"
        )


@dataclass
class _Host:
    answers: deque[bool]
    flagged_at: float | None = None
    flagged: bool = False


@dataclass
class BlockWindow:
    """Every host's window of latest answers, and which hosts are flagged."""

    policy: BlockPolicy = field(default_factory=BlockPolicy)
    _hosts: dict[str, _Host] = field(default_factory=dict)

    def observe(self, host: str, was_refused: bool, at: float | None = None) -> bool | None:
        """Add one answer; returns True when it flags the host, False when it clears it,
        None when the host's flag did not change."""
        h = self._hosts.get(host)
        if h is None:
            h = self._hosts[host] = _Host(deque(maxlen=self.policy.window))
        h.answers.append(was_refused)
        n = len(h.answers)
        share = sum(h.answers) / n
        if not h.flagged and n >= self.policy.min_answers and share >= self.policy.share:
            h.flagged, h.flagged_at = True, at
            return True
        if h.flagged and share < self.policy.share / 2:
            h.flagged, h.flagged_at = False, None
            return False
        return None

    def flagged(self, host: str) -> bool:
        h = self._hosts.get(host)
        return h is not None and h.flagged

    def share(self, host: str) -> float:
        """The refused share of the host's window (0 for a host not seen)."""
        h = self._hosts.get(host)
        return sum(h.answers) / len(h.answers) if h is not None and h.answers else 0.0

    def flag(self, host: str) -> HostFlag | None:
        """The host's flag, if it is flagged."""
        h = self._hosts.get(host)
        if h is None or not h.flagged:
            return None
        return HostFlag(host, sum(h.answers), len(h.answers), h.flagged_at)

    def flags(self) -> list[HostFlag]:
        """Every flagged host, by name."""
        return [f for host in sorted(self._hosts) if (f := self.flag(host)) is not None]

    def slowed(self, host: str, floor: float) -> float:
        """``floor`` for an unflagged host; ``slowdown`` times it for a flagged one."""
        return floor * self.policy.slowdown if self.flagged(host) else floor
