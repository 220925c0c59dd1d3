"""Validation of the long URLs people shorten: the synchronous safety check at creation.

:class:`UrlPolicy.check` either returns the URL in a normal form that is safe to put
in a ``Location`` header (ASCII only: Unicode host names become IDNA ``xn--`` labels,
other non-ASCII characters are percent-encoded) or raises :class:`UrlRejected` with
an API error code. Refused:

* anything but ``http`` / ``https`` (``javascript:``, ``data:``, ``file:``, ...);
* more than :data:`MAX_URL_LENGTH` characters, before or after normalising;
* control characters, whitespace and invisible formatting characters anywhere —
  CR/LF would be header injection, bidi overrides hide the real destination;
* credentials (``user:pass@host``), a favourite trick to disguise the real host;
* host names that are not valid DNS names or IP addresses, and numeric hosts a
  browser would read as an IPv4 address in another spelling (``0x7f.1``);
* links to this server itself (``SELF_REFERENCE``: no chains, no loops);
* destinations that are not public addresses (``PRIVATE_ADDRESS``): loopback, private,
  link-local (the cloud metadata address 169.254.169.254), carrier-grade NAT, multicast,
  reserved, documentation, benchmarking — every range the IANA special-purpose registries
  mark not globally reachable (:class:`AddressPolicy`), in IPv4 and IPv6, IPv4 embedded in
  IPv6 (mapped, NAT64, 6to4) included, and in every spelling a browser reads as an IPv4
  address (``2130706433``, ``0x7f.1``, ``0177.0.0.1``, ``127.1``); ``localhost`` and its
  subdomains are loopback (RFC 6761). Names are re-resolved for life by the scanner;
  ``allowed_ranges`` (``LOOKUP_SHORTENER_ALLOWED_RANGES``, empty by default) opens named
  networks, for a local demo or a test that shortens its own loopback pages;
* hosts on the domain blocklist, including their subdomains (``BLOCKED_DOMAIN``).
"""

from __future__ import annotations

import hashlib
import ipaddress
import logging
import os
import re
import socket
import threading
import time
import unicodedata
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import idna

from lookup.shortener.blocklist import BlocklistSource
from lookup.shortener.blocklist.file import FileBlocklistSource

log = logging.getLogger("lookup.shortener.urls")

MAX_URL_LENGTH = 2048
ALLOWED_SCHEMES = ("http", "https")
_DEFAULT_PORTS = {"http": 80, "https": 443}

#: Always blocked: the industry's published test feeds for "malicious" sites, so the
#: blocking path can be exercised without touching a real bad domain.
DEFAULT_BLOCKED_DOMAINS: frozenset[str] = frozenset(
    {
        "malware.testing.google.test",
        "testsafebrowsing.appspot.com",
        "wicar.org",
        "malware.wicar.org",
        "ianfette.org",
        "amtso.org",
        "phishing.example",
        "malware.example",
    }
)

#: What a normalised URL keeps unencoded: printable ASCII but the backslash.
_URL_SAFE = "".join(chr(c) for c in range(0x21, 0x7F) if chr(c) != "\\")
_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")
_NUMERIC_LABEL = re.compile(r"(?:0x[0-9a-f]*|[0-9]+)")
_LOCAL_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0", "::"})
_BAD_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zs", "Zl", "Zp"})


def location_form(url: str) -> str:
    """``url`` as it may go into a ``Location`` header: ASCII, no raw backslash.

    A browser reads a backslash in an http(s) path as "/" (WHATWG URL), so the path keeps
    what it would visit; in the query and the fragment a backslash is data, percent-encoded.
    Other characters outside printable ASCII are percent-encoded as UTF-8.
    """
    parts = urlsplit(url)
    return urlunsplit(
        (
            parts.scheme,
            parts.netloc,
            quote(parts.path.replace("\\", "/"), safe=_URL_SAFE),
            quote(parts.query, safe=_URL_SAFE),
            quote(parts.fragment, safe=_URL_SAFE),
        )
    )


