"""Click events: what one redirect tells analytics, enriched off the redirect path.

The redirect hands over a raw :class:`~lookup.shortener.model.ClickContext` (headers
as they came). :class:`ClickEnricher` turns it into a :class:`ClickEvent` in the
shipper's thread: the user agent is parsed with ``user-agents`` (Browserscope's
``ua-parser`` rules) into device class, OS and browser; bots and link-preview
fetchers are recognised; the referrer is reduced to its host; the client IP is
replaced by a keyed hash and never written anywhere.

Visitor identity follows the privacy-friendly web-analytics recipe: a keyed hash of
IP and user agent (no cookie), so "unique visitors" is an estimate of distinct
(address, browser) pairs, counted with a HyperLogLog by the aggregator.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from user_agents import parse as parse_user_agent

from lookup.shortener.model import ClickContext

#: Agent kinds: people, automated clients, and chat/social apps fetching a preview card.
HUMAN, BOT, PREVIEW = "human", "bot", "preview"
AGENT_KINDS = (HUMAN, BOT, PREVIEW)

#: Link-preview fetchers: chat and social apps that fetch a link to draw its card when
#: somebody pastes it. Each paste costs a "click" nobody made, so they are kept apart.
LINK_PREVIEW_AGENTS: tuple[str, ...] = (
    "slackbot",
    "slack-imgproxy",
    "facebookexternalhit",
    "facebookcatalog",
    "meta-externalagent",
    "twitterbot",
    "whatsapp",
    "telegrambot",
    "discordbot",
    "linkedinbot",
    "skypeuripreview",
    "microsoftpreview",
    "redditbot",
    "pinterestbot",
    "embedly",
    "iframely",
    "vkshare",
    "viber",
    "snapchat",
    "mastodon",
    "bluesky",
    "google-pagerenderer",
    "bingpreview",
    "applenewsbot",
)
_PREVIEW_RE = re.compile("|".join(re.escape(a) for a in LINK_PREVIEW_AGENTS), re.IGNORECASE)

#: Scripted HTTP clients the UA rules do not call bots; no person clicks with them.
SCRIPTED_AGENTS: tuple[str, ...] = (
    "curl/",
    "wget/",
    "python-requests",
    "python-httpx",
    "python-urllib",
    "aiohttp",
    "go-http-client",
    "okhttp",
    "java/",
    "apache-httpclient",
    "libwww-perl",
    "httpie",
    "scrapy",
    "headlesschrome",
    "phantomjs",
    "node-fetch",
    "axios/",
)
_SCRIPTED_RE = re.compile("|".join(re.escape(a) for a in SCRIPTED_AGENTS), re.IGNORECASE)

_COUNTRY = re.compile(r"[A-Z]{2}")
#: Cloudflare's non-country values: XX unknown, T1 Tor.
_NOT_COUNTRIES = frozenset({"XX", "T1"})
MAX_UA_LENGTH = 512

DIRECT = "(direct)"
UNKNOWN = "unknown"


class ClickEvent(NamedTuple):
    """One click as the click log stores it (about 200 bytes; no raw IP, no raw UA).

    A named tuple: the shipper and the aggregator handle tens of thousands a second.
    """

    event_id: str
    key: str
    ts: float
    country: str
    device: str
    os: str
    browser: str
    referrer: str
    ip_hash: str
    visitor: str
    agent: str

    @property
    def is_human(self) -> bool:
        """Whether the click counts for people (bots and preview fetchers do not)."""
        return self.agent == HUMAN

    def to_json(self) -> str:
        """The event as one JSON object (the wire format for a stream such as Kafka)."""
        return json.dumps(self._asdict(), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> ClickEvent:
        """Inverse of :meth:`to_json`."""
        return cls(**json.loads(text))


@dataclass(frozen=True, slots=True)
class AgentInfo:
    """What a user-agent string says: device class, OS and browser family, agent kind."""

    device: str
    os: str
    browser: str
    agent: str


@lru_cache(maxsize=8192)
def classify_agent(user_agent: str | None) -> AgentInfo:
    """Device class (``mobile``/``tablet``/``desktop``/``other``), OS, browser and kind.

    Cached: real traffic has few distinct user agents, and parsing one costs 0.2–8 ms.
    No user agent at all is a bot (every browser sends one).
    """
    if not user_agent or not user_agent.strip():
        return AgentInfo(UNKNOWN, UNKNOWN, UNKNOWN, BOT)
    text = user_agent[:MAX_UA_LENGTH]
    parsed = parse_user_agent(text)
    browser = parsed.browser.family or UNKNOWN
    os_family = parsed.os.family or UNKNOWN
    if _PREVIEW_RE.search(text):
        return AgentInfo("bot", os_family, browser, PREVIEW)
    if parsed.is_bot or _SCRIPTED_RE.search(text):
        return AgentInfo("bot", os_family, browser, BOT)
    if parsed.is_tablet:
        device = "tablet"
    elif parsed.is_mobile:
        device = "mobile"
    elif parsed.is_pc:
        device = "desktop"
    else:
        device = "other"
    return AgentInfo(device, os_family, browser, HUMAN)


@lru_cache(maxsize=8192)
def referrer_host(referer: str | None) -> str:
    """The referring site's host name (``www.`` dropped), or ``(direct)``."""
    if not referer:
        return DIRECT
    try:
        host = urlsplit(referer.strip()).hostname
    except ValueError:
        return UNKNOWN
    if not host:
        return UNKNOWN
    host = host.lower()[:253]
    return host[4:] if host.startswith("www.") else host


