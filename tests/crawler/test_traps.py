"""Trap rules: every refusal names its rule; patterns that keep repeating are cut."""

from __future__ import annotations

import pytest

from lookup.crawler.traps import TrapGuard, TrapPolicy, url_pattern


@pytest.mark.parametrize(
    "url,depth,rule",
    [
        ("http://a.test/" + "x" * 2100, 0, "url-length"),
        ("http://a.test/p", 21, "depth-limit"),
        ("http://a.test/" + "/".join("abcdefghijklm"), 0, "path-depth"),
        ("http://a.test/guide/guide/guide/", 0, "repeated-segments"),
        ("http://a.test/?sid=15ceb3a10b3510b0b46ee1da", 0, "session-param"),
        ("http://a.test/p?PHPSESSID=Zx81kQ0pLm3nB7vC9dE2fG", 0, "session-param"),
        ("http://a.test/p?jsessionid=0a1b2c3d4e5f60718293a4b5c6d7e8f9", 0, "session-param"),
        ("http://a.test/p?x=1&ASPSESSIONIDQQGGQGCS=ABCDEFGHIJKLMNOPQRSTUVWX", 0, "session-param"),
        ("http://a.test/p?CFID=12345678&CFTOKEN=87654321", 0, "session-param"),
    ],
)
def test_each_rule_names_itself(url: str, depth: int, rule: str) -> None:
    verdict = TrapGuard().check_url(url, depth)
    assert verdict is not None and verdict[0] == rule and verdict[1]


@pytest.mark.parametrize(
    "url",
    [
        "http://a.test/guide/guide/intro/",  # twice is allowed
        "http://a.test/products?colour=red&page=2&size=m&sort=price",
        "http://a.test/cal/2031/07.html",
        "http://a.test/?q=deadbeef",  # short values are data, not sessions
        "http://a.test/?name=configuration_parser",  # letters only
    ],
)
def test_ordinary_urls_pass(url: str) -> None:
    assert TrapGuard().check_url(url, 3) is None


@pytest.mark.parametrize(
    "url",
    [
        "http://a.test/item?id=507f1f77bcf86cd799439011",  # a MongoDB ObjectId
        "http://a.test/commit?sha=9fceb02d0ae598e95dc970b74767f19372d61af8",  # a git commit
        "http://a.test/p?visit=15ceb3a10b3510b0b46ee1da",  # unknown name: judged by its pages
        "http://a.test/v?key=Zx81kQ0pLm3nB7vC9dE2fG",
        "http://a.test/p?sid=en",  # a known name whose value is no session token
    ],
)
def test_object_ids_and_hashes_are_not_sessions(url: str) -> None:
    assert TrapGuard().check_url(url, 1) is None


def test_an_unknown_token_parameter_is_cut_only_when_its_pages_are_duplicates() -> None:
    g = TrapGuard(TrapPolicy(pattern_min_samples=4, pattern_cut_samples=6))
    visit = "http://a.test/p?visit={:024x}"
    item = "http://a.test/item?id={:024x}"
    assert g.check_url(visit.format(99), 1) is None  # first sight: judged by its pages
    for i in range(8):
        g.record(visit.format(i), duplicate=i > 0)  # the same page behind every token
        g.record(item.format(i), duplicate=False)  # a different object behind every id
    verdict = g.check_url(visit.format(99), 1)
    assert verdict is not None and verdict[0] == "session-param" and "duplicates" in verdict[1]
    assert g.pattern_verdict(visit.format(99)) == "cut"
    assert g.check_url(item.format(99), 1) is None
    assert g.pattern_verdict(item.format(99)) == "ok"


def test_url_patterns_fold_numbers_tokens_and_query_values() -> None:
    assert url_pattern("http://a.test/cal/2031/07.html") == "a.test/cal/N/N.html"
    assert url_pattern("http://a.test/events/2026-11-meetup-1-2") == "a.test/events/N+-meetup-N+"
    assert url_pattern("http://a.test/products?size=m&colour=red") == "a.test/products?colour&size"
    assert url_pattern("http://a.test/s/8f3a9c2e1d/x.html") == "a.test/s/H/x.html"


def test_duplicate_heavy_patterns_are_downranked_then_cut() -> None:
    g = TrapGuard(TrapPolicy(pattern_min_samples=4, pattern_cut_samples=6))
    url = "http://a.test/events/2026-11-meetup-{}"
    assert g.pattern_verdict(url.format(99)) == "ok"
    g.record(url.format(1), duplicate=False)
    for i in range(2, 5):
        g.record(url.format(i), duplicate=True)
    assert g.pattern_verdict(url.format(99)) == "downrank"  # 3 of 4
    for i in range(5, 9):
        g.record(url.format(i), duplicate=True)
    assert g.pattern_verdict(url.format(99)) == "cut"  # 7 of 8
    assert g.pattern_verdict("http://a.test/other/1") == "ok"


def test_budget() -> None:
    g = TrapGuard(TrapPolicy(host_budget=3))
    assert not g.over_budget(2) and g.over_budget(3)