def forward_onto(long_url: str, query: bytes, extra_path: str | None = None) -> str:
    """``long_url`` with a visitor's query string merged in and ``extra_path`` appended to
    its path, in :func:`location_form`.

    The merge is Shlink's and Dub's: the destination's parameters stay in their order,
    except those the visitor also sent, whose values the visitor's replace; the visitor's
    follow in theirs. Everything is re-encoded (``+`` for spaces, UTF-8 percent escapes),
    so no byte of the visitor's reaches the header raw. The host never changes: the extra
    path is appended under the destination's own path.
    """
    parts = urlsplit(long_url)
    path = parts.path
    if extra_path:
        path = path.rstrip("/") + "/" + extra_path
    pairs = parts.query
    if query:
        visitor = parse_qsl(query.decode("utf-8", "replace"), keep_blank_values=True)
        sent = {name for name, _ in visitor}
        own = parse_qsl(parts.query, keep_blank_values=True)
        pairs = urlencode([(n, v) for n, v in own if n not in sent] + visitor)
    return location_form(urlunsplit((parts.scheme, parts.netloc, path, pairs, parts.fragment)))


class UrlRejected(ValueError):
    """A long URL the service refuses; ``code`` is the API error code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class OtherSpelling(UrlRejected):
    """A numeric host a browser reads as the IPv4 ``address``, spelled otherwise."""

    def __init__(self, host: str, address: ipaddress.IPv4Address) -> None:
        super().__init__(
            "INVALID_URL", f"{host!r} is the IPv4 address {address} in another spelling"
        )
        self.address = address


def _invalid(message: str) -> UrlRejected:
    return UrlRejected("INVALID_URL", message)


def _browser_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """The IPv4 address a browser reads in ``host`` (WHATWG URL's IPv4 parser: one to four
    parts, each decimal, ``0``-prefixed octal or ``0x`` hex, the last filling the rest)."""
    parts = host.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    numbers = []
    for part in parts:
        if part[:2] == "0x":
            digits, base = part[2:], 16
        elif len(part) > 1 and part[0] == "0":
            digits, base = part[1:], 8
        else:
            digits, base = part, 10
        try:
            numbers.append(int(digits, base) if digits else 0)
        except ValueError:
            return None
    *head, last = numbers
    if any(n > 255 for n in head) or last >= 256 ** (5 - len(numbers)):
        return None
    value = last
    for i, n in enumerate(head):
        value += n << (8 * (3 - i))
    return ipaddress.IPv4Address(value)


def _has_forbidden_chars(text: str) -> bool:
    for ch in text:
        o = ord(ch)
        if o < 0x80:
            if o <= 0x20 or o == 0x7F:
                return True
        elif unicodedata.category(ch) in _BAD_CATEGORIES:
            return True
    return False


def normalize_host(host: str) -> str:
    """A host name or IP literal in canonical ASCII form; raises :class:`UrlRejected`.

    Unicode names go through IDNA (UTS 46 mapping) to ``xn--`` labels; a trailing dot is
    dropped; a host whose last label is numeric must be a dotted-quad IPv4 address.
    """
    if not host:
        raise _invalid("the URL has no host")
    if ":" in host:  # urlsplit has already removed the brackets of an IPv6 literal
        if "%" in host:
            raise _invalid("IPv6 zone identifiers are not allowed")
        try:
            return str(ipaddress.IPv6Address(host))
        except ValueError:
            raise _invalid(f"{host!r} is not a valid IPv6 address") from None
    if not host.isascii():
        try:
            host = idna.encode(host, uts46=True).decode("ascii")
        except (idna.IDNAError, UnicodeError, ValueError):
            raise _invalid("the host name is not a valid internationalised domain name") from None
    host = host.lower()
    if host.endswith("."):
        host = host[:-1]
    if not host or len(host) > 253:
        raise _invalid("the host name is empty or longer than 253 characters")
    labels = host.split(".")
    if _NUMERIC_LABEL.fullmatch(labels[-1]):
        try:
            return str(ipaddress.IPv4Address(host))
        except ValueError:
            address = _browser_ipv4(host)
            if address is not None:
                raise OtherSpelling(host, address) from None
            raise _invalid(f"{host!r} is neither a domain name nor a dotted IPv4 address") from None
    for label in labels:
        if not _LABEL.fullmatch(label):
            raise _invalid(f"{host!r} is not a valid host name")
    return host


def _is_loopback(host: str) -> bool:
    if host in _LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
#: NAT64's well-known prefix (RFC 6052): the last 32 bits are an IPv4 address.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


def _category(ip: IpAddress) -> str | None:
    """Why ``ip`` is no public destination (None when it is one)."""
    if ip.is_loopback:
        return "loopback"
    if ip.is_link_local:
        return "link-local (cloud metadata lives there)"
    if ip.is_multicast:
        return "multicast"
    if ip.is_unspecified:
        return "unspecified"
    if isinstance(ip, ipaddress.IPv4Address) and ip in _CGNAT:
        return "carrier-grade NAT"
    if ip.is_reserved:
        return "reserved"
    if ip.is_private:
        return "private"
    if not ip.is_global:
        return "not globally reachable"
    return None


_CGNAT = ipaddress.IPv4Network("100.64.0.0/10")


def _embedded_ipv4(ip: IpAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, NAT64, 6to4), if any."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return None
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return ip.sixtofour


def system_resolver(host: str) -> list[str]:
    """The addresses ``host`` resolves to now (the system resolver); [] when it does not."""
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return []
    return sorted({str(info[4][0]).split("%", 1)[0] for info in infos})


class AddressPolicy:
    """Which IP addresses a short link may lead to: public ones, plus ``allowed`` networks.

    Refused: whatever Python's :mod:`ipaddress` (the IANA special-purpose address
    registries) says is not globally reachable, and multicast, also when an IPv6 address
    embeds such an IPv4 address. ``allowed`` names CIDR networks let through anyway
    (``127.0.0.0/8`` for a demo on loopback); empty by default.
    """

    def __init__(self, allowed: Iterable[str] = ()) -> None:
        nets = []
        for text in allowed:
            text = text.strip()
            if text:
                try:
                    nets.append(ipaddress.ip_network(text, strict=False))
                except ValueError:
                    raise ValueError(f"{text!r} is not an IP network such as 127.0.0.0/8") from None
        self.allowed = tuple(nets)

    def _allowed(self, ip: IpAddress) -> bool:
        return any(ip.version == net.version and ip in net for net in self.allowed)

    def refusal(self, address: str | IpAddress) -> str | None:
        """Why ``address`` is refused (its range, in words), or None when it may be used."""
        ip = ipaddress.ip_address(address) if isinstance(address, str) else address
        if self._allowed(ip):
            return None
        inner = _embedded_ipv4(ip)
        if inner is None:
            return _category(ip)
        # An IPv6 address that carries an IPv4 one leads where the IPv4 one does.
        if self._allowed(inner):
            return None
        why = _category(inner)
        return None if why is None else f"{why}, as {inner} inside IPv6"

    def refusal_of_host(self, host: str) -> str | None:
        """:meth:`refusal` for a normalised host: IP literals and ``localhost`` names; other
        names are judged by what they resolve to (:meth:`refusal_of_answers`)."""
        if host == "localhost" or host.endswith(".localhost"):
            loopback: list[IpAddress] = [
                ipaddress.IPv4Address("127.0.0.1"),
                ipaddress.IPv6Address("::1"),
            ]
            if any(self._allowed(ip) for ip in loopback):
                return None
            return "loopback (localhost)"
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            return None
        return self.refusal(ip)

    def refusal_of_answers(self, host: str, answers: Iterable[str]) -> str | None:
        """The first refused address among ``host``'s DNS answers, in words; else None."""
        for answer in answers:
            try:
                why = self.refusal(answer)
            except ValueError:
                continue
            if why is not None:
                return f"{host} resolves to {answer} ({why})"
        return None


