"""https on loopback: the crawler verifies certificates, trusting extra CAs only when told."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from lookup.crawler import CrawlConfig, CrawlError, DnsResolver, Sandbox, crawl
from lookup.crawler.fetcher import Fetcher
from tests.crawler.conftest import test_config


def _fetch(web: Sandbox, url: str, ca_bundle: Path | None) -> tuple[int | None, str | None, str]:
    async def go() -> tuple[int | None, str | None, str]:
        resolver = DnsResolver(table=web.hosts(), strict=True)
        async with Fetcher(resolver, timeout=5.0, ca_bundle=ca_bundle) as fetcher:
            res = await fetcher.fetch(url)
        return res.status, res.error, res.detail

    return asyncio.run(go())


def test_the_fetcher_verifies_and_trusts_only_the_bundle_it_is_given(web: Sandbox) -> None:
    url = web.manifest()["tls"]["https_variants"][0]["https"]
    assert _fetch(web, url, web.ca_path) == (200, None, "")
    status, error, detail = _fetch(web, url, None)  # public CAs only
    assert status is None and error == "tls" and "certificate verify failed" in detail


def test_without_the_ca_an_https_host_fails_closed(web: Sandbox, tmp_path: Path) -> None:
    https_home = web.manifest()["tls"]["https_variants"][0]["https"]
    before = len(web.log)
    report = crawl(test_config(tmp_path / "c", web, seeds=[https_home], ca_bundle=None))
    # robots.txt could not be read over TLS: nothing else on that host is fetched.
    assert report.stop_reason == "waiting-robots" and report.pages == 0
    assert not web.log.entries(before)  # no HTTP request ever reached the server
    db = sqlite3.connect(tmp_path / "c" / "crawl.sqlite")
    try:
        state, reason = db.execute("SELECT robots_state, robots_reason FROM hosts").fetchone()
    finally:
        db.close()
    assert state == "disallow-all" and reason.startswith("tls: TLS handshake failed")


def test_a_bad_ca_bundle_is_a_clear_error(web: Sandbox, tmp_path: Path) -> None:
    bad = tmp_path / "not-a-ca.pem"
    bad.write_text("this is no certificate")
    with pytest.raises(CrawlError, match="CA bundle"):
        crawl(CrawlConfig(tmp_path / "c", seeds=web.seeds(), ca_bundle=bad))
    with pytest.raises(CrawlError, match="CA bundle"):
        crawl(CrawlConfig(tmp_path / "d", seeds=web.seeds(), ca_bundle=tmp_path / "missing.pem"))
