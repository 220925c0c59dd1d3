"""Cached pages: the stored copy of a crawled page, as a browser on this machine can open it.

A search engine's "cached" link shows the page as its crawler fetched it, from its own
store, because the original may have changed or — here — cannot be reached at all: the
sandbox web's ``*.sandbox.test`` names resolve only inside the crawler (there is no DNS
for them). :class:`StoredPages` reads the crawl's WARC files (the crawler's *files*,
never its code): every ``response`` record by its target URI, the newest copy winning,
``revisit`` records (exact duplicates) followed to the copy they repeat, and ``resource``
records (a page as the crawler's browser rendered it, written after its response).

:func:`render_copy` turns a stored page into a self-contained HTML document that is safe
to serve from the API's origin. It is rebuilt from the parsed page rather than passed
through: only an allow-list of structural elements is kept, with no attributes except
a link's address, all text escaped — so no script, handler, style, frame, form or
``javascript:`` URL survives — and the response carries a Content-Security-Policy that
forbids scripts anyway. Links are rewritten to the stored copy of their target when the
crawl holds one, and marked otherwise (*only inside the sandbox web*, or *outside*).
A banner on top says what the page is, which URL it copies and when it was fetched.
"""

from __future__ import annotations

import contextlib
import html
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urljoin, urlsplit

from selectolax.lexbor import LexborHTMLParser, LexborNode
from warcio.archiveiterator import ArchiveIterator

from lookup.errors import InvalidInput, NotFound
from lookup.kit.crawlevents import SERVER_NOT_MODIFIED
from lookup.kit.htmlcharset import decode_html
from lookup.kit.pdftext import is_pdf
from lookup.kit.urlnorm import normalize_url
from lookup.search.extract import extract_pdf

__all__ = [
    "CACHED_PATH",
    "CSP",
    "CachedPages",
    "SANDBOX_SUFFIX",
    "StoredCopy",
    "StoredPages",
    "cached_link",
    "render_copy",
]

#: Where the API serves a cached page (``?url=…``, optionally ``&crawl=NAME``).
CACHED_PATH = "/search/cached"
#: The sandbox web's names: they resolve only inside the crawler.
SANDBOX_SUFFIX = ".sandbox.test"
#: No script runs in a cached page, whatever slipped through; no request leaves it.
CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; base-uri 'none'; "
    "form-action 'none'; sandbox allow-popups allow-top-navigation-by-user-activation"
)
#: Elements kept (without attributes); anything else not dropped is unwrapped.
KEEP = frozenset(
    "p h1 h2 h3 h4 h5 h6 ul ol li dl dt dd pre code kbd samp var tt blockquote q cite "
    "em strong b i u s small sub sup mark abbr br hr table thead tbody tfoot tr th td "
    "caption main article section header footer nav aside figure figcaption div span "
    "address time del ins".split()
)
#: Elements dropped with everything inside them.
DROP = frozenset(
    "script style noscript template iframe frame frameset object embed applet svg math "
    "canvas audio video source track link meta base head form input button select "
    "textarea option datalist dialog portal".split()
)
VOID = frozenset({"br", "hr"})
#: Deeper nesting than this is flattened to its text (a hostile page cannot blow the stack).
MAX_DEPTH = 120
#: The most of a stored page rendered (the crawler stores up to 10 MB).
MAX_CHARS = 2_000_000


@dataclass(frozen=True)
class StoredCopy:
    """Where one stored copy of a URL is: its WARC record and when it was fetched."""

    url: str
    fetched_at: str  # the record's WARC-Date, ISO 8601 UTC
    path: Path
    offset: int
    kind: str  # "response", or "revisit" for an exact duplicate stored as a pointer
    refers_to: str | None = None  # a revisit's original URL

    @property
    def record(self) -> str:
        """``warc/<file>#<offset>``: the storage key the crawler names it by."""
        return f"{self.path.parent.name}/{self.path.name}#{self.offset}"


