"""A small real-text crawl for the search tests, in the crawler's output format.

Pages are built from the Python standard library's own docstrings (real English
prose, shipped with the interpreter); they are written exactly as the crawler
writes them: WARC ``response`` records via warcio plus one ``PageFetched`` line per
page in ``events.jsonl``. ``storageKey`` names the WARC file and the record offset.
"""

from __future__ import annotations

import hashlib
import html
import importlib
import inspect
import io
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

MODULES = [
    "collections",
    "itertools",
    "functools",
    "os",
    "os.path",
    "re",
    "json",
    "pathlib",
    "string",
    "textwrap",
    "datetime",
    "decimal",
    "fractions",
    "statistics",
    "random",
    "math",
    "heapq",
    "bisect",
    "argparse",
    "logging",
    "threading",
    "subprocess",
    "shutil",
    "tempfile",
    "csv",
    "sqlite3",
    "urllib.parse",
    "email.message",
    "typing",
    "dataclasses",
    "enum",
    "asyncio",
    "socket",
    "hashlib",
    "base64",
    "struct",
    "codecs",
    "io",
    "zipfile",
    "tarfile",
    "gzip",
    "pickle",
    "copy",
    "pprint",
    "inspect",
    "ast",
    "tokenize",
    "unittest",
    "difflib",
    "calendar",
    "locale",
    "gettext",
    "queue",
    "sched",
    "selectors",
    "contextlib",
    "abc",
    "numbers",
    "operator",
    "weakref",
    "types",
    "zlib",
    "configparser",
    "fnmatch",
    "glob",
    "http.client",
    "http.server",
    "xml.dom.minidom",
    "wave",
    "uuid",
    "ipaddress",
]

BASE_TIME = datetime(2026, 3, 1, tzinfo=UTC).timestamp()


@dataclass
class Page:
    """One page of the test web."""

    url: str
    title: str
    text: str
    links: list[str] = field(default_factory=list)

    def html(self) -> str:
        """The page as a real HTML document with boilerplate around the content."""
        links = "".join(
            f'<li><a href="{html.escape(u)}">{html.escape(u)}</a></li>' for u in self.links
        )
        paras = "".join(f"<p>{html.escape(p)}</p>" for p in self.text.split("\n\n") if p.strip())
        return (
            "<!doctype html><html><head><meta charset='utf-8'>"
            f"<title>{html.escape(self.title)}</title><style>p {{color: #333}}</style>"
            "<script>var tracking = 'should never be indexed';</script></head>"
            "<body><nav>Home | Library | Modules</nav>"
            f"<main><h1>{html.escape(self.title)}</h1>{paras}<ul>{links}</ul></main>"
            "<footer>Copyright notice boilerplate</footer></body></html>"
        )


def stdlib_pages(limit: int = 400, hosts: int = 5) -> list[Page]:
    """Pages made of stdlib docstrings, spread over several hosts, linking to siblings."""
    pages: list[Page] = []
    seen: set[str] = set()
    for mod_name in MODULES:
        try:
            mod = importlib.import_module(mod_name)
        except ImportError:
            continue
        members = sorted(vars(mod).items())
        for name, obj in members:
            if name.startswith("_") or inspect.ismodule(obj):
                continue
            doc = inspect.getdoc(obj)
            if not doc or len(doc) < 120 or doc in seen:
                continue
            seen.add(doc)
            host = f"docs{len(pages) % hosts}.test"
            url = f"http://{host}/{mod_name}/{name}.html"
            pages.append(Page(url, f"{mod_name}.{name}", doc))
            if len(pages) >= limit:
                break
        if len(pages) >= limit:
            break
    # a link graph with real skew: every page links to the first page of its module
    # and to its neighbours; a few hub pages collect many in-links
    for i, p in enumerate(pages):
        targets = {pages[(i + 1) % len(pages)].url, pages[(i * 7) % len(pages)].url}
        if i % 3 == 0:
            targets.add(pages[i % 10].url)
        targets.discard(p.url)
        p.links = sorted(targets)
    return pages


def url_hash(url: str) -> str:
    """The test crawler's urlHash (16 hex digits)."""
    return hashlib.sha256(url.encode()).hexdigest()[:16]


def text_hash(page: Page) -> str:
    """``sha256:`` of the page's whitespace-normalised main text, as the crawler hashes it."""
    from lookup.crawler.parse import parse_html

    text = " ".join(parse_html(page.html(), "LookupBot").text.split())
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


class CrawlWriter:
    """Writes a crawl directory: ``events.jsonl`` and WARC files, as the crawler does."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        (self.root / "warc").mkdir(parents=True, exist_ok=True)
        self.events = self.root / "events.jsonl"
        self.events.touch()
        self.warc_no = 0

    def _event(self, obj: dict) -> dict:
        with self.events.open("a", encoding="utf-8") as f:
            f.write(json.dumps(obj) + "\n")
        return obj

    def fetch(
        self,
        pages: list[Page],
        at: float | None = None,
        step: float = 60.0,
        key_style: str = "offset",
    ) -> list[dict]:
        """Store pages in a new WARC file and append one PageFetched event each."""
        self.warc_no += 1
        rel = f"warc/crawl-{self.warc_no:05d}.warc.gz"
        out = []
        when = BASE_TIME if at is None else at
        with (self.root / rel).open("ab") as f:
            writer = WARCWriter(f, gzip=True)
            for i, page in enumerate(pages):
                body = page.html().encode("utf-8")
                offset = f.tell()
                headers = StatusAndHeaders(
                    "200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1"
                )
                record = writer.create_warc_record(
                    page.url, "response", payload=io.BytesIO(body), http_headers=headers
                )
                writer.write_record(record)
                fetched = when + i * step
                key = f"{rel}#{offset}" if key_style == "offset" else rel
                out.append(
                    self._event(
                        {
                            "type": "PageFetched",
                            "url": page.url,
                            "urlHash": url_hash(page.url),
                            "fetchedAt": datetime.fromtimestamp(fetched, UTC).strftime(
                                "%Y-%m-%dT%H:%M:%SZ"
                            ),
                            "httpStatus": 200,
                            # as the crawler does: the hash of the main text, a link count
                            "contentHash": text_hash(page),
                            "simhash": "0x0",
                            "storageKey": key,
                            "outLinks": len(page.links),
                            "changed": True,
                            "title": page.title,
                        }
                    )
                )
        return out

    def gone(self, url: str, at: float, status: int = 404) -> dict:
        """Append a fetch that found the page gone (the crawler's removal event)."""
        return self._event(
            {
                "type": "PageRemoved",
                "url": url,
                "urlHash": url_hash(url),
                "fetchedAt": datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "httpStatus": status,
                "reason": "gone",
            }
        )

    def resubmit(self, event: dict) -> dict:
        """Append an event again (a crawler retry)."""
        return self._event(event)
