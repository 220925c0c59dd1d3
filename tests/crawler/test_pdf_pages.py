"""PDF answers to page requests (issue 28 item 14): fetched, judged, removed like pages.

The fetcher accepts a PDF where a page is asked for (and recognises one sent without a
type by its signature), never calling its bytes "binary content served as text"; the
outcome rules read its text and title, index it with an event, count a damaged one, and
honour ``X-Robots-Tag: noindex`` — how sites keep their PDFs out of search engines.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lookup.crawler.config import CrawlConfig
from lookup.crawler.dedup import DuplicateDetector
from lookup.crawler.fetcher import HTML_TYPES, PAGE_TYPES, DnsResolver, Fetcher, FetchResult
from lookup.crawler.frontier import FrontierEntry
from lookup.crawler.outcomes import FetchContext, RuleKit, decide
from lookup.crawler.output import WarcStore
from lookup.crawler.sandbox import Sandbox, SandboxConfig
from lookup.crawler.sandbox.sites.press import PDF_REPORTS, pdf_document
from lookup.crawler.traps import TrapGuard, TrapPolicy
from lookup.kit.urlnorm import url_hash

URL = "http://a.test/reports/r.pdf"


@pytest.fixture(scope="module")
def web() -> Iterator[Sandbox]:
    sandbox = Sandbox(SandboxConfig.small(tls_hosts=())).start()
    try:
        yield sandbox
    finally:
        sandbox.stop()


def _fetch(web: Sandbox, path: str, accept: Any) -> FetchResult:
    async def go() -> FetchResult:
        async with Fetcher(DnsResolver(web.hosts(), strict=True), timeout=2.0) as f:
            return await f.fetch(web.url("press", path), accept=accept)

    return asyncio.run(go())


def test_a_page_request_accepts_a_pdf_and_keeps_its_bytes(web: Sandbox) -> None:
    res = _fetch(web, "/reports/annual-report.pdf", PAGE_TYPES)
    assert res.ok and res.error is None and res.content_type == "application/pdf"
    assert res.body == pdf_document(*PDF_REPORTS["/reports/annual-report.pdf"])
    assert _fetch(web, "/reports/annual-report.pdf", HTML_TYPES).error == "not-html"


def test_a_pdf_without_a_type_is_known_by_its_signature(web: Sandbox) -> None:
    res = _fetch(web, "/reports/untyped", PAGE_TYPES)
    assert res.ok and res.content_type == "application/pdf" and res.body.startswith(b"%PDF-")
    assert _fetch(web, "/reports/untyped", HTML_TYPES).error == "not-html"


def _ctx(tmp_path: Path, body: bytes, headers: dict[str, str] | None = None) -> FetchContext:
    kit = RuleKit(
        CrawlConfig(tmp_path), DuplicateDetector(), WarcStore(tmp_path),
        TrapGuard(TrapPolicy()), {}, lambda _h: None,
    )  # fmt: skip
    heads = {"content-type": "application/pdf", **(headers or {})}
    res = FetchResult(
        URL, "127.0.0.2", 1000.0, 0.01, 200, heads, list(heads.items()), body,
        "application/pdf", None,
    )  # fmt: skip
    entry = FrontierEntry(URL, url_hash(URL), "a.test", depth=1)
    return FetchContext(entry, res, None, delay=0.5, retry_after=None, kit=kit)


def test_a_pdf_is_an_indexed_page_with_its_title(tmp_path: Path) -> None:
    body = pdf_document("Quay Survey", ["Quay Survey 2026", "Bollards were repainted in May."])
    out = decide(_ctx(tmp_path, body))
    assert out.name == "ok" and out.event is not None
    assert out.event["title"] == "Quay Survey" and out.event["outLinks"] == 0
    assert out.links == [] and out.facts.storage_key is not None


def test_a_damaged_pdf_is_counted_not_indexed(tmp_path: Path) -> None:
    body = pdf_document("Quay Survey", ["Bollards were repainted in May."])[:200]
    out = decide(_ctx(tmp_path, body))
    assert out.name == "unreadable-pdf" and out.event is None
    assert out.facts.reason is not None and "not a readable PDF" in out.facts.reason


def test_x_robots_tag_keeps_a_pdf_out_of_the_index(tmp_path: Path) -> None:
    body = pdf_document(None, ["Internal memo", "Do not circulate."])
    out = decide(_ctx(tmp_path, body, {"x-robots-tag": "noindex"}))
    assert out.name == "noindex" and out.event is None
