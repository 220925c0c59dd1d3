"""Crawler-trap defences: limits that bound any host, and patterns that keep repeating.

No rule recognises every trap, so they are layered (the design text: "budgets beat
detection"):

- per URL: maximum length, maximum path depth, no path segment repeated more than
  a couple of times (``../`` loops), no session-id parameter: a known session name
  (``sid``, ``PHPSESSID``, ``jsessionid``, ...) with a token value, or a token-valued
  parameter of another name once its pattern's pages keep coming back as duplicates
  (an ``?id=<ObjectId>`` or ``?sha=<commit>`` whose pages differ is never cut);
- depth from the seed: links further than ``max_depth`` hops are not followed;
- a page budget per host per crawl cycle, which stops even traps never seen before;
- URL patterns (digits and hex tokens folded) whose pages keep coming back as
  duplicates are first down-ranked, then cut.

Every refusal names the rule that made it.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlsplit

__all__ = [
    "SESSION_PARAMS",
    "PatternStats",
    "TrapGuard",
    "TrapPolicy",
    "is_session_param",
    "url_pattern",
]

#: Session-id parameters (Heritrix's StripSessionIDs and StripSessionCFIDs rules, Nutch's
#: regex-normalize): only these are cut on sight. An id or a hash under any other name
#: (``?id=<ObjectId>``, ``?sha=<commit>``) is data; if its pages keep coming back as
#: duplicates, the duplicate-pattern rule cuts it.
SESSION_PARAMS = frozenset(
    {"sid", "sessionid", "session_id", "phpsessid", "jsessionid", "cfid", "cftoken"}
)
_ASP_SESSION = re.compile(r"^aspsessionid[a-z]{8}$")
_SESSION_VALUE = re.compile(r"^[A-Za-z0-9_\-.]{8,}$")
#: A value that looks like a random token (an id, a hash, or a session under a new name).
_TOKEN = re.compile(r"^(?=.*\d)(?=.*[a-zA-Z])[A-Za-z0-9_\-]{16,}$|^[0-9a-fA-F]{16,}$")
_DIGITS = re.compile(r"\d+")
_HEXSEG = re.compile(r"(?<=/)[0-9a-f]{8,}(?=/|$)")
_RUNS = re.compile(r"N(?:[-_.,]N)+")


@dataclass
class TrapPolicy:
    """Limits; the defaults are the design text's, sized for the open web."""

    max_url_length: int = 2000
    max_path_depth: int = 12
    max_segment_repeats: int = 2
    max_depth: int = 20
    host_budget: int = 5000
    pattern_min_samples: int = 4
    pattern_downrank_ratio: float = 0.5
    pattern_cut_samples: int = 6
    pattern_cut_ratio: float = 0.8


def is_session_param(key: str, value: str) -> bool:
    """A known session-id parameter carrying a token-like value."""
    name = key.lower()
    known = name in SESSION_PARAMS or bool(_ASP_SESSION.match(name))
    return known and bool(_SESSION_VALUE.match(value))


def url_pattern(url: str) -> str:
    """A URL's shape: host, path with numbers and hex tokens folded, sorted query keys.

    ``/cal/2031/07.html`` → ``/cal/N/N.html``; ``/events/2026-11-meetup-1-2`` →
    ``/events/N+-meetup-N+``; ``?size=m&colour=red`` → ``?colour&size``.
    """
    parts = urlsplit(url)
    path = _HEXSEG.sub("H", parts.path.lower())
    path = _RUNS.sub("N+", _DIGITS.sub("N", path))
    keys = sorted({k for k, _ in parse_qsl(parts.query, keep_blank_values=True)})
    return f"{parts.netloc}{path}" + ("?" + "&".join(keys) if keys else "")


@dataclass
class PatternStats:
    fetched: int = 0
    duplicates: int = 0

    @property
    def dup_ratio(self) -> float:
        return self.duplicates / self.fetched if self.fetched else 0.0


class TrapGuard:
    """Applies a :class:`TrapPolicy` to URLs and learns duplicate-heavy patterns."""

    def __init__(self, policy: TrapPolicy | None = None) -> None:
        self.policy = policy or TrapPolicy()
        self.patterns: dict[str, PatternStats] = defaultdict(PatternStats)

    def check_url(self, url: str, depth: int) -> tuple[str, str] | None:
        """``(rule, detail)`` if a per-URL rule refuses ``url`` found ``depth`` hops out."""
        p = self.policy
        if len(url) > p.max_url_length:
            return "url-length", f"{len(url)} > {p.max_url_length} characters"
        if depth > p.max_depth:
            return "depth-limit", f"{depth} > {p.max_depth} links from a seed"
        parts = urlsplit(url)
        segments = [s for s in parts.path.split("/") if s]
        if len(segments) > p.max_path_depth:
            return "path-depth", f"{len(segments)} > {p.max_path_depth} path segments"
        counts: dict[str, int] = defaultdict(int)
        for s in segments:
            counts[s] += 1
            if counts[s] > p.max_segment_repeats:
                return "repeated-segments", f"{s!r} appears {counts[s]} times"
        for key, value in parse_qsl(parts.query, keep_blank_values=True):
            if is_session_param(key, value):
                return "session-param", f"{key}={value[:12]}… is a session id"
            if _TOKEN.match(value) and self._duplicate_heavy(url):
                return "session-param", (
                    f"{key}={value[:12]}… changes from link to link but its pages keep "
                    "coming back as duplicates"
                )
        return None

    def _duplicate_heavy(self, url: str) -> bool:
        """Have pages of ``url``'s pattern come back as duplicates (twice, most of them)?

        Two are enough for a token-valued parameter: an id or a hash names a different
        page each time; a token whose pages repeat is a session.
        """
        st = self.patterns.get(url_pattern(url))
        return st is not None and st.duplicates >= 2 and st.dup_ratio >= 0.5

    def pattern_verdict(self, url: str) -> str:
        """``"ok"``, ``"downrank"`` or ``"cut"`` for URLs of ``url``'s pattern."""
        st = self.patterns.get(url_pattern(url))
        p = self.policy
        if st is None or st.fetched < p.pattern_min_samples:
            return "ok"
        if st.fetched >= p.pattern_cut_samples and st.dup_ratio >= p.pattern_cut_ratio:
            return "cut"
        if st.dup_ratio >= p.pattern_downrank_ratio:
            return "downrank"
        return "ok"

    def record(self, url: str, *, duplicate: bool) -> None:
        """Learn from one fetched page of ``url``'s pattern."""
        st = self.patterns[url_pattern(url)]
        st.fetched += 1
        st.duplicates += int(duplicate)

    def over_budget(self, admitted: int) -> bool:
        """Has a host with ``admitted`` URLs this cycle spent its budget?"""
        return admitted >= self.policy.host_budget