@lru_cache(maxsize=1024)
def country_code(header: str | None) -> str:
    """An ISO 3166 alpha-2 code from an edge header (``CF-IPCountry``), else ``unknown``."""
    if not header:
        return UNKNOWN
    code = header.strip().upper()
    if not _COUNTRY.fullmatch(code) or code in _NOT_COUNTRIES:
        return UNKNOWN
    return code


@lru_cache(maxsize=16_384)
def describe(
    user_agent: str | None, referer: str | None, country: str | None
) -> tuple[str, str, str, str, str, str]:
    """(country, device, OS, browser, referrer host, agent kind) for one click's headers.

    One cache for the whole combination: the shipper enriches every click, and most
    clicks repeat a combination seen moments before.
    """
    info = classify_agent(user_agent)
    return (
        country_code(country),
        info.device,
        info.os,
        info.browser,
        referrer_host(referer),
        info.agent,
    )


class ClickEnricher:
    """Turns raw clicks into :class:`ClickEvent` s with a secret key for the IP hashes.

    Hashes are memoised per address and per (address, user agent): a visitor clicks
    more than once, and an HMAC costs more than a dictionary lookup.
    """

    def __init__(self, secret: bytes) -> None:
        self._ip_key = hmac.new(secret, b"analytics-ip", hashlib.sha256).digest()
        self._visitor_key = hmac.new(secret, b"analytics-visitor", hashlib.sha256).digest()
        self.ip_hash = lru_cache(maxsize=65_536)(self._ip_hash)  # type: ignore[method-assign]
        self.visitor = lru_cache(maxsize=65_536)(self._visitor)  # type: ignore[method-assign]
        self._derived = lru_cache(maxsize=65_536)(self._derive)

    def _ip_hash(self, ip: str | None) -> str:
        """Keyed hash of the client IP: stable for counting, useless for finding anyone."""
        raw = (ip or "").encode("utf-8", "replace")
        return hmac.new(self._ip_key, raw, hashlib.sha256).hexdigest()[:16]

    def _visitor(self, ip: str | None, user_agent: str | None) -> str:
        """Keyed hash of (IP, user agent): one visitor without cookies."""
        raw = f"{ip or ''}\x00{(user_agent or '')[:MAX_UA_LENGTH]}".encode("utf-8", "replace")
        return hmac.new(self._visitor_key, raw, hashlib.sha256).hexdigest()[:16]

    def _derive(
        self, user_agent: str | None, referer: str | None, country: str | None, ip: str | None
    ) -> tuple[str, ...]:
        """The fields of an event after its key and time: one cache entry per header set."""
        ua = user_agent[:MAX_UA_LENGTH] if user_agent else None
        country_, device, os_family, browser, referrer, agent = describe(ua, referer, country)
        return (
            country_,
            device,
            os_family,
            browser,
            referrer,
            self.ip_hash(ip),
            self.visitor(ip, ua),
            agent,
        )

    def enrich(self, event_id: str, ctx: ClickContext) -> ClickEvent:
        """The stored event for one raw click."""
        derived = self._derived(ctx.user_agent, ctx.referer, ctx.country, ctx.client_ip)
        return ClickEvent._make((event_id, ctx.key, float(ctx.ts), *derived))

    def enrich_many(self, raw: list[tuple[str, ClickContext]]) -> list[ClickEvent]:
        """:meth:`enrich` for a drained batch, with the per-event Python kept to a minimum.

        The shipper runs in the redirect server's process, so every microsecond spent
        here per click is taken from the event loop (the GIL): one cache lookup for the
        whole header set (user agent, referrer, country, client IP) and one tuple build.
        """
        derived = self._derived
        make = tuple.__new__
        cls = ClickEvent
        return [
            make(
                cls,
                (
                    event_id,
                    ctx.key,
                    float(ctx.ts),
                    *derived(ctx.user_agent, ctx.referer, ctx.country, ctx.client_ip),
                ),
            )
            for event_id, ctx in raw
        ]


def event_fields() -> tuple[str, ...]:
    """The column names of a :class:`ClickEvent`, in order."""
    return ClickEvent._fields


def event_from_row(row: tuple[Any, ...]) -> ClickEvent:
    """A :class:`ClickEvent` from a tuple in :func:`event_fields` order."""
    return ClickEvent._make(row)