class StoredPages:
    """The stored copies in one crawl directory's ``warc/*.warc.gz``, by URL.

    Files are scanned once and again only when they change (a running crawl appends);
    a record still being written at the end of a file is left for the next scan.
    """

    def __init__(self, crawl_dir: str | Path) -> None:
        self.crawl_dir = Path(crawl_dir)
        self._files: dict[Path, tuple[int, int]] = {}
        self._by_file: dict[Path, dict[str, StoredCopy]] = {}
        self._urls: dict[str, StoredCopy] = {}
        self._lock = threading.Lock()

    def _scan(self, path: Path) -> dict[str, StoredCopy]:
        found: dict[str, StoredCopy] = {}
        with path.open("rb") as f:
            it = ArchiveIterator(f)
            with contextlib.suppress(Exception):  # a torn tail: keep what was read
                for record in it:
                    if record.rec_type not in ("response", "revisit", "resource"):
                        continue  # a resource: a page as the browser rendered it
                    if record.rec_headers.get_header("WARC-Profile") == SERVER_NOT_MODIFIED:
                        continue  # a 304: the URL's last stored copy still stands
                    uri = record.rec_headers.get_header("WARC-Target-URI") or ""
                    if not uri:
                        continue
                    found[uri] = StoredCopy(
                        url=uri,
                        fetched_at=record.rec_headers.get_header("WARC-Date") or "",
                        path=path,
                        offset=it.get_record_offset(),
                        kind=record.rec_type,
                        refers_to=record.rec_headers.get_header("WARC-Refers-To-Target-URI"),
                    )
        return found

    def refresh(self) -> None:
        """Rescan the WARC files that changed since the last look."""
        with self._lock:
            changed = False
            files = sorted((self.crawl_dir / "warc").glob("*.warc.gz"))
            for path in files:
                try:
                    st = path.stat()
                except OSError:
                    continue
                stamp = (st.st_size, st.st_mtime_ns)
                if self._files.get(path) != stamp:
                    self._by_file[path] = self._scan(path)
                    self._files[path] = stamp
                    changed = True
            if changed or len(self._by_file) != len(files):
                urls: dict[str, StoredCopy] = {}
                for path in files:  # later files (later runs) win
                    for uri, copy in self._by_file.get(path, {}).items():
                        urls[uri] = copy
                        norm = normalize_url(uri)
                        if norm and norm != uri:
                            urls.setdefault(norm, copy)
                self._urls = urls

    def find(self, url: str) -> StoredCopy | None:
        """The newest stored copy of ``url`` (any spelling that normalises to it)."""
        self.refresh()
        copy = self._urls.get(url)
        if copy is None:
            norm = normalize_url(url)
            copy = self._urls.get(norm) if norm else None
        return copy

    def holds(self, url: str) -> bool:
        """Whether the crawl stored a copy of ``url`` (no rescan: for links on one page)."""
        if url in self._urls:
            return True
        norm = normalize_url(url)
        return bool(norm) and norm in self._urls

    def load(self, copy: StoredCopy) -> tuple[bytes, str | None, int | None, StoredCopy]:
        """``(body, content type, HTTP status, the copy the body came from)``.

        A revisit carries no payload: its original's is returned (it was identical).
        """
        source = copy
        if copy.kind == "revisit":
            original = self._urls.get(copy.refers_to or "")
            if original is None or original.kind != "response":
                raise LookupError(f"the original of {copy.url} is not stored")
            source = original
        with source.path.open("rb") as f:
            f.seek(source.offset)
            for record in ArchiveIterator(f):
                headers = record.http_headers
                if headers is None:  # a rendered page (resource): the DOM the browser made
                    ctype = record.rec_headers.get_header("Content-Type")
                    return record.content_stream().read(), ctype, 200, source
                ctype = headers.get_header("Content-Type")
                status = int(headers.get_statuscode())
                return record.content_stream().read(), ctype, status, source
        raise LookupError(f"no record at {source.record}")


def cached_link(url: str, crawl: str | None = None) -> str:
    """The API path of the cached view of ``url`` (relative to the API's origin)."""
    out = f"{CACHED_PATH}?url={quote(url, safe='')}"
    return out + (f"&crawl={quote(crawl, safe='')}" if crawl else "")


# ------------------------------------------------------------------------------ rendering

esc = html.escape


def _where(url: str) -> str:
    try:
        host = (urlsplit(url).hostname or "").lower()
    except ValueError:
        return "outside"
    if host.endswith(SANDBOX_SUFFIX):
        return "sandbox"
    return "outside"


