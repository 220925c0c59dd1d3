"""The Typeahead page's marks for typo-tolerant suggestions, scores and highlight ranges.

The page's client keeps only the suggestion strings (what it caches and filters), so for
a prefix where the typo fallback can apply (four characters or more) this asks
``/v1/suggest`` once more with ``highlight=true`` — cached per prefix, market and
snapshot version — and uses the answer twice: a corrected suggestion gets a tag in the
dropdown, and a small list under the box shows every suggestion with its matched
ranges in bold, its score and, when corrected, how many typos it took.
"""

from __future__ import annotations

from typing import Any

import streamlit as st
from common import api_url
from common import call as api_call

#: The fallback applies from this many characters (the server's one-typo length).
MIN_CHARS = 4
_MD_SPECIAL = "\\`*_{}[]()#+-.!|<>~$"


def typo_text(typos: float) -> str:
    """``1 typo``, ``0.5 typo``, ``2 typos``: a slip to a neighbouring key counts half."""
    shown = f"{typos:g}"
    return f"{shown} typo" if typos <= 1 else f"{shown} typos"


@st.cache_data(ttl=60, show_spinner=False, max_entries=256)
def details(base_url: str, prefix: str, market: str, version: str | None) -> dict[str, Any]:
    """Per suggestion of the server's answer: ``{"typos", "score", "highlights"}``
    (``base_url`` and ``version`` key the cache: another API or snapshot asks afresh)."""
    answer = api_call(
        "GET", "/v1/suggest", params={"q": prefix, "market": market, "highlight": "true"}
    )
    if not answer.ok or not isinstance(answer.body, dict):
        return {}
    body = answer.body
    texts = body.get("suggestions", [])
    typos = body.get("typos") or [0] * len(texts)
    scores = body.get("scores") or [0.0] * len(texts)
    ranges = body.get("highlights") or [[] for _ in texts]
    return {
        text: {"typos": t, "score": s, "highlights": r}
        for text, t, s, r in zip(texts, typos, scores, ranges, strict=False)
    }


def lookup_marks(prefix: str, market: str, version: str | None) -> dict[str, Any]:
    """The marks for what the box shows, or nothing for a prefix too short to correct."""
    if len(prefix.strip()) < MIN_CHARS:
        return {}
    return details(api_url(), prefix, market, version)


def tag_items(items: list[dict[str, Any]], marks: dict[str, Any]) -> list[dict[str, Any]]:
    """Dropdown items with corrected suggestions tagged (and all of their text bold: they
    do not start with what was typed)."""
    out = []
    for item in items:
        mark = marks.get(item["s"])
        if mark and mark["typos"]:
            item = {**item, "typed": "", "tag": f"corrected · {typo_text(mark['typos'])}"}
        out.append(item)
    return out


def bolded(text: str, ranges: list[list[int]]) -> str:
    """Markdown of ``text`` with the ``[start, end)`` ranges in bold."""
    out, at = [], 0
    for start, end in sorted(ranges):
        if start < at or end <= start:
            continue
        out += [_escape(text[at:start]), f"**{_escape(text[start:end])}**"]
        at = end
    out.append(_escape(text[at:]))
    return "".join(out)


def _escape(text: str) -> str:
    return "".join("\\" + ch if ch in _MD_SPECIAL else ch for ch in text)


def matches_panel(suggestions: list[str], marks: dict[str, Any]) -> None:
    """Every suggestion with its matched ranges in bold and its score; corrected ones
    marked. Shown only when the fallback corrected something."""
    if not any(marks.get(s, {}).get("typos") for s in suggestions):
        return
    lines = []
    for s in suggestions:
        mark = marks.get(s)
        if mark is None:
            continue
        badge = f" :orange-badge[corrected · {typo_text(mark['typos'])}]" if mark["typos"] else ""
        lines.append(f"- {bolded(s, mark['highlights'])} · score {mark['score']:.1f}{badge}")
    st.markdown(
        "**Typo-tolerant matches** — the prefix found too little, so the server added "
        "suggestions within a typo or two (after the exact ones; bold: what matched)\n\n"
        + "\n".join(lines)
    )