def _private(host: str, why: str) -> UrlRejected:
    return UrlRejected(
        "PRIVATE_ADDRESS", f"{host} is not a public destination: {why} addresses are refused"
    )


class Blocklist:
    """Blocked domains: a built-in list plus a :class:`~lookup.shortener.blocklist.
    BlocklistSource` (a text file by default — one domain per line, ``#`` comments — or a
    table the fleet shares).

    The source's stamp (a file's mtime, a revision counter) is checked at most every
    ``recheck_s`` seconds and the domains re-read when it moved, so an edit — by hand, or
    through any process of a fleet — takes effect without a restart. A domain blocks
    itself and all of its subdomains. ``version`` changes whenever the effective list
    does (the scanner rescans links when it sees a new version). A source that cannot be
    read keeps the last list it gave (logged), never an empty one.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        source: BlocklistSource | None = None,
        builtin: Iterable[str] = DEFAULT_BLOCKED_DOMAINS,
        recheck_s: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = Path(path) if path is not None else None
        if source is None and self.path is not None:
            source = FileBlocklistSource(self.path)
        if isinstance(source, FileBlocklistSource):
            self.path = source.path  # the file people may edit by hand
        self.source = source
        self._builtin = frozenset(self._clean(d) for d in builtin) - {""}
        self._recheck_s = recheck_s
        self._clock = clock
        self._lock = threading.Lock()
        self._stamp: object = object()  # never equal to a real stamp: the first read loads
        self._checked_at = -float("inf")
        self._domains: frozenset[str] = self._builtin
        self.version = self._digest(self._domains)
        self.read_errors = 0
        self._reload(force=True)

    @staticmethod
    def _clean(line: str) -> str:
        text = line.split("#", 1)[0].strip().lower().rstrip(".")
        if not text:
            return ""
        try:
            return normalize_host(text)
        except UrlRejected:
            return ""

    @staticmethod
    def _digest(domains: frozenset[str]) -> str:
        return hashlib.sha256("\n".join(sorted(domains)).encode()).hexdigest()[:16]

    def _reload(self, force: bool = False) -> None:
        now = self._clock()
        if not force and now - self._checked_at < self._recheck_s:
            return
        with self._lock:
            self._checked_at = now
            if self.source is None:
                return
            try:
                stamp = self.source.stamp()
                if stamp == self._stamp and not force:
                    return
                stored = self.source.entries(self._clean)
            except Exception as exc:  # a source that is down keeps the last list
                self.read_errors += 1
                log.warning("the blocklist cannot be read (%s); keeping the last one", exc)
                return
            self._stamp = stamp
            self._domains = self._builtin | stored
            self.version = self._digest(self._domains)

    def domains(self) -> frozenset[str]:
        """The effective blocked domains right now."""
        self._reload()
        return self._domains

    def match(self, host: str) -> str | None:
        """The blocklist entry that blocks ``host`` (itself or a parent domain), else None."""
        domains = self.domains()
        if host in domains:
            return host
        parts = host.split(".")
        for i in range(1, len(parts)):
            parent = ".".join(parts[i:])
            if parent in domains:
                return parent
        return None

    def edit(self, add: Iterable[str], remove: Iterable[str]) -> dict[str, Any]:
        """Add and remove domains in the source and reload at once (this process; the
        others of a fleet at their next check).

        Each domain is normalised like a URL host; one that is not valid raises
        :class:`UrlRejected`. Built-in entries cannot be removed."""
        if self.source is None:
            raise ValueError("this blocklist has no source to edit")
        wanted_add = [normalize_host(d.strip().lower().rstrip(".")) for d in add]
        wanted_remove = {normalize_host(d.strip().lower().rstrip(".")) for d in remove}
        added, removed = self.source.edit(wanted_add, wanted_remove, self._clean)
        self._reload(force=True)  # take effect now, not at the next check
        return {
            "added": added,
            "removed": removed,
            "notRemovable": sorted(wanted_remove & self._builtin),
            "version": self.version,
            "domains": len(self._domains),
        }

    def describe(self) -> str:
        """Where the edited part of the list lives (``builtin`` without a source)."""
        return "builtin" if self.source is None else self.source.describe()

    def close(self) -> None:
        """Let go of the source's connections (the next read reopens)."""
        if self.source is not None:
            self.source.close()

    def write_template(self) -> None:
        """Create the blocklist file with an explanatory header if it does not exist."""
        if isinstance(self.source, FileBlocklistSource):
            self.source.write_template()
            self._reload(force=True)