class _Renderer:
    """Rebuilds a parsed page from an allow-list, rewriting or marking every link."""

    def __init__(self, base: str, link: Callable[[str], str | None]) -> None:
        self.base = base
        self.link = link
        self.out: list[str] = []
        self.links = {"cached": 0, "sandbox": 0, "outside": 0, "removed": 0}

    def node(self, n: LexborNode, depth: int) -> None:
        tag = n.tag or ""
        if tag == "-text":
            self.out.append(esc(n.text_content or ""))
            return
        if tag.startswith("-") or tag in DROP:  # comments, doctype, scripts and the rest
            return
        if depth > MAX_DEPTH:
            self.out.append(esc(n.text(deep=True)))
            return
        if tag == "a":
            self.anchor(n, depth)
            return
        if tag == "img":
            alt = (n.attributes.get("alt") or "").strip()
            if alt:
                self.out.append(f'<span class="img">[image: {esc(alt)}]</span>')
            return
        keep = tag in KEEP
        if keep:
            self.out.append(f"<{tag}>")
        if tag not in VOID:
            self.children(n, depth)
            if keep:
                self.out.append(f"</{tag}>")

    def children(self, n: LexborNode, depth: int) -> None:
        for child in n.iter(include_text=True):
            self.node(child, depth + 1)

    def anchor(self, n: LexborNode, depth: int) -> None:
        href = (n.attributes.get("href") or "").strip()
        if not href or href.startswith("#"):
            self.children(n, depth)
            return
        try:
            target = urljoin(self.base, href)
            scheme = urlsplit(target).scheme.lower()
        except ValueError:  # not a URL at all (a malformed page's "http://[::1")
            scheme = ""
        if scheme not in ("http", "https"):
            self.links["removed"] += 1
            self.out.append('<span class="link removed" title="link removed">')
            self.children(n, depth)
            self.out.append("</span>")
            return
        cached = self.link(target)
        if cached is not None:
            self.links["cached"] += 1
            self.out.append(f'<a class="cached" href="{esc(cached)}" title="{esc(target)}">')
            self.children(n, depth)
            self.out.append("</a>")
            return
        where = _where(target)
        self.links[where] += 1
        note = (
            "exists only inside the sandbox web; not stored by this crawl"
            if where == "sandbox"
            else "outside the sandbox web; the workbench never leaves this machine"
        )
        self.out.append(f'<span class="link {where}" title="{esc(target)} — {esc(note)}">')
        self.children(n, depth)
        mark = "sandbox only" if where == "sandbox" else "outside"
        self.out.append(f'</span><sup class="mark">{mark}</sup>')


STYLE = """
body{font:16px/1.5 system-ui,sans-serif;margin:0;color:#1f2328}
.banner{background:#fff8c5;border-bottom:1px solid #d4a72c;padding:12px 20px;font-size:14px}
.banner code{background:#fff3;word-break:break-all}
.page{padding:8px 20px;max-width:60rem}
a.cached{color:#0969da}
.link{color:#57606a;border-bottom:1px dotted #8c959f}
.mark{color:#8c959f;font-size:11px;margin-left:2px}
pre{white-space:pre-wrap}
"""


