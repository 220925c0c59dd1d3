"""robots.txt handling to RFC 9309: status codes, groups, wildcards, caching, failing closed."""

from __future__ import annotations

import pytest

from lookup.crawler.robots import DAY, MAX_ROBOTS_BYTES, RobotsCache, RobotsPolicy

AGENT = "LookupBot"
ROBOTS = b"""
User-agent: *
Disallow: /lib/

User-agent: LookupBot
Allow: /drafts/published-*.html
Disallow: /drafts/
Disallow: /*.txt$
Disallow: /*?print=
Crawl-delay: 2.5

User-agent: OtherBot
Disallow: /
"""


def policy(body: bytes = ROBOTS, status: int = 200) -> RobotsPolicy:
    return RobotsPolicy.from_response("a.test", AGENT, status, body, now=1000.0)


@pytest.mark.parametrize(
    "path,allowed",
    [
        ("/lib/json.html", True),  # "*" forbids it, but our own group wins
        ("/drafts/plan.html", False),
        ("/drafts/published-intro.html", True),  # the longer Allow beats Disallow
        ("/feed.txt", False),  # "$" anchors the end
        ("/feed.txt?format=html", True),
        ("/page?print=1", False),  # "*" wildcard
        ("/page?a=1&print=1", True),
        ("/", True),
    ],
)
def test_our_group_with_wildcards_and_end_anchors(path: str, allowed: bool) -> None:
    assert policy().allows(f"http://a.test{path}") is allowed


def test_crawl_delay_and_decisions() -> None:
    p = policy()
    assert p.crawl_delay == 2.5
    assert "disallowed by robots.txt rules for LookupBot" in p.decision("http://a.test/drafts/x")


@pytest.mark.parametrize("status", [400, 401, 403, 404, 410, 418])
def test_4xx_means_no_restrictions(status: int) -> None:
    p = policy(b"", status)
    assert p.state == "allow-all" and p.allows("http://a.test/anything")


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504])
def test_5xx_and_429_fail_closed(status: int) -> None:
    p = policy(b"User-agent: *\nDisallow:\n", status)
    assert p.state == "disallow-all" and not p.allows("http://a.test/")
    assert "failing closed" in p.decision("http://a.test/")


def test_unreachable_fails_closed_and_is_retried_sooner() -> None:
    p = RobotsPolicy.unreachable("a.test", AGENT, "timeout", retry=600.0, now=1000.0)
    assert not p.allows("http://a.test/") and p.expires_at == 1600.0


def test_cache_keeps_a_copy_at_most_24_hours() -> None:
    p = RobotsPolicy.from_response("a.test", AGENT, 200, ROBOTS, ttl=7 * DAY, now=1000.0)
    assert p.expires_at == 1000.0 + DAY
    cache = RobotsCache(AGENT, ttl=DAY)
    cache.put(p)
    assert cache.get("a.test", now=1000.0 + DAY - 1) is p
    assert cache.get("a.test", now=1000.0 + DAY) is None  # stale: must be fetched again
    assert cache.peek("a.test") is p


def test_only_the_first_500_kib_is_parsed() -> None:
    padding = b"# " + b"x" * (MAX_ROBOTS_BYTES + 10) + b"\n"
    p = policy(b"User-agent: *\nDisallow: /a/\n" + padding + b"Disallow: /b/\n")
    assert not p.allows("http://a.test/a/1")
    assert p.allows("http://a.test/b/1")


def test_sitemaps_are_listed() -> None:
    p = policy(ROBOTS + b"Sitemap: http://a.test/sitemap.xml\n")
    assert p.sitemaps == ["http://a.test/sitemap.xml"]


LOGIN_PAGE = b"""<!DOCTYPE html>
<html><head><title>Sign in</title></head>
<body><form action="/login"><input name="user"><input name="pass" type="password"></form></body>
</html>"""


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (LOGIN_PAGE, "HTML"),  # a login page answered 200 for every path
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)), "binary"),
        ("User-agent: *\nDisallow: /private/\n".encode("utf-16-le"), "binary"),  # no BOM
        (b"Welcome to our site! Nothing to see here.\nPlease come back later.\n", "no rule"),
    ],
)
def test_a_file_that_is_not_a_rules_file_disallows_everything(body: bytes, why: str) -> None:
    """Seed 003: an unparseable rules file is never permission (issue 28 item 16)."""
    p = policy(body)
    assert p.state == "disallow-all" and p.status == 200
    assert p.reason.startswith("unparseable") and why in p.reason
    assert not p.allows("http://a.test/public/page.html")
    assert p.expires_at == 1000.0 + 600.0  # retried as soon as an unreachable file


def test_utf16_with_a_byte_order_mark_and_a_utf8_bom_are_read() -> None:
    rules = "User-agent: *\nDisallow: /private/\n"
    for raw in ("\ufeff" + rules).encode("utf-16-le"), ("\ufeff" + rules).encode("utf-8"):
        p = policy(raw)
        assert p.state == "rules"
        assert not p.allows("http://a.test/private/x") and p.allows("http://a.test/open")


def test_an_empty_or_comment_only_file_is_a_valid_file_with_no_rules() -> None:
    for body in (b"", b"\n\n", b"# nothing here for now\n"):
        p = policy(body)
        assert p.state == "rules" and p.allows("http://a.test/anything")


def test_the_last_parsed_copy_stands_in_while_unreachable_for_30_days() -> None:
    """RFC 9309 §2.4: a cached copy may be used while the file is unreachable; fail-closed
    still holds when there is no copy, when it is older than 30 days, for a 5xx, and
    for a 4xx's allow-all (which is no copy of any rules)."""
    cache = RobotsCache(AGENT, retry=600.0)
    first = RobotsPolicy.from_response("a.test", AGENT, 200, ROBOTS, now=1000.0)
    cache.put(first)
    p = cache.unreachable("a.test", "timeout", now=1000.0 + 10 * DAY)
    assert p.state == "rules" and "copy fetched 10.0 days ago" in p.reason
    assert p.fetched_at == 1000.0 and p.expires_at == 1000.0 + 10 * DAY + 600.0
    assert p.allows("http://a.test/ok") and not p.allows("http://a.test/drafts/x.html")
    # past 30 days: fail closed
    assert cache.unreachable("a.test", "timeout", now=1000.0 + 31 * DAY).state == "disallow-all"
    # a 5xx is the server saying it struggles: no stand-in
    cache.put(first)
    assert cache.from_response("a.test", 503, b"").state == "disallow-all"
    # a 4xx's allow-all is not a copy of rules
    cache.put(RobotsPolicy.from_response("b.test", AGENT, 404, b"", now=1000.0))
    assert cache.unreachable("b.test", "timeout", now=2000.0).state == "disallow-all"
    assert cache.unreachable("new.test", "refused", now=2000.0).state == "disallow-all"
