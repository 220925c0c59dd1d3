"""The fetcher against the sandbox: guards, conditional requests, the resolver."""

from __future__ import annotations

import asyncio
import ipaddress

import pytest

from lookup.crawler.fetcher import (
    HTML_TYPES,
    DnsResolver,
    Fetcher,
    ResolveError,
    parse_hosts_file,
    parse_retry_after,
)
from lookup.crawler.sandbox import Sandbox


def run(coro):  # noqa: ANN001, ANN201
    return asyncio.run(coro)


async def fetch(web: Sandbox, key: str, path: str, **kw):  # noqa: ANN003, ANN201
    async with Fetcher(DnsResolver(web.hosts(), strict=True), timeout=1.0,
                       max_bytes=256 * 1024) as f:  # fmt: skip
        return await f.fetch(web.url(key, path), **kw)


def test_a_page_arrives_with_our_user_agent(web: Sandbox) -> None:
    res = run(fetch(web, "docs", "/"))
    assert res.ok and res.status == 200 and res.content_type == "text/html"
    assert b"Python standard library" in res.body and res.address == "127.0.0.2"
    agent = web.log.entries()[-1].user_agent
    assert agent.startswith("LookupBot/") and "+https://" in agent


@pytest.mark.parametrize(
    "path,error",
    [
        ("/huge.html", "too-large"),
        ("/huge-chunked.html", "too-large"),
        ("/binary.html", "binary"),
        ("/image.png", "not-html"),
        ("/report.pdf", "not-html"),
    ],
)
def test_guards(web: Sandbox, path: str, error: str) -> None:
    res = run(fetch(web, "junk", path))
    assert res.error == error and res.body == b""


def test_no_content_type_is_sniffed(web: Sandbox) -> None:
    res = run(fetch(web, "junk", "/no-type.html"))
    assert res.ok and res.content_type == "text/html"


def test_timeout(web: Sandbox) -> None:
    res = run(fetch(web, "slow", "/stall.html"))
    assert res.error == "timeout" and res.status is None


def test_redirects_are_not_followed(web: Sandbox) -> None:
    res = run(fetch(web, "redirect", "/chain/1"))
    assert res.status == 302 and res.header("location") == "/chain/2"


def test_conditional_requests_get_304(web: Sandbox) -> None:
    blog = web.sites.handlers["blog"]
    slug = blog.posts[-1][0]
    first = run(fetch(web, "blog", f"/post/{slug}.html"))
    etag, modified = first.header("etag"), first.header("last-modified")
    assert first.status == 200 and etag and modified
    again = run(fetch(web, "blog", f"/post/{slug}.html", conditional={"If-None-Match": etag}))
    assert again.status == 304 and again.body == b""
    since = run(
        fetch(web, "blog", f"/post/{slug}.html", conditional={"If-Modified-Since": modified})
    )
    assert since.status == 304


def test_robots_fetch_accepts_any_type(web: Sandbox) -> None:
    res = run(fetch(web, "docs", "/robots.txt", accept=None))
    assert res.ok and b"User-agent: LookupBot" in res.body
    assert run(fetch(web, "docs", "/robots.txt", accept=HTML_TYPES)).error == "not-html"


def test_resolver_table_strictness_and_allowed_networks() -> None:
    r = DnsResolver({"a.test": "127.0.0.5"}, strict=True)
    assert run(r.resolve("A.TEST.")) == "127.0.0.5"
    assert run(r.resolve("127.0.0.9")) == "127.0.0.9"
    with pytest.raises(ResolveError, match="not in the host table"):
        run(r.resolve("b.test"))
    with pytest.raises(ResolveError, match="outside the allowed networks"):
        run(DnsResolver({"x.test": "10.1.2.3"}).resolve("x.test"))
    open_r = DnsResolver({"x.test": "10.1.2.3"}, allowed=None)
    assert run(open_r.resolve("x.test")) == "10.1.2.3"
    assert open_r.cached() == {"x.test": "10.1.2.3"} and open_r.lookups == 1
    run(open_r.resolve("x.test"))
    assert open_r.lookups == 1  # the per-host cache answered
    assert ipaddress.ip_network("127.0.0.0/8") in DnsResolver().allowed


def test_hosts_file_format() -> None:
    text = "# c\n127.0.0.2\tdocs.test www.docs.test  # twin\n\n127.0.0.3 m.test\n"
    table = parse_hosts_file(text)
    assert table == {
        "docs.test": "127.0.0.2", "www.docs.test": "127.0.0.2", "m.test": "127.0.0.3",
    }  # fmt: skip
    with pytest.raises(ValueError):
        parse_hosts_file("not-an-ip host")


def test_retry_after_forms() -> None:
    assert parse_retry_after("120") == 120.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None
    assert parse_retry_after("-5") == 0.0