def render_copy(
    copy: StoredCopy,
    body: bytes,
    content_type: str | None,
    status: int | None,
    link: Callable[[str], str | None],
    *,
    source: StoredCopy | None = None,
) -> str:
    """The cached view of a stored page: a banner, then the page rebuilt safely.

    ``link(url)`` names the cached view of a URL the crawl holds, or None (the link is
    marked instead). ``source`` is the copy the body came from when ``copy`` is a revisit.
    """
    ctype = (content_type or "").split(";")[0].strip().lower()
    title = copy.url
    note = ""
    if ctype in ("text/html", "application/xhtml+xml", ""):
        parser = LexborHTMLParser(decode_html(body, content_type).text[:MAX_CHARS])
        found = parser.css_first("title")
        if found is not None and found.text(strip=True):
            title = found.text(strip=True)
        renderer = _Renderer(copy.url, link)
        if parser.body is not None:
            renderer.children(parser.body, 0)
        content = "".join(renderer.out)
        counts = renderer.links
        note = (
            f"Links: {counts['cached']} to stored copies · {counts['sandbox']} only inside "
            f"the sandbox web (not stored) · {counts['outside']} outside · "
            f"{counts['removed']} removed (not http)."
        )
    elif ctype.startswith("text/"):
        content = f"<pre>{esc(decode_html(body, content_type).text[:MAX_CHARS])}</pre>"
    elif (pdf := extract_pdf(body) if is_pdf(body, content_type) else None) is not None:
        title = pdf.title or title  # a PDF: its text as the index read it
        note = "A PDF document: its text as extracted for the index, without layout."
        content = f"<pre>{esc(pdf.text[:MAX_CHARS])}</pre>"
    else:
        content = (
            f"<p>The stored answer is <code>{esc(ctype)}</code>, {len(body):,} bytes: "
            "not text, so it is not shown.</p>"
        )
    fetched = copy.fetched_at.replace("T", " ").replace("Z", " UTC")
    where = (
        "Its address is a <b>sandbox web</b> name (<code>*.sandbox.test</code>): it exists "
        "only inside the sandbox, where the crawler resolves it, so a normal browser cannot "
        "open it — this stored copy is the way to see it."
        if _where(copy.url) == "sandbox"
        else "The original is outside the sandbox web."
    )
    dup = ""
    if source is not None and source.url != copy.url:
        dup = (
            f"<br>The crawler stored this page as an <b>exact duplicate</b> of "
            f"<code>{esc(source.url)}</code> (fetched {esc(source.fetched_at)}); "
            "that copy's content is shown."
        )
    status_text = f" · HTTP {status}" if status else ""
    banner = (
        '<div class="banner" id="cached-banner">'
        f"<b>Stored copy</b> of <code>{esc(copy.url)}</code><br>"
        f'Fetched <time id="fetched-at" datetime="{esc(copy.fetched_at)}">{esc(fetched)}'
        f"</time>{esc(status_text)} · WARC record <code>{esc(copy.record)}</code>. "
        f"{where}{dup}<br>Scripts, styles, forms and images are removed; links lead to "
        f"the stored copies of their pages where this crawl has one. {esc(note)}</div>"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>Stored copy: {esc(title)}</title><style>{STYLE}</style></head>\n<body>"
        f'{banner}\n<div class="page">{content}</div>\n</body></html>\n'
    )


_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")


def crawl_name_ok(name: str) -> bool:
    """A crawl directory's name as the ``crawl`` parameter may give it (no paths)."""
    return bool(_NAME.match(name)) and ".." not in name


class CachedPages:
    """The cached-page endpoint's core: find a URL's stored copy in a crawl and render it.

    ``crawl=NAME`` picks a crawl directory under ``crawls_root`` (the crawler page's
    crawls); without it, the crawl the live search index was built from
    (``default_dir()``, which raises ``NotBuilt`` when there is no index).
    """

    def __init__(self, crawls_root: Path, default_dir: Callable[[], Path]) -> None:
        self.crawls_root = Path(crawls_root)
        self.default_dir = default_dir
        self._stores: dict[Path, StoredPages] = {}
        self._lock = threading.Lock()

    def _store(self, crawl_dir: Path) -> StoredPages:
        with self._lock:
            store = self._stores.get(crawl_dir)
            if store is None:
                if len(self._stores) >= 16:  # a handful of crawls are looked at; forget the rest
                    self._stores.pop(next(iter(self._stores)))
                store = self._stores[crawl_dir] = StoredPages(crawl_dir)
            return store

    def crawl_dir(self, crawl: str | None) -> Path:
        if not crawl:
            return Path(self.default_dir())
        if not crawl_name_ok(crawl):
            raise InvalidInput(f"not a crawl name: {crawl!r}", code="BAD_CRAWL")
        path = self.crawls_root / crawl
        if not (path / "warc").is_dir():
            raise NotFound(f"no crawl named {crawl!r} in {self.crawls_root}", code="NO_SUCH_CRAWL")
        return path

    def page(self, url: str, crawl: str | None = None) -> str:
        """The cached view of ``url`` as HTML; ``NotFound`` when the crawl stored no copy."""
        if not url.strip():
            raise InvalidInput("give the page's address: ?url=http://…", code="MISSING_URL")
        store = self._store(self.crawl_dir(crawl))
        copy = store.find(url)
        if copy is None:
            raise NotFound(f"this crawl stored no copy of {url}", code="NOT_CACHED")
        try:
            body, ctype, status, source = store.load(copy)
        except (OSError, LookupError, ValueError) as exc:
            raise NotFound(
                f"the stored copy of {url} cannot be read: {exc}", code="NOT_CACHED"
            ) from None
        return render_copy(
            copy,
            body,
            ctype,
            status,
            lambda target: cached_link(target, crawl) if store.holds(target) else None,
            source=source,
        )
