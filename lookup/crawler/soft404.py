"""Soft 404s: pages that answer ``200 OK`` but mean "not found".

A server that answers every unknown URL with 200 and a friendly page fills an index
with junk and, through the links on those pages, can grow without end. Two signals,
as in Bar-Yossef et al. ("Sic transit gloria telae", WWW 2004):

- **The probe.** Once per host, right after robots.txt, the crawler asks for a URL
  that cannot exist (a random token). A host that answers it ``404``/``410`` says
  "not found" properly. A host that answers ``200`` shows what its "not found"
  looks like — and any page whose main text matches that answer is a soft 404.
  Soft-404 pages often echo the URL they were asked for, so both texts are
  compared with the words of their own URL masked out: identical masked text is an
  exact match; otherwise word 3-shingle Jaccard ≥ 0.7 or a SimHash Hamming
  distance ≤ 3 (for pages long enough for SimHash) is a near match.
- **The wording.** A short page whose title, first heading or opening words say
  "not found", "couldn't find", "does not exist", "404" ... is a soft 404 even on a
  host whose probe got a real 404 (sites often answer 404 for random paths and 200
  for a known-but-gone item, such as a deleted story).

The host's root page is never called a soft 404 by the probe (a host that serves
its home page for every unknown URL would otherwise lose its home page).
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from lookup.crawler.dedup import (
    MIN_SHINGLES_FOR_NEAR,
    SIMHASH_MAX_DISTANCE,
    hamming,
    shingle_hashes,
    simhash_from_hashes,
)
from lookup.crawler.state import HostRecord, ProbeAnswer

__all__ = [
    "NOT_FOUND_WORDING",
    "ProbeSignature",
    "Soft404Verdict",
    "classify",
    "masked_words",
    "probe_path",
]

#: Phrases that mean "this page does not exist" (matched case-insensitively).
NOT_FOUND_WORDING = re.compile(
    r"\b(?:404|not found|page not found|no such page|"
    r"(?:couldn|can|wasn)['’]?t (?:be )?f(?:ind|ound)|"
    r"(?:could|can) ?not (?:be )?f(?:ind|ound)|"
    r"does(?: not|n['’]?t) exist|no longer (?:exists?|available)|"
    r"(?:is|has been) (?:removed|deleted))\b",
    re.IGNORECASE,
)
#: A page longer than this is content, whatever its title says.
MAX_WORDING_WORDS = 150
#: Opening words of the main text in which the wording counts.
OPENING_WORDS = 25
#: Near match with the probe: word 3-shingle Jaccard at least this.
PROBE_JACCARD = 0.7
_WORD = re.compile(r"\w+")


def probe_path() -> str:
    """A path no site has: a random token (a fresh one per host)."""
    return f"/lookupbot-probe-{secrets.token_hex(8)}.html"


def _url_tokens(url: str) -> set[str]:
    parts = urlsplit(url)
    return {w.lower() for w in _WORD.findall(unquote(parts.path + " " + parts.query))}


def masked_words(text: str, url: str) -> list[str]:
    """The words of ``text`` (lowercase) without the words of ``url``'s path and query."""
    drop = _url_tokens(url)
    return [w for w in (m.lower() for m in _WORD.findall(text)) if w not in drop]


def _shingles(words: list[str], width: int = 3) -> list[str]:
    if len(words) < width:
        return [" ".join(words)] if words else []
    return [" ".join(words[i : i + width]) for i in range(len(words) - width + 1)]


