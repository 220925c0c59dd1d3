"""Fetching safely: async HTTP with timeouts, a size cap, a content-type check and a DNS cache.

One ``httpx.AsyncClient`` keeps hundreds of requests in flight across hosts
(Little's law: in flight = rate × time per request). Every fetch has a connect
timeout and an overall deadline, streams the body and stops at the size cap,
checks the content type before reading the body, never follows redirects itself
(each hop goes back through the crawler's URL filter, seen-check and politeness),
sends a User-Agent that names the crawler with a contact URL, and sends
``If-None-Match`` / ``If-Modified-Since`` when recrawling.

Names are resolved by :class:`DnsResolver` — a per-host cache in front of either a
static table (the sandbox web's ``/etc/hosts``-style name table, since
``.sandbox.test`` has no DNS) or the system resolver — and the request goes to
the resolved address with the original ``Host`` header (and SNI for https).

https certificates are always verified — against the usual public CAs (``certifi``)
plus, when given, an extra CA bundle file (``ca_bundle``: e.g. the sandbox web's
throwaway CA). A certificate that does not verify is a final ``tls`` error, never
a reason to switch verification off.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
import ssl
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import certifi
import httpx

from lookup.crawler.output import SentRequest
from lookup.crawler.scope import LOOPBACK, address_permitted
from lookup.kit.htmlcharset import decode_html, has_bom

__all__ = [
    "DEFAULT_USER_AGENT",
    "FetchResult",
    "Fetcher",
    "HTML_TYPES",
    "PAGE_TYPES",
    "PDF_TYPES",
    "ResolveError",
    "DnsResolver",
    "parse_hosts_file",
    "parse_retry_after",
    "tls_context",
]

DEFAULT_USER_AGENT = (
    "LookupBot/0.1 (+https://lookup-workbench.example/bot; the Lookup Workbench crawler)"
)
#: A host spelled as numbers (decimal, octal, hex, fewer than four parts).
_NUMERIC_HOST = re.compile(r"(0x[0-9a-f]+|[0-9]+)(\.(0x[0-9a-f]*|[0-9]+)){0,3}\.?", re.I)
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
#: Documents read as pages besides HTML (their text extracted, never their links).
PDF_TYPES = frozenset({"application/pdf"})
#: What a page request accepts: HTML and PDF.
PAGE_TYPES = HTML_TYPES | PDF_TYPES
SITEMAP_TYPES = frozenset({"application/xml", "text/xml", "text/plain"})


class ResolveError(Exception):
    """A host name could not be resolved to an address we may contact."""


def parse_hosts_file(text: str) -> dict[str, str]:
    """``/etc/hosts`` format (``ADDRESS NAME [NAME...]``, ``#`` comments) → name → address."""
    table: dict[str, str] = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        addr, *names = line.split()
        ipaddress.ip_address(addr)  # raises ValueError on a malformed line
        for name in names:
            table[name.lower().rstrip(".")] = addr
    return table


@dataclass
class DnsResolver:
    """A per-host address cache over a static table and/or the system resolver.

    ``strict`` uses the table only (no DNS query ever leaves the machine).
    ``allowed`` restricts the addresses the crawler may contact (default: loopback
    only, so a crawl of the sandbox can never wander onto the internet).
    """

    table: dict[str, str] = field(default_factory=dict)
    strict: bool = False
    allowed: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] | None = LOOPBACK
    public: bool = False  # also every public address (never a private or metadata one)
    ttl: float = 300.0
    _cache: dict[str, tuple[str, float]] = field(default_factory=dict)
    lookups: int = 0

    async def resolve(self, host: str) -> str:
        """The address for ``host`` (a name or an IP literal); raises :class:`ResolveError`."""
        host = host.lower().rstrip(".")
        now = time.monotonic()
        hit = self._cache.get(host)
        if hit is not None and hit[1] > now:
            return hit[0]
        address = await self._lookup(host)
        if self.allowed is not None:
            if not address_permitted(address, self.allowed, self.public):
                raise ResolveError(f"{host} resolves to {address}, outside the allowed networks")
        self._cache[host] = (address, now + self.ttl)
        return address

    async def _lookup(self, host: str) -> str:
        self.lookups += 1
        try:
            return str(ipaddress.ip_address(host.strip("[]")))
        except ValueError:
            pass
        if _NUMERIC_HOST.fullmatch(host):  # 2130706433, 0x7f.1, 0177.0.0.1: as inet_aton reads
            try:
                return socket.inet_ntoa(socket.inet_aton(host))
            except OSError:
                pass
        if host in self.table:
            return self.table[host]
        if self.strict:
            raise ResolveError(f"{host} is not in the host table")
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(
                host, None, type=socket.SOCK_STREAM
            )
        except (OSError, UnicodeError) as exc:
            raise ResolveError(f"cannot resolve {host}: {exc}") from exc
        if not infos:
            raise ResolveError(f"no address for {host}")
        return str(infos[0][4][0])

    def cached(self) -> dict[str, str]:
        return {h: a for h, (a, _) in self._cache.items()}


