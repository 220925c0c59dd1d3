"""Redirect rules: per link, an ordered list of conditions → destination (Shlink's
"dynamic rules").

A :class:`Rule` holds one destination and one or more :class:`Condition` s, all of which
must hold; the first rule whose conditions all hold decides where a visit goes, and a
visit no rule takes goes to the link's own destination. The condition types and their
JSON follow Shlink's ``redirect-rules`` (``type``, ``matchKey``, ``matchValue``):

* ``device`` — ``ios``, ``android`` or ``desktop``, from the User-Agent parsed with
  ``user-agents`` (Browserscope's ``ua-parser`` rules, as analytics parses it);
* ``browser`` — a browser family (``chrome``, ``firefox``, ``safari``, ``edge``, …): the
  ua-parser family lower-cased, with the words ``mobile``, ``ios`` and ``webview`` left out,
  so ``Chrome Mobile iOS`` is ``chrome`` and ``Mobile Safari`` is ``safari``;
* ``language`` — ``es`` or ``es-AR`` against ``Accept-Language``: as in Shlink, only the
  languages the visitor weighs ``q >= 0.9`` count, the primary subtag must be equal, and a
  region in the condition must be equal too (``es`` takes ``es-AR``; ``es-AR`` not ``es``);
* ``country`` — an ISO 3166-1 alpha-2 code against the visitor's address, looked up in the
  IP-to-country data the ``iptocc`` package ships (:mod:`.country`);
* ``query-param`` — ``matchKey`` = ``matchValue`` in the visitor's query string;
* ``valid-since`` / ``valid-until`` — a time window: from (inclusive) / before (exclusive)
  ``matchValue``, epoch seconds.

Everything here is pure and cached per distinct header value, so a link with rules costs
a redirect a few dictionary look-ups; a link without rules costs one truth test.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import parse_qs

from user_agents import parse as parse_user_agent

from lookup.shortener.model import format_time

__all__ = [
    "CONDITION_TYPES",
    "DEVICES",
    "MIN_LANGUAGE_QUALITY",
    "Condition",
    "Rule",
    "Visit",
    "accepted_languages",
    "browser_of",
    "choose",
    "decode_rules",
    "device_of",
    "encode_rules",
    "rules_view",
]

CONDITION_TYPES = (
    "device",
    "browser",
    "language",
    "country",
    "query-param",
    "valid-since",
    "valid-until",
)
DEVICES = ("ios", "android", "desktop")
#: Languages weighed below this in ``Accept-Language`` do not count (Shlink's threshold).
MIN_LANGUAGE_QUALITY = 0.9
_MAX_HEADER = 512
_FAMILY_NOISE = re.compile(r"\b(?:mobile|ios|webview)\b")


@dataclass(frozen=True, slots=True)
class Condition:
    """One test of a visit: ``type`` with its ``value`` (and ``key`` for query-param).

    ``value`` is stored normalised: lower-case device/browser/language, upper-case
    country, and for the time window the epoch seconds as a decimal string.
    """

    type: str
    value: str
    key: str | None = None


@dataclass(frozen=True, slots=True)
class Rule:
    """One redirect rule: where a visit goes when every condition holds."""

    long_url: str
    conditions: tuple[Condition, ...]


@dataclass(slots=True)
class Visit:
    """What the conditions read of one request; each part is parsed only when asked."""

    user_agent: str | None
    accept_language: str | None
    query: bytes
    now: float
    address: str | None
    country_of: Any  # Callable[[str | None], str | None]

    def country(self) -> str | None:
        """The visitor's country (None for a loopback, private or unknown address)."""
        return self.country_of(self.address)  # type: ignore[no-any-return]


@lru_cache(maxsize=4096)
def _agent(user_agent: str) -> tuple[str | None, str]:
    """(device, browser family) of a User-Agent string."""
    parsed = parse_user_agent(user_agent[:_MAX_HEADER])
    os_family = (parsed.os.family or "").lower()
    device: str | None = None
    if os_family in ("ios", "ipados") or "iphone" in user_agent.lower():
        device = "ios"
    elif os_family == "android":
        device = "android"
    elif parsed.is_pc and not parsed.is_bot:
        device = "desktop"
    family = _FAMILY_NOISE.sub(" ", (parsed.browser.family or "").lower())
    return device, " ".join(family.split())