class UrlPolicy:
    """The creation-time check for long URLs (see the module docstring for the rules)."""

    def __init__(
        self,
        own_origins: Iterable[str] = (),
        blocklist: Blocklist | None = None,
        *,
        max_length: int = MAX_URL_LENGTH,
        addresses: AddressPolicy | None = None,
    ) -> None:
        self.max_length = max_length
        self.blocklist = blocklist or Blocklist()
        self.addresses = addresses or AddressPolicy()
        self._own: set[tuple[str, int]] = set()
        for origin in own_origins:
            self.add_own_origin(origin)

    def add_own_origin(self, origin: str) -> None:
        """Treat ``origin`` (``http://127.0.0.1:8000``) as this server: links to it are refused."""
        parts = urlsplit(origin)
        scheme = (parts.scheme or "http").lower()
        host = normalize_host(parts.hostname or "")
        port = parts.port or _DEFAULT_PORTS.get(scheme, 80)
        self._own.add((host, port))

    def is_own(self, host: str, port: int) -> bool:
        """Whether ``host:port`` is this server (loopback spellings of a local origin included)."""
        if (host, port) in self._own:
            return True
        for own_host, own_port in self._own:
            if own_port != port:
                continue
            if own_host in _LOCAL_NAMES and host in _LOCAL_NAMES:
                return True
            if own_host in ("0.0.0.0", "::") and _is_loopback(host):
                return True
        return False

    def check(self, raw: object) -> str:
        """The normalised URL, or :class:`UrlRejected` explaining why it is refused."""
        if not isinstance(raw, str):
            raise _invalid("longUrl must be a string")
        if not raw:
            raise _invalid("longUrl is empty")
        if len(raw) > self.max_length:
            raise _invalid(f"longUrl is longer than {self.max_length} characters")
        if _has_forbidden_chars(raw):
            raise _invalid("longUrl contains whitespace, control or invisible characters")
        scheme, sep, _ = raw.partition(":")
        if not sep or scheme.lower() not in ALLOWED_SCHEMES:
            raise _invalid("only http and https URLs can be shortened")
        try:
            parts = urlsplit(raw)
            port = parts.port
        except ValueError as exc:
            raise _invalid(f"longUrl is not a valid URL: {exc}") from None
        scheme = parts.scheme.lower()
        if not raw[len(scheme) + 1 :].startswith("//") or not parts.netloc:
            raise _invalid("the URL must have a host, as in https://example.com/path")
        if "@" in parts.netloc:
            raise _invalid("URLs with a user name or password (user:pass@host) are not allowed")
        if "\\" in parts.netloc:
            raise _invalid("backslashes are not allowed in the host part")
        if port == 0:
            raise _invalid("port 0 is not a valid port")
        try:
            host = normalize_host(parts.hostname or "")
        except OtherSpelling as exc:
            why = self.addresses.refusal(exc.address)
            if why is not None:
                raise _private(f"{parts.hostname} ({exc.address})", why) from None
            raise
        effective_port = port or _DEFAULT_PORTS[scheme]
        if self.is_own(host, effective_port):
            raise UrlRejected(
                "SELF_REFERENCE", "links to this shortener itself are refused (no chains or loops)"
            )
        why = self.addresses.refusal_of_host(host)
        if why is not None:
            raise _private(host, why)
        blocked = self.blocklist.match(host)
        if blocked is not None:
            raise UrlRejected("BLOCKED_DOMAIN", f"links to {blocked} are blocked")
        netloc = f"[{host}]" if ":" in host else host
        if port is not None and port != _DEFAULT_PORTS[scheme]:
            netloc = f"{netloc}:{port}"
        url = location_form(urlunsplit((scheme, netloc, parts.path, parts.query, parts.fragment)))
        if len(url) > self.max_length:
            raise _invalid(f"longUrl is longer than {self.max_length} characters once encoded")
        return url

    def host_of(self, url: str) -> str:
        """The (normalised) host of an already-checked URL."""
        return urlsplit(url).hostname or ""