@dataclass(frozen=True)
class ProbeSignature:
    """What one host answered for a URL that cannot exist."""

    host: str
    url: str
    status: int | None  # None: no answer (timeout, refused, ...)
    title: str = ""
    text: str = ""  # main text of a 200 answer
    location: str | None = None  # Location of a redirect answer

    @property
    def answer(self) -> ProbeAnswer:
        """The answer as the crawl state keeps it (status 0: no answer)."""
        return ProbeAnswer(self.status or 0, self.title, self.text, self.location)

    @classmethod
    def from_host(cls, h: HostRecord) -> ProbeSignature:
        """The answer a host gave its probe, as the crawl state kept it."""
        return cls(
            h.host, h.probe_url or "", h.probe_status or None, h.probe_title or "",
            h.probe_text or "", h.probe_location,
        )  # fmt: skip

    @property
    def soft(self) -> bool:
        """The host answers nonexistent URLs with 200: its soft-404 page is known."""
        return self.status == 200

    def describe(self) -> str:
        if self.status is None:
            return "no answer"
        if self.status in (404, 410):
            return f'HTTP {self.status}: the host says "not found" properly'
        if self.status == 200:
            return "HTTP 200: the host answers every unknown URL with a page"
        if self.location:
            return f"HTTP {self.status} → {self.location}"
        return f"HTTP {self.status}"


@dataclass(frozen=True)
class Soft404Verdict:
    """Whether a page is a soft 404, how that was decided and how sure."""

    is_soft_404: bool
    method: str | None = None  # probe-exact | probe-near | wording
    score: float | None = None  # Jaccard with the probe's page (probe methods)
    reason: str = ""


NOT_SOFT = Soft404Verdict(False)


def _wording(title: str, heading: str, text: str) -> str | None:
    """The "not found" phrase a short page opens with, if any."""
    words = text.split()
    if len(words) > MAX_WORDING_WORDS:
        return None
    for where, value in (
        ("title", title),
        ("heading", heading),
        ("opening", " ".join(words[:OPENING_WORDS])),
    ):
        m = NOT_FOUND_WORDING.search(value or "")
        if m:
            return f"{where} says “{m.group(0)}”"
    return None


def compare_with_probe(url: str, text: str, probe: ProbeSignature) -> tuple[str, float, int] | None:
    """``(method, jaccard, simhash distance)`` if ``text`` matches the probe's page."""
    mine = masked_words(text, url)
    theirs = masked_words(probe.text, probe.url)
    if not mine and not theirs:
        return ("probe-exact", 1.0, 0)
    if mine == theirs:
        return ("probe-exact", 1.0, 0)
    a, b = _shingles(mine), _shingles(theirs)
    sa, sb = set(a), set(b)
    jac = len(sa & sb) / len(sa | sb) if (sa or sb) else 1.0
    distance = 64
    if len(a) >= MIN_SHINGLES_FOR_NEAR and len(b) >= MIN_SHINGLES_FOR_NEAR:
        distance = hamming(
            simhash_from_hashes(shingle_hashes(a)), simhash_from_hashes(shingle_hashes(b))
        )
    if jac >= PROBE_JACCARD or distance <= SIMHASH_MAX_DISTANCE:
        return ("probe-near", jac, distance)
    return None


def classify(
    url: str,
    *,
    title: str,
    heading: str,
    text: str,
    probe: ProbeSignature | None,
) -> Soft404Verdict:
    """Is the ``200 OK`` page at ``url`` (its title, first heading, main text) a soft 404?"""
    is_root = urlsplit(url).path in ("", "/") and not urlsplit(url).query
    if probe is not None and probe.soft and not is_root:
        match = compare_with_probe(url, text, probe)
        if match is not None:
            method, jac, distance = match
            how = (
                "the same text"
                if method == "probe-exact"
                else f"shingle Jaccard {jac:.2f}"
                + (f", SimHash distance {distance}" if distance < 64 else "")
            )
            return Soft404Verdict(
                True,
                method,
                jac,
                f"matches this host's answer to a URL that cannot exist ({how}; "
                f"probe {urlsplit(probe.url).path})",
            )
    phrase = _wording(title, heading, text)
    if phrase is not None:
        return Soft404Verdict(True, "wording", None, f"a short page whose {phrase}")
    return NOT_SOFT