def device_of(user_agent: str | None) -> str | None:
    """``ios``, ``android``, ``desktop`` or None (a tablet of another OS, a bot, nothing)."""
    return _agent(user_agent)[0] if user_agent else None


def browser_of(user_agent: str | None) -> str:
    """The browser family as ``browser`` conditions name it ('' when unknown)."""
    return _agent(user_agent)[1] if user_agent else ""


@lru_cache(maxsize=4096)
def accepted_languages(header: str) -> tuple[tuple[str, str | None], ...]:
    """``(language, region)`` pairs ``Accept-Language`` weighs at least
    :data:`MIN_LANGUAGE_QUALITY`, lower-case, in the header's order; ``*`` is skipped."""
    out: list[tuple[str, str | None]] = []
    for part in header[:_MAX_HEADER].split(","):
        tag, _, params = part.strip().partition(";")
        tag = tag.strip().lower()
        if not tag or tag == "*":
            continue
        quality = 1.0
        for param in params.split(";"):
            name, _, value = param.strip().partition("=")
            if name.strip().lower() == "q":
                try:
                    quality = float(value.strip())
                except ValueError:
                    quality = 0.0
        if not quality >= MIN_LANGUAGE_QUALITY:  # also NaN
            continue
        primary, _, rest = tag.partition("-")
        region = rest.split("-")[-1] if rest else None
        out.append((primary, region or None))
    return tuple(out)


@lru_cache(maxsize=1024)
def _query(raw: bytes) -> Mapping[str, list[str]]:
    try:
        text = raw[:8192].decode("utf-8")
    except UnicodeDecodeError:
        text = raw[:8192].decode("latin-1")
    return parse_qs(text, keep_blank_values=True, max_num_fields=200)


def _holds(cond: Condition, visit: Visit) -> bool:
    kind = cond.type
    if kind == "device":
        return device_of(visit.user_agent) == cond.value
    if kind == "browser":
        return browser_of(visit.user_agent) == cond.value
    if kind == "language":
        if not visit.accept_language:
            return False
        want, _, want_region = cond.value.partition("-")
        return any(
            lang == want and (not want_region or region == want_region)
            for lang, region in accepted_languages(visit.accept_language)
        )
    if kind == "country":
        return visit.country() == cond.value
    if kind == "query-param":
        try:
            values = _query(visit.query).get(cond.key or "")
        except ValueError:  # more fields than parse_qs allows
            return False
        return values is not None and cond.value in values
    if kind == "valid-since":
        return visit.now >= float(cond.value)
    if kind == "valid-until":
        return visit.now < float(cond.value)
    return False


def choose(rules: Iterable[Rule], visit: Visit) -> tuple[int, Rule] | None:
    """The first rule whose conditions all hold, with its index; None: the default."""
    for index, rule in enumerate(rules):
        if all(_holds(cond, visit) for cond in rule.conditions):
            return index, rule
    return None


def encode_rules(rules: Iterable[Rule]) -> list[dict[str, Any]]:
    """Rules as plain JSON (the cache tier's and the store's form)."""
    return [
        {
            "longUrl": rule.long_url,
            "conditions": [
                {"type": c.type, "matchKey": c.key, "matchValue": c.value} for c in rule.conditions
            ],
        }
        for rule in rules
    ]


def decode_rules(data: Iterable[Mapping[str, Any]]) -> tuple[Rule, ...]:
    """Inverse of :func:`encode_rules` (data already validated when it was stored)."""
    return tuple(
        Rule(
            str(item["longUrl"]),
            tuple(
                Condition(str(c["type"]), str(c["matchValue"]), c.get("matchKey"))
                for c in item["conditions"]
            ),
        )
        for item in data
    )


def rules_view(rules: Iterable[Rule]) -> list[dict[str, Any]]:
    """Rules as the API shows them (Shlink's shape; times as ISO 8601, ``priority`` from 1)."""
    out = encode_rules(rules)
    for priority, item in enumerate(out, 1):
        item["priority"] = priority
        for cond in item["conditions"]:
            if cond["type"] in ("valid-since", "valid-until"):
                cond["matchValue"] = format_time(float(cond["matchValue"]))
    return out
