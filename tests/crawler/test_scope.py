"""Crawl scope (allowed domains, include/exclude patterns) and the address guard."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import re
import sqlite3
from pathlib import Path

import pytest

from lookup.crawler import Sandbox, crawl
from lookup.crawler.fetcher import DnsResolver, ResolveError
from lookup.crawler.scope import CrawlScope, ScopeError, parse_range
from tests.crawler.conftest import test_config

#: Private, loopback, link-local (metadata), CGNAT, ULA, multicast and reserved
#: addresses, each in the spellings a URL or a DNS answer may use.
REFUSED = [
    "127.0.0.1", "2130706433", "0x7f000001", "0177.0.0.1", "0x7f.0.0.1", "127.1",
    "[::1]", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]",
    "10.0.0.1", "012.0.0.1", "167772161", "172.16.0.1", "192.168.1.1", "0xc0.0xa8.1.1",
    "169.254.169.254", "2852039166", "0xa9fea9fe", "0251.0376.0251.0376", "169.254.43518",
    "[::ffff:169.254.169.254]", "[::ffff:a9fe:a9fe]", "[64:ff9b::a9fe:a9fe]",
    "[2002:a9fe:a9fe::1]", "100.64.0.1", "100.127.255.254", "[fd00::1]", "[fc00::1]",
    "[fe80::1]", "0.0.0.0", "0", "224.0.0.1", "240.0.0.1", "255.255.255.255", "[ff02::1]",
    "192.0.2.1", "198.18.0.1",
]  # fmt: skip


def run(coro):  # noqa: ANN001, ANN201
    return asyncio.run(coro)


def open_web() -> DnsResolver:
    """The resolver a crawl with --allow-any-address and no --allow-range uses."""
    return DnsResolver(allowed=(), public=True)


@pytest.mark.parametrize("host", REFUSED)
def test_any_address_still_refuses_private_and_metadata_addresses(host: str) -> None:
    with pytest.raises(ResolveError, match="outside the allowed networks"):
        run(open_web().resolve(host))
    # ... as a name whose DNS answer is that address, too
    literal = host.strip("[]")
    with contextlib.suppress(ValueError):  # only a canonical spelling is a DNS answer
        ipaddress.ip_address(literal)
        table = DnsResolver({"evil.test": literal}, allowed=(), public=True)
        with pytest.raises(ResolveError, match="outside the allowed networks"):
            run(table.resolve("evil.test"))


def test_any_address_allows_public_ones_and_named_ranges() -> None:
    r = DnsResolver({"pub.test": "93.184.216.34", "v6.test": "2606:2800:220:1::1"},
                    allowed=(), public=True)  # fmt: skip
    assert run(r.resolve("pub.test")) == "93.184.216.34"
    assert run(r.resolve("v6.test")) == "2606:2800:220:1::1"
    assert run(r.resolve("0x5db8d822")) == "93.184.216.34"  # numbers are read as inet_aton does
    named = DnsResolver({"intra.test": "10.1.2.3", "meta.test": "169.254.169.254"},
                        allowed=(parse_range("10.0.0.0/8"),), public=True)  # fmt: skip
    assert run(named.resolve("intra.test")) == "10.1.2.3"
    assert run(named.resolve("012.1.2.3")) == "10.1.2.3"
    with pytest.raises(ResolveError):
        run(named.resolve("meta.test"))  # a named range allows only itself
    with pytest.raises(ResolveError):  # without --allow-any-address: loopback only
        run(DnsResolver({"pub.test": "93.184.216.34"}).resolve("pub.test"))


def test_scope_rules() -> None:
    s = CrawlScope(("Example.org",), (r"/docs/",), (r"\.pdf$", r"[?&]print="))
    ok = "https://www.example.org/docs/a.html"
    assert s.check(ok) is None
    assert s.check("https://example.org/docs/") is None
    assert s.check("https://notexample.org/docs/a")[0] == "out-of-scope"  # type: ignore[index]
    assert "allowed domains" in s.check("https://example.com/docs/a")[1]  # type: ignore[index]
    assert "--include" in s.check("https://example.org/blog/a")[1]  # type: ignore[index]
    assert "--exclude" in s.check("https://example.org/docs/a.pdf")[1]  # type: ignore[index]
    assert CrawlScope().check("http://anything.test/") is None
    with pytest.raises(ScopeError, match="--include"):
        CrawlScope(include=("(unclosed",))
    with pytest.raises(ScopeError, match="domain"):
        CrawlScope(allow_domains=("http://example.org/",))


def _hosts(web: Sandbox) -> dict[str, str]:
    return {name.split(".")[0]: name for name in web.hosts()}


def test_a_scoped_sandbox_crawl_never_queues_what_is_out_of_scope(
    web: Sandbox, tmp_path: Path
) -> None:
    names = _hosts(web)
    docs = names["docs"]
    scope = CrawlScope(allow_domains=(docs,), exclude=(r"/lib/[a-f]",))
    web.log.clear()
    report = crawl(test_config(tmp_path, web, scope=scope))
    log = web.log.entries()
    assert report.pages > 0 and log
    hosts = {e.host.split(":")[0] for e in log}
    assert docs in hosts and all(h == docs or h.endswith("." + docs) for h in hosts), hosts
    assert not [e.target for e in log if re.search(r"/lib/[a-f]", e.target)]
    assert any(e.target.startswith("/lib/") for e in log)  # the rest of /lib/ was crawled
    db = sqlite3.connect(tmp_path / "crawl.sqlite")
    try:
        cuts = db.execute(
            "SELECT url, rule, detail FROM cuts WHERE rule = 'out-of-scope'"
        ).fetchall()
        queued = db.execute(
            "SELECT url FROM urls WHERE state IN ('queued', 'leased', 'done')"
        ).fetchall()
    finally:
        db.close()
    assert cuts, "out-of-scope URLs are recorded as cuts"
    assert any("allowed domains" in d for _, _, d in cuts)
    assert any("--exclude" in d for _, _, d in cuts)
    for (url,) in queued:
        assert scope.check(url) is None, url
    assert report.traps.get("out-of-scope", 0) == len(cuts)
