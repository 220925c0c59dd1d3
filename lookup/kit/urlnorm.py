"""URL normalisation: every spelling of one page becomes one key.

The steps follow the design text:

- resolve relative links against the page's URL;
- lowercase the scheme and host (IDNA-encode non-ASCII hosts), drop user info and
  the default port (80 for http, 443 for https);
- remove ``.`` and ``..`` path segments (RFC 3986 §5.2.4), and path parameters that
  carry a session (``;jsessionid=…``);
- normalise percent-encoding: decode unreserved characters, upper-case the hex of
  everything else, encode what may not appear raw;
- drop the ``#fragment`` — it never reaches the server;
- drop known tracking and session parameters and sort the rest, keeping blank ones.

https://Example.IN:443/food/../menu?utm_source=x&b=2&a=1#top  →  https://example.in/menu?a=1&b=2

Query encoding matches ``w3lib.url.canonicalize_url`` (space as ``+``, ``a=`` for a
blank value), so the two agree on every URL without default ports, dot segments
beyond the root, or tracking parameters.
"""

from __future__ import annotations

import hashlib
import re
from urllib.parse import parse_qsl, quote_plus, urlencode, urljoin, urlsplit, urlunsplit

__all__ = [
    "SESSION_PARAMS",
    "TRACKING_PARAMS",
    "host_of",
    "normalize_url",
    "remove_dot_segments",
    "url_hash",
]

#: Query parameters that say how a visitor arrived, never what the page is.
TRACKING_PARAMS = frozenset(
    {
        "utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content", "utm_id",
        "gclid", "dclid", "fbclid", "msclkid", "yclid", "igshid", "mc_cid", "mc_eid",
        "_ga", "_gl", "ref_src",
    }
)  # fmt: skip
#: Query and path parameters that carry a visitor's session, never what the page is.
SESSION_PARAMS = frozenset(
    {"sessionid", "session_id", "jsessionid", "phpsessid", "sid", "aspsessionid",
     "cfid", "cftoken", "zenid", "oscsid"}
)  # fmt: skip

_DEFAULT_PORTS = {"http": 80, "https": 443}
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
# Characters allowed raw in a path besides unreserved ones (sub-delims, ":", "@", "/").
_PATH_SAFE = _UNRESERVED | frozenset("!$&'()*+,;=:@/")
_PCT = re.compile(r"%([0-9A-Fa-f]{2})")


def remove_dot_segments(path: str) -> str:
    """RFC 3986 §5.2.4: resolve ``.`` and ``..`` segments; ``/a/b/../c`` → ``/a/c``."""
    out: list[str] = []
    inp = path
    while inp:
        if inp.startswith("../"):
            inp = inp[3:]
        elif inp.startswith("./"):
            inp = inp[2:]
        elif inp.startswith("/./"):
            inp = inp[2:]
        elif inp == "/.":
            inp = "/"
        elif inp.startswith("/../"):
            inp = inp[3:]
            if out:
                out.pop()
        elif inp == "/..":
            inp = "/"
            if out:
                out.pop()
        elif inp in (".", ".."):
            inp = ""
        else:
            start = 1 if inp.startswith("/") else 0
            cut = inp.find("/", start)
            if cut == -1:
                cut = len(inp)
            out.append(inp[:cut])
            inp = inp[cut:]
    return "".join(out)


def _normalize_path_escapes(path: str) -> str:
    """Decode escaped unreserved characters, upper-case the rest, encode raw unsafe ones."""
    out: list[str] = []
    i = 0
    n = len(path)
    while i < n:
        ch = path[i]
        if ch == "%":
            m = _PCT.match(path, i)
            if m:
                decoded = chr(int(m.group(1), 16))
                out.append(decoded if decoded in _UNRESERVED else "%" + m.group(1).upper())
                i += 3
                continue
            out.append("%")  # a stray "%" is left as it is, as browsers and w3lib do
        elif ch in _PATH_SAFE:
            out.append(ch)
        else:
            out.extend(f"%{b:02X}" for b in ch.encode("utf-8"))
        i += 1
    return "".join(out)


def _quote_raw(text: str) -> str:
    """Percent-encode characters that may not appear raw; leave existing escapes alone."""
    return "".join(
        ch if ch in _PATH_SAFE or ch == "%" else "".join(f"%{b:02X}" for b in ch.encode())
        for ch in text
    )


def _strip_session_path_params(path: str) -> str:
    """``/a;jsessionid=XYZ/b`` → ``/a/b``; other path parameters are kept."""
    if ";" not in path:
        return path
    segments = []
    for segment in path.split("/"):
        if ";" in segment:
            head, *params = segment.split(";")
            kept = [p for p in params if p.split("=", 1)[0].lower() not in SESSION_PARAMS]
            segment = ";".join([head, *kept])
        segments.append(segment)
    return "/".join(segments)


def _normalize_host(host: str) -> str:
    host = host.strip().rstrip(".").lower()
    if not host:
        raise ValueError("empty host")
    if host.isascii():
        return host
    return host.encode("idna").decode("ascii")


def normalize_url(url: str, base: str | None = None, *, keep_params: bool = False) -> str | None:
    """The normal form of ``url`` (resolved against ``base``), or None if not crawlable.

    Only ``http`` and ``https`` URLs with a host are crawlable; ``mailto:``,
    ``javascript:``, ``file:`` and malformed URLs give None. ``keep_params`` keeps
    tracking and session parameters (for the tests that compare with w3lib).
    """
    url = url.strip()
    if not url and base is None:
        return None
    try:
        if base is not None:
            url = urljoin(base, url)
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in _DEFAULT_PORTS:
            return None
        if not parts.hostname:
            return None
        host = _normalize_host(parts.hostname)
        port = parts.port
    except (ValueError, UnicodeError):
        return None
    netloc = host if ":" not in host else f"[{host}]"
    if port is not None and port != _DEFAULT_PORTS[scheme]:
        netloc = f"{netloc}:{port}"

    path = parts.path or "/"
    if not keep_params:
        path = _strip_session_path_params(path)
    # The last segment's parameters stay out of dot-segment removal and escape
    # normalisation (as urlparse and w3lib treat them), and empty ones carry nothing.
    semi = path.find(";", path.rfind("/") + 1)
    params = ""
    if semi != -1:
        path, params = path[:semi], path[semi + 1 :]
    path = remove_dot_segments(_normalize_path_escapes(path)) or "/"
    if params:
        path += ";" + _quote_raw(params)
    if not path.startswith("/"):
        path = "/" + path

    query = ""
    if parts.query:
        # surrogateescape keeps escapes that are not UTF-8 (``%A3``) byte for byte.
        pairs = parse_qsl(parts.query, keep_blank_values=True, errors="surrogateescape")
        if not keep_params:
            pairs = [
                (k, v)
                for k, v in pairs
                if k.lower() not in TRACKING_PARAMS and k.lower() not in SESSION_PARAMS
            ]
        pairs.sort()
        query = urlencode(pairs, quote_via=quote_plus, errors="surrogateescape")
    return urlunsplit((scheme, netloc, path, query, ""))


def host_of(url: str) -> str:
    """The ``host[:port]`` authority of a normalised URL — the unit of politeness."""
    return urlsplit(url).netloc


def url_hash(url: str) -> str:
    """A 16-hex-digit key for a normalised URL (the event's ``urlHash``)."""
    return hashlib.sha256(url.encode("utf-8")).hexdigest()[:16]
