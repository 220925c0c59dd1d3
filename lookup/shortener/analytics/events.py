"""Click events: what one redirect tells analytics, enriched off the redirect path.

The redirect hands over a raw :class:`~lookup.shortener.model.ClickContext` (headers
as they came). The shipper, in the redirect server's process, turns it into a
:class:`RawClick` — the same headers with the client IP replaced by a keyed hash (the
address is never written anywhere), nothing parsed — and writes batches of those to the
click log. :class:`ClickEnricher` turns a raw click into a :class:`ClickEvent` in the
aggregator's process: the user agent is parsed with ``user-agents`` (Browserscope's
``ua-parser`` rules) into device class, OS and browser; bots and link-preview fetchers
are recognised; the referrer is reduced to its host; the visitor is hashed.

Visitor identity follows the privacy-friendly web-analytics recipe: a keyed hash of
the (already keyed) IP hash and the user agent (no cookie), so "unique visitors" is an
estimate of distinct (address, browser) pairs, counted with a HyperLogLog by the
aggregator.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Iterator, Sequence
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
    #: The redirect rule that chose the destination (see ``ClickContext.rule``); absent in
    #: events from before rules existed.
    rule: int | None = None

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

    One cache for the whole combination: the aggregator enriches every click, and most
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


class RawClick(NamedTuple):
    """One click as the shipper writes it to the click log: the headers still unparsed.

    The redirect server does no more than this per click — the only derived field is
    the keyed IP hash (so the address itself is never written anywhere). Parsing the
    user agent, spotting bots and preview fetchers, reducing the referrer to its host and
    hashing the visitor happen in the aggregator (:meth:`ClickEnricher.event`), which
    runs in its own process and, in the seed's design, on its own machine.
    """

    event_id: str
    key: str
    ts: float
    ip_hash: str
    user_agent: str | None
    referer: str | None
    country: str | None
    #: The redirect rule that chose the destination (``ClickContext.rule``); None in records
    #: from before rules existed and for links without rules.
    rule: int | None = None


#: Longest referrer the shipper keeps (only its host is counted).
MAX_REFERER_LENGTH = 2_048


#: The columns of a :class:`RawBatch`: a :class:`RawClick` without its event id.
RAW_COLUMNS = RawClick._fields[1:]


class RawBatch(Sequence[RawClick]):
    """The shipper's batch: consecutive clicks of one producer, ids implied by position.

    Like a Kafka record batch (a base offset plus deltas), the batch stores its producer
    and first sequence number once, and the clicks **column by column** — one sequence
    each for :data:`RAW_COLUMNS` (key, ts, ip_hash, user_agent, referer, country) — so
    that building it and encoding it are loops in C (``zip``, ``map``, the JSON encoder),
    not Python code per click. Indexing or iterating it gives :class:`RawClick` s with
    their event ids ``producer-<seq hex>``. A log that knows the form
    (:class:`~lookup.shortener.analytics.clicklog.sqlite.SqliteClickLog`) stores it as
    is; any other log simply iterates it.
    """

    __slots__ = ("_pad", "columns", "first_seq", "producer")

    def __init__(self, producer: str, first_seq: int, columns: Sequence[Sequence[Any]]) -> None:
        # Without the last column (``rule``: a batch from before rules, or one none of whose
        # clicks had a rule) every click's rule is None.
        self._pad: tuple[None, ...] = (None,) if len(columns) == len(RAW_COLUMNS) - 1 else ()
        if len(columns) != len(RAW_COLUMNS) - len(self._pad):
            raise ValueError(f"a raw batch has {len(RAW_COLUMNS)} columns, not {len(columns)}")
        if len({len(column) for column in columns}) > 1:
            raise ValueError("the columns of a raw batch differ in length")
        self.producer = producer
        self.first_seq = first_seq
        self.columns = tuple(columns)

    @classmethod
    def from_rows(cls, producer: str, first_seq: int, rows: list[tuple[Any, ...]]) -> RawBatch:
        """A batch from ``(key, ts, ip_hash, user_agent, referer, country[, rule])`` rows."""
        if not rows:
            return cls(producer, first_seq, [()] * len(RAW_COLUMNS))
        return cls(producer, first_seq, list(zip(*rows, strict=True)))

    @property
    def rows(self) -> list[tuple[Any, ...]]:
        """The clicks as ``(key, ts, ip_hash, user_agent, referer, country[, rule])`` tuples."""
        return list(zip(*self.columns, strict=True))

    def __len__(self) -> int:
        return len(self.columns[0])

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("raw batch index out of range")
        row = (column[index] for column in self.columns)
        return RawClick(f"{self.producer}-{self.first_seq + index:x}", *row, *self._pad)

    def __iter__(self) -> Iterator[RawClick]:
        prefix, make, cls, pad = f"{self.producer}-", tuple.__new__, RawClick, self._pad
        for seq, row in enumerate(zip(*self.columns, strict=True), self.first_seq):
            yield make(cls, (f"{prefix}{seq:x}", *row, *pad))

    def __repr__(self) -> str:
        return f"RawBatch({self.producer!r}, {self.first_seq}, <{len(self)} clicks>)"


def _capped(values: Sequence[str | None], limit: int) -> Sequence[str | None]:
    """``values`` with every string cut to ``limit`` characters; the check runs in C and
    the values come back untouched (the same object) when none is longer."""
    if max(map(len, filter(None, values)), default=0) <= limit:
        return values
    return [v if v is None or len(v) <= limit else v[:limit] for v in values]


class ClickEnricher:
    """Raw clicks → :class:`RawClick` (shipper) → :class:`ClickEvent` (aggregator).

    Keyed with a secret for the hashes. Everything is memoised: the IP hash per address
    (the shipper's only per-click cost beyond building a tuple), and the derived fields
    per set of headers — a visitor clicks more than once, most clicks repeat a user agent
    seen moments before, parsing one costs 0.2–8 ms and an HMAC more than a dict lookup.
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

    def _visitor(self, ip_hash: str, user_agent: str | None) -> str:
        """Keyed hash of (IP hash, user agent): one visitor without cookies."""
        raw = f"{ip_hash}\x00{(user_agent or '')[:MAX_UA_LENGTH]}".encode("utf-8", "replace")
        return hmac.new(self._visitor_key, raw, hashlib.sha256).hexdigest()[:16]

    def _derive(
        self, user_agent: str | None, referer: str | None, country: str | None, ip_hash: str
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
            ip_hash,
            self.visitor(ip_hash, ua),
            agent,
        )

    # -- the shipper's half (redirect server process) ----------------------------------

    def raw(self, event_id: str, ctx: ClickContext) -> RawClick:
        """The log record of one click: headers as they came, the IP replaced by its hash."""
        return RawClick(event_id, *self.raw_batch("", 0, [ctx]).rows[0])

    def raw_batch(
        self,
        producer: str,
        first_seq: int,
        clicks: list[ClickContext] | list[tuple[Any, ...]],
    ) -> RawBatch:
        """The log batch for drained clicks (:class:`ClickContext` s or plain tuples in its
        field order); event ids ``producer-<seq hex>`` from ``first_seq``.

        This is all the redirect server's process does per click beyond the buffer, and
        none of it is a Python loop: the clicks are transposed into columns (``zip``),
        the IP column is mapped through the cached keyed hash (``map`` over an
        ``lru_cache``), and overlong user agents and referrers — which would let a
        hostile header bloat the log — are found with ``max(map(len, ...))`` and cut
        only if there are any.
        """
        if not clicks:
            return RawBatch.from_rows(producer, first_seq, [])
        ua: Sequence[str | None]
        referer: Sequence[str | None]
        columns = list(zip(*clicks, strict=True))
        key, ts, ip, ua, referer, country = columns[:6]
        ip_hash = tuple(map(self.ip_hash, ip))
        ua = _capped(ua, MAX_UA_LENGTH)
        referer = _capped(referer, MAX_REFERER_LENGTH)
        rule = columns[9] if len(columns) > 9 else (None,) * len(key)  # ClickContext.rule
        return RawBatch(producer, first_seq, (key, ts, ip_hash, ua, referer, country, rule))

    # -- the aggregator's half (its own process) ---------------------------------------

    def event(self, raw: RawClick | tuple[Any, ...]) -> ClickEvent:
        """The counted event for one logged click: agent parsed, referrer host, visitor."""
        event_id, key, ts, ip_hash, ua, referer, country, *rule = raw
        derived = self._derived(ua, referer, country, ip_hash)
        fields = (event_id, key, float(ts), *derived, rule[0] if rule else None)
        return tuple.__new__(ClickEvent, fields)

    def events(self, raws: list[RawClick] | list[tuple[Any, ...]]) -> list[ClickEvent]:
        """:meth:`event` for a batch, with the per-event Python kept to a minimum."""
        derived = self._derived
        make = tuple.__new__
        cls = ClickEvent
        return [
            make(
                cls,
                (
                    event_id,
                    key,
                    float(ts),
                    *derived(ua, referer, country, ip_hash),
                    rule[0] if rule else None,
                ),
            )
            for event_id, key, ts, ip_hash, ua, referer, country, *rule in raws
        ]

    # -- both halves at once (tests, notebooks, in-memory pipelines) -------------------

    def enrich(self, event_id: str, ctx: ClickContext) -> ClickEvent:
        """The counted event for one raw click (:meth:`raw`, then :meth:`event`)."""
        return self.event(self.raw(event_id, ctx))

    def enrich_many(self, raw: list[tuple[str, ClickContext]]) -> list[ClickEvent]:
        """:meth:`enrich` for ``(event_id, click)`` pairs."""
        return self.events([self.raw(event_id, ctx) for event_id, ctx in raw])


def as_event(record: RawClick | ClickEvent, enricher: ClickEnricher) -> ClickEvent:
    """A log record as a counted event: raw clicks are enriched, events pass through."""
    if type(record) is ClickEvent:
        return record
    return enricher.event(record)  # type: ignore[arg-type]


def event_fields() -> tuple[str, ...]:
    """The column names of a :class:`ClickEvent`, in order."""
    return ClickEvent._fields


def record_from_row(row: Sequence[Any]) -> RawClick | ClickEvent:
    """A log record from its stored row: 8 fields are a :class:`RawClick`, 12 a
    :class:`ClickEvent` (already enriched, e.g. by an edge that parses user agents); 7 and
    11, records from before clicks named their redirect rule, get ``rule`` None."""
    if type(row) is RawClick or type(row) is ClickEvent:
        return row  # type: ignore[return-value]
    size = len(row)
    if size in (len(RawClick._fields), len(RawClick._fields) - 1):
        return RawClick._make((*row, None) if size == len(RawClick._fields) - 1 else row)
    if size in (len(ClickEvent._fields), len(ClickEvent._fields) - 1):
        return ClickEvent._make((*row, None) if size == len(ClickEvent._fields) - 1 else row)
    raise ValueError(f"a click log record has 7, 8, 11 or 12 fields, not {size}")


def event_from_row(row: tuple[Any, ...]) -> ClickEvent:
    """A :class:`ClickEvent` from a tuple in :func:`event_fields` order."""
    return ClickEvent._make(row)