@dataclass
class FetchResult:
    """What one request produced. ``error`` is set when no usable answer came back."""

    url: str
    address: str
    started: float  # wall clock
    took: float  # seconds, monotonic
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    raw_headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    content_type: str = ""
    charset: str | None = None
    error: str | None = None  # timeout | connect | tls | too-large | not-html | protocol
    detail: str = ""
    http_version: str = "HTTP/1.1"
    sent: SentRequest | None = None  # the request as it went out (for the WARC request record)

    @property
    def ok(self) -> bool:
        return self.error is None and self.status is not None

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    def text(self) -> str:
        """The body decoded as a browser would (BOM, header, ``<meta>``, detection)."""
        return decode_html(self.body, self.header("content-type")).text


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """``Retry-After`` as seconds: delta-seconds or an HTTP date; None if absent or bad."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        return None
    return max(0.0, when - (time.time() if now is None else now))


def looks_binary(body: bytes) -> bool:
    """Binary content served as text: NUL bytes, or many control characters, up front."""
    head = body[:2048]
    if not head:
        return False
    if b"\x00" in head:
        return True
    controls = sum(1 for b in head if b < 9 or 13 < b < 32)
    return controls / len(head) > 0.05


def _media_type(content_type: str) -> tuple[str, str | None]:
    media, _, params = content_type.partition(";")
    charset = None
    for param in params.split(";"):
        k, _, v = param.strip().partition("=")
        if k.lower() == "charset" and v:
            charset = v.strip().strip('"').lower()
    return media.strip().lower(), charset


def tls_context(ca_bundle: str | Path | None = None) -> ssl.SSLContext:
    """A verifying TLS context: the public CAs, plus the CAs in ``ca_bundle`` if given.

    Raises ``OSError`` or ``ssl.SSLError`` when ``ca_bundle`` cannot be read as PEM.
    """
    context = ssl.create_default_context(cafile=certifi.where())
    if ca_bundle is not None:
        context.load_verify_locations(cafile=str(ca_bundle))
    return context


def _tls_failure(exc: BaseException) -> ssl.SSLError | None:
    """The TLS error behind a connection error, if that is what it was."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, ssl.SSLError):
            return cur
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return None


class Fetcher:
    """Async HTTP fetches with every guard a polite, robust crawler needs."""

    def __init__(
        self,
        resolver: DnsResolver,
        *,
        user_agent: str = DEFAULT_USER_AGENT,
        connect_timeout: float = 5.0,
        timeout: float = 15.0,
        max_bytes: int = 10 * 1024 * 1024,
        max_connections: int = 256,
        ca_bundle: str | Path | None = None,
    ) -> None:
        self.resolver = resolver
        self.user_agent = user_agent
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.client = httpx.AsyncClient(
            verify=tls_context(ca_bundle),
            follow_redirects=False,
            timeout=httpx.Timeout(timeout, connect=connect_timeout),
            limits=httpx.Limits(
                max_connections=max_connections,
                max_keepalive_connections=max_connections,
                keepalive_expiry=30.0,
            ),
            headers={
                "User-Agent": user_agent,
                "Accept": "text/html,application/xhtml+xml;q=0.9,*/*;q=0.5",
                "Accept-Encoding": "gzip, deflate",
            },
            trust_env=False,
        )

    async def aclose(self) -> None:
        await self.client.aclose()

    async def __aenter__(self) -> Fetcher:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def fetch(
        self,
        url: str,
        *,
        accept: Iterable[str] | None = HTML_TYPES,
        conditional: dict[str, str] | None = None,
        max_bytes: int | None = None,
    ) -> FetchResult:
        """GET ``url``. ``accept`` lists acceptable media types (None: anything)."""
        cap = self.max_bytes if max_bytes is None else max_bytes
        started = time.time()
        t0 = time.monotonic()
        parts = urlsplit(url)
        host = parts.hostname or ""
        try:
            address = await self.resolver.resolve(host)
        except ResolveError as exc:
            took = time.monotonic() - t0
            return FetchResult(url, "", started, took, error="dns", detail=str(exc))
        netloc_ip = f"[{address}]" if ":" in address else address
        if parts.port is not None:
            netloc_ip = f"{netloc_ip}:{parts.port}"
        target = urlunsplit((parts.scheme, netloc_ip, parts.path or "/", parts.query, ""))
        headers = {"Host": parts.netloc}
        if conditional:
            headers.update(conditional)
        extensions = {"sni_hostname": host} if parts.scheme == "https" else {}
        result = FetchResult(url, address, started, 0.0)
        try:
            async with asyncio.timeout(self.timeout):
                request = self.client.build_request(
                    "GET", target, headers=headers, extensions=extensions
                )
                path = request.url.raw_path.decode("ascii", "replace")
                result.sent = SentRequest(path, list(request.headers.multi_items()))
                response = await self.client.send(request, stream=True)
                try:
                    await self._read(response, result, accept, cap)
                finally:
                    await response.aclose()
        except TimeoutError:
            result.error, result.detail = "timeout", f"no complete answer in {self.timeout:g} s"
        except httpx.TimeoutException as exc:
            result.error, result.detail = "timeout", type(exc).__name__
        except httpx.ConnectError as exc:
            failure = _tls_failure(exc)
            if failure is not None:
                if isinstance(failure, ssl.SSLCertVerificationError):
                    reason = f"certificate verify failed ({failure.verify_message})"
                else:
                    reason = str(failure.reason or failure)
                result.error, result.detail = "tls", f"TLS handshake failed: {reason}"
            else:
                result.error, result.detail = "connect", str(exc) or type(exc).__name__
        except (httpx.HTTPError, httpx.InvalidURL, ValueError) as exc:
            result.error, result.detail = "protocol", f"{type(exc).__name__}: {exc}"
        result.took = time.monotonic() - t0
        return result

    async def _read(
        self,
        response: httpx.Response,
        result: FetchResult,
        accept: Iterable[str] | None,
        cap: int,
    ) -> None:
        result.status = response.status_code
        result.http_version = response.http_version
        result.raw_headers = [(k, v) for k, v in response.headers.multi_items()]
        result.headers = {k.lower(): v for k, v in response.headers.items()}
        media, charset = _media_type(response.headers.get("content-type", ""))
        result.content_type, result.charset = media, charset
        if response.status_code != 200:
            # Redirects, 304s and errors: a small body at most, for the record.
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > 64 * 1024:
                    break
            result.body = bytes(body[: 64 * 1024])
            return
        if accept is not None and media and media not in accept:
            result.error, result.detail = "not-html", f"content type {media!r}"
            return
        declared = response.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > cap:
            result.error, result.detail = "too-large", f"Content-Length {declared} > {cap}"
            return
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > cap:
                result.error, result.detail = "too-large", f"body over {cap} bytes"
                return
        result.body = bytes(body)
        if accept is not None and not media:
            sniff = result.body[:512].lstrip().lower()
            if sniff.startswith(b"%pdf-") and PDF_TYPES <= set(accept):
                result.content_type = "application/pdf"
            elif not (sniff.startswith(b"<!doctype html") or b"<html" in sniff):
                result.error, result.detail = "not-html", "no content type and no HTML"
                return
            else:
                result.content_type = "text/html"
        textual = accept is not None and result.content_type not in PDF_TYPES  # PDF: binary
        if textual and not has_bom(result.body) and looks_binary(result.body):
            result.error, result.detail = "binary", "binary content served as text"
            result.body = b""
