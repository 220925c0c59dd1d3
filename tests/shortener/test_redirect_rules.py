"""Redirect rules (issue 27 item 2): matching, validation, caching, analytics.

The matcher is checked against oracles — ``werkzeug``'s Accept-Language parser for the
q-values, ``user-agents`` for devices and browsers, a brute-force first-match over
independently evaluated conditions for the order — and by hypothesis properties. The
HTTP end to end (a real ``lookup serve``) is ``test_redirect_rules_live.py``; the store
contract on SQLite and PostgreSQL is ``test_rules_store.py``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from user_agents import parse as parse_ua
from werkzeug.datastructures import LanguageAccept
from werkzeug.http import parse_accept_header

from lookup.shortener.analytics.aggregate import count_rows, event_dims
from lookup.shortener.analytics.batches import decode_batch, encode_batch
from lookup.shortener.analytics.events import ClickEnricher, ClickEvent, RawClick, record_from_row
from lookup.shortener.model import ClickContext, Link
from lookup.shortener.resolver import decode_link, encode_link
from lookup.shortener.rules.country import country_of
from lookup.shortener.rules.model import (
    MIN_LANGUAGE_QUALITY,
    Condition,
    Rule,
    Visit,
    accepted_languages,
    browser_of,
    choose,
    decode_rules,
    device_of,
    encode_rules,
)
from lookup.shortener.rules.parse import RuleParser
from lookup.shortener.urls import Blocklist, UrlPolicy
from tests.shortener.conftest import App

IPHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/17.1 Mobile/15E148 Safari/604.1"
)
ANDROID = (
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/120.0.0.0 Mobile Safari/537.36"
)
WINDOWS_FIREFOX = "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:121.0) Gecko/20100101 Firefox/121.0"
MAC_CHROME = (
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/120.0.0.0 Safari/537.36"
)
CHROME_IOS = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) CriOS/120.0.6099.119 Mobile/15E148 Safari/604.1"
)
AGENTS = [IPHONE, ANDROID, WINDOWS_FIREFOX, MAC_CHROME, CHROME_IOS, "curl/8.5", ""]


def visit(**kw: Any) -> Visit:
    base: dict[str, Any] = {
        "user_agent": None,
        "accept_language": None,
        "query": b"",
        "now": 1_800_000_000.0,
        "address": None,
        "country_of": country_of,
    }
    base.update(kw)
    return Visit(**base)


# -- devices, browsers, languages, countries --------------------------------------------


def test_devices_and_browsers_as_user_agents_parses_them() -> None:
    assert [device_of(ua) for ua in (IPHONE, ANDROID, WINDOWS_FIREFOX, MAC_CHROME)] == [
        "ios",
        "android",
        "desktop",
        "desktop",
    ]
    assert device_of(None) is None and device_of("curl/8.5") is None
    assert browser_of(CHROME_IOS) == "chrome" and browser_of(IPHONE) == "safari"
    assert browser_of(WINDOWS_FIREFOX) == "firefox" and browser_of(ANDROID) == "chrome"


@pytest.mark.parametrize("ua", AGENTS)
def test_device_agrees_with_the_user_agents_library(ua: str) -> None:
    """Oracle: the library's own flags (iOS/Android by OS family, desktop by ``is_pc``)."""
    parsed = parse_ua(ua)
    family = parsed.os.family
    expected = (
        "ios"
        if family == "iOS"
        else "android"
        if family == "Android"
        else "desktop"
        if parsed.is_pc and not parsed.is_bot
        else None
    )
    assert device_of(ua or None) == expected


def _oracle_languages(header: str) -> list[tuple[str, str | None]]:
    """Accept-Language by werkzeug, filtered as Shlink does (q >= 0.9, no ``*``)."""
    out = []
    for value, quality in parse_accept_header(header, LanguageAccept):
        if value == "*" or quality < MIN_LANGUAGE_QUALITY:
            continue
        primary, _, rest = value.lower().replace("_", "-").partition("-")
        out.append((primary, rest.split("-")[-1] if rest else None))
    return out


LANG_TAGS = st.sampled_from(["es", "es-AR", "es-ES", "en", "en-GB", "pt-BR", "hi", "zh-Hant-TW"])
QUALITIES = st.sampled_from([None, "1", "0.95", "0.9", "0.89", "0.5", "0"])


@st.composite
def accept_language(draw: st.DrawFn) -> str:
    parts = []
    for tag in draw(st.lists(LANG_TAGS, min_size=1, max_size=4, unique=True)):
        q = draw(QUALITIES)
        parts.append(tag if q is None else f"{tag};q={q}")
    return ", ".join(parts)


@settings(max_examples=150, deadline=None)
@given(accept_language())
def test_accepted_languages_agree_with_werkzeug(header: str) -> None:
    assert sorted(accepted_languages(header), key=repr) == sorted(
        _oracle_languages(header), key=repr
    )


def test_language_conditions_match_the_primary_subtag_as_shlink_does() -> None:
    def lang(value: str, header: str) -> bool:
        rule = Rule("https://x.example/", (Condition("language", value),))
        return choose([rule], visit(accept_language=header)) is not None

    assert lang("es", "es-AR,en;q=0.5")  # a language takes every region
    assert lang("es-ar", "es-AR")
    assert not lang("es-es", "es-AR")  # a region must be equal
    assert not lang("es-ar", "es")
    assert not lang("es", "en, es;q=0.8")  # weighed below 0.9: not counted
    assert lang("es", "en, es;q=0.9")
    assert not lang("es", "*") and not lang("es", "")


def test_country_from_the_shipped_data_and_none_for_private_addresses() -> None:
    assert country_of("8.8.8.8") == "US"
    assert country_of("49.44.0.1") == "IN"
    assert country_of("81.2.69.142") == "GB"
    for address in ("127.0.0.1", "10.1.2.3", "192.168.0.9", "::1", "fe80::1", "bogus", None):
        assert country_of(address) is None


# -- the order: first match wins ----------------------------------------------------------


def _holds(cond: Condition, v: Visit) -> bool:
    """An independent oracle of one condition (no shared helper but the parsers checked above)."""
    if cond.type == "device":
        return device_of(v.user_agent) == cond.value
    if cond.type == "language":
        want = cond.value.split("-")
        langs = _oracle_languages(v.accept_language or "")
        return any(p == want[0] and (len(want) == 1 or r == want[1]) for p, r in langs)
    if cond.type == "query-param":
        pairs = [kv.split("=", 1) for kv in v.query.decode().split("&") if "=" in kv]
        return [cond.key, cond.value] in pairs
    if cond.type == "valid-since":
        return v.now >= float(cond.value)
    if cond.type == "valid-until":
        return v.now < float(cond.value)
    if cond.type == "country":
        return country_of(v.address) == cond.value
    raise AssertionError(cond.type)


CONDITIONS = st.one_of(
    st.builds(Condition, st.just("device"), st.sampled_from(["ios", "android", "desktop"])),
    st.builds(Condition, st.just("language"), st.sampled_from(["es", "es-ar", "en", "hi"])),
    st.builds(
        Condition,
        st.just("query-param"),
        st.sampled_from(["a", "b"]),
        st.sampled_from(["utm", "src"]),
    ),
    st.builds(Condition, st.just("valid-since"), st.sampled_from(["1.0", "1800000000.0", "2e9"])),
    st.builds(Condition, st.just("valid-until"), st.sampled_from(["1.0", "1800000000.0", "2e9"])),
    st.builds(Condition, st.just("country"), st.sampled_from(["IN", "US", "GB"])),
)
RULES = st.lists(
    st.builds(
        Rule,
        st.sampled_from(["https://a.example/", "https://b.example/"]),
        st.lists(CONDITIONS, min_size=1, max_size=3).map(tuple),
    ),
    max_size=6,
)
VISITS = st.builds(
    visit,
    user_agent=st.sampled_from(AGENTS),
    accept_language=accept_language(),
    query=st.sampled_from([b"", b"utm=a", b"src=b&utm=b", b"utm=a&src=a"]),
    now=st.sampled_from([0.0, 1_800_000_000.0, 3e9]),
    address=st.sampled_from(["49.44.0.1", "8.8.8.8", "127.0.0.1", None]),
)


@settings(max_examples=150, deadline=None)
@given(RULES, VISITS)
def test_the_first_rule_whose_conditions_all_hold_wins(rules: list[Rule], v: Visit) -> None:
    matching = [i for i, r in enumerate(rules) if all(_holds(c, v) for c in r.conditions)]
    found = choose(rules, v)
    if not matching:
        assert found is None
    else:
        assert found is not None and found[0] == matching[0] and found[1] is rules[matching[0]]


@settings(max_examples=200, deadline=None)
@given(RULES, VISITS)
def test_a_rule_that_cannot_match_in_front_changes_nothing(rules: list[Rule], v: Visit) -> None:
    never = Rule("https://never.example/", (Condition("valid-until", "0.0"),))
    before, after = choose(rules, v), choose([never, *rules], v)
    assert (before is None and after is None) or (
        before is not None and after is not None and after == (before[0] + 1, before[1])
    )


@settings(max_examples=200, deadline=None)
@given(RULES)
def test_rules_survive_their_json_form(rules: list[Rule]) -> None:
    assert decode_rules(json.loads(json.dumps(encode_rules(rules)))) == tuple(rules)


# -- validation: like the destination itself ----------------------------------------------


def _parser(blocked: tuple[str, ...] = ()) -> RuleParser:
    blocklist = Blocklist(builtin=blocked)
    urls = UrlPolicy(["http://127.0.0.1:8000"], blocklist)
    return RuleParser(urls.check)


def _error(parser: RuleParser, rules: Any) -> dict[str, Any]:
    with pytest.raises(Exception) as caught:
        parser.body({"redirectRules": rules})
    exc: Any = caught.value
    return {"code": exc.code, **exc.extra}


def test_a_rule_cannot_lead_where_the_link_may_not() -> None:
    parser = _parser()
    ok = {"type": "device", "matchValue": "ios"}
    fine = {"longUrl": "https://ok.example/", "conditions": [ok]}
    for url, code in [
        ("http://10.0.0.1/x", "PRIVATE_ADDRESS"),
        ("http://[::ffff:127.0.0.1]/", "PRIVATE_ADDRESS"),
        ("http://0x7f000001/", "PRIVATE_ADDRESS"),
        ("http://localhost:9/", "PRIVATE_ADDRESS"),
        ("http://127.0.0.1:8000/abc", "SELF_REFERENCE"),
        ("javascript:alert(1)", "INVALID_URL"),
        ("https://user:pw@ok.example/", "INVALID_URL"),
    ]:
        got = _error(parser, [fine, {"longUrl": url, "conditions": [ok]}])
        assert got == {"code": code, "rule": 1, "field": "longUrl"}, url


def test_blocked_and_malicious_destinations_are_refused() -> None:
    from lookup.shortener.rules.api import RuleApi  # noqa: F401 (the scanner's verdict path)
    from lookup.shortener.scanner import FeedFile, assess

    blocklist = Blocklist(builtin=["evil.example"])
    urls = UrlPolicy([], blocklist)
    feed = FeedFile().current()

    def verdict(url: str) -> tuple[str, tuple[str, ...]]:
        found = assess(url, blocklist, feed)
        return found.verdict, found.reasons

    parser = RuleParser(urls.check, verdict)
    cond = [{"type": "country", "matchValue": "in"}]
    got = _error(parser, [{"longUrl": "https://www.evil.example/", "conditions": cond}])
    assert got == {"code": "BLOCKED_DOMAIN", "rule": 0, "field": "longUrl"}
    phish = "https://paypal-secure-login-verify.xyz/account/verify/signin"
    assert assess(phish, blocklist, feed).verdict == "MALICIOUS"
    got = _error(parser, [{"longUrl": phish, "conditions": cond}])
    assert got == {"code": "UNSAFE_URL", "rule": 0, "field": "longUrl"}


@pytest.mark.parametrize(
    ("condition", "field"),
    [
        ({"type": "devce", "matchValue": "ios"}, "conditions[0].type"),
        ({"type": "device", "matchValue": "blackberry"}, "conditions[0].matchValue"),
        ({"type": "language", "matchValue": "english!"}, "conditions[0].matchValue"),
        ({"type": "country", "matchValue": "IND"}, "conditions[0].matchValue"),
        ({"type": "query-param", "matchValue": "x"}, "conditions[0].matchKey"),
        ({"type": "device", "matchKey": "k", "matchValue": "ios"}, "conditions[0].matchKey"),
        ({"type": "valid-since", "matchValue": "yesterday"}, "conditions[0].matchValue"),
        ({"type": "browser", "matchValue": 7}, "conditions[0].matchValue"),
        ({"type": "device", "matchValue": "ios", "extra": 1}, "conditions[0].extra"),
    ],
)
def test_a_bad_condition_names_its_rule_and_field(condition: dict[str, Any], field: str) -> None:
    rules = [{"longUrl": "https://ok.example/", "conditions": [condition]}]
    assert _error(_parser(), rules) == {"code": "INVALID_RULE", "rule": 0, "field": field}


def test_bad_shapes_are_400s_with_codes() -> None:
    parser = _parser()
    assert _error(parser, "nope")["code"] == "INVALID_RULE"
    assert _error(parser, [{"longUrl": "https://ok.example/", "conditions": []}]) == {
        "code": "INVALID_RULE",
        "rule": 0,
        "field": "conditions",
    }
    many = [
        {"longUrl": "https://ok.example/", "conditions": [{"type": "device", "matchValue": "ios"}]}
    ]
    assert _error(parser, many * 21)["code"] == "TOO_MANY_RULES"
    assert parser.body({"redirectRules": []}) == ()


@settings(max_examples=200, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.sampled_from(["longUrl", "conditions", "type",
                                                       "matchKey", "matchValue", "x"]),
                                      inner, max_size=4),
                    max_leaves=12))  # fmt: skip
def test_any_json_is_rules_or_a_400(value: Any) -> None:
    """Whatever the body holds, the parser answers rules or an InvalidInput — never a crash."""
    from lookup import errors

    try:
        parser_result = _parser().body({"redirectRules": value})
    except errors.InvalidInput as exc:
        assert exc.code in {"INVALID_RULE", "TOO_MANY_RULES", "INVALID_URL"}, exc.code
    else:
        assert isinstance(parser_result, tuple)


# -- the cache carries the rules; clicks carry the rule -----------------------------------


def test_the_shared_tier_keeps_a_links_rules() -> None:
    rules = (Rule("https://a.example/", (Condition("query-param", "x", "utm"),)),)
    link = Link("abc", "https://d.example/", None, 1.0, 2.0, rules=rules)
    assert decode_link(encode_link(link)) == link
    old = json.loads(encode_link(Link("abc", "https://d.example/", None, 1.0, 2.0)))
    del old["rules"]  # an entry written before rules existed
    assert decode_link(json.dumps(old).encode()).rules == ()


def test_old_click_records_without_a_rule_still_parse() -> None:
    enricher = ClickEnricher(b"k" * 32)
    old_raw = ("p-1", "k1", 1_800_000_000.0, "ab" * 8, IPHONE, None, "IN")
    assert record_from_row(old_raw) == RawClick(*old_raw, None)
    old_event = ("e", "k1", 1.0, "IN", "mobile", "iOS", "Safari", "(direct)", "h", "v", "human")
    assert record_from_row(old_event) == ClickEvent(*old_event, None)
    assert (
        ClickEvent.from_json(
            json.dumps(dict(zip(ClickEvent._fields[:11], old_event, strict=True)))
        ).rule
        is None
    )
    # a stored batch from before: six columns
    blob = json.dumps(["0123456789ab", 5, ["k1"], [1.0], ["h"], [IPHONE], [None], ["IN"]])
    (record,) = decode_batch(blob)
    assert record.rule is None and enricher.event(record).rule is None
    # a batch with no rule at all is stored in that same form (no extra column)
    ctx = ClickContext("k1", 1.0, "1.2.3.4", IPHONE)
    batch = enricher.raw_batch("0123456789ab", 0, [ctx])
    assert len(json.loads(encode_batch(batch)[0])) == 2 + 6
    ruled = enricher.raw_batch("0123456789ab", 0, [ctx._replace(rule=2), ctx])
    text = encode_batch(ruled)[0]
    assert [r.rule for r in decode_batch(text)] == [2, None]


def test_the_aggregator_counts_clicks_per_rule() -> None:
    enricher = ClickEnricher(b"k" * 32)
    clicks = [
        ClickContext("k1", 1_800_000_000.0 + i, f"1.2.3.{i}", IPHONE, rule=rule)
        for i, rule in enumerate([0, 0, 1, -1, None, 0])
    ]
    clicks.append(ClickContext("k1", 1_800_000_010.0, "9.9.9.9", "curl/8.5", rule=0))  # a bot
    events = enricher.events(list(enricher.raw_batch("0123456789ab", 0, clicks)))
    rows = count_rows(events)
    per_rule = {v: n for _k, g, _b, d, v, n in rows if g == "h" and d == "rule"}
    assert per_rule == {"1": 3, "2": 1, "default": 1}
    # the column-wise count equals the per-event oracle
    expected: dict[tuple[str, str], int] = {}
    for event in events:
        for dim in event_dims(event):
            expected[dim] = expected.get(dim, 0) + 1
    got = {(d, v): n for _k, g, _b, d, v, n in rows if g == "h"}
    assert got == expected


def test_a_cached_link_with_rules_costs_no_store_read(app: App, auth: dict[str, str]) -> None:
    c = app.client
    key = c.post("/v1/links", json={"longUrl": "https://example.com/"}, headers=auth).json()["key"]
    rule = {
        "longUrl": "https://example.org/app",
        "conditions": [{"type": "device", "matchValue": "ios"}],
    }
    r = c.put(f"/v1/links/{key}/redirect-rules", json={"redirectRules": [rule]}, headers=auth)
    assert r.status_code == 200, r.text
    resolver = app.shortener.resolver
    assert (
        c.get(f"/{key}", headers={"user-agent": IPHONE}, follow_redirects=False).headers["location"]
        == "https://example.org/app"
    )
    reads = resolver.stats()["store"]["reads"]
    for _ in range(20):
        got = c.get(f"/{key}", headers={"user-agent": IPHONE}, follow_redirects=False)
        assert got.headers["location"] == "https://example.org/app"
        assert got.headers["cache-control"] == "no-store"
    assert resolver.stats()["store"]["reads"] == reads  # rules cached with the link
    # a change of the rules drops the cached copy at once
    other = dict(rule, longUrl="https://example.net/")
    c.put(f"/v1/links/{key}/redirect-rules", json={"redirectRules": [other]}, headers=auth)
    got = c.get(f"/{key}", headers={"user-agent": IPHONE}, follow_redirects=False)
    assert got.headers["location"] == "https://example.net/"
    c.put(f"/v1/links/{key}/redirect-rules", json={"redirectRules": []}, headers=auth)
    got = c.get(f"/{key}", headers={"user-agent": IPHONE}, follow_redirects=False)
    assert got.headers["location"] == "https://example.com/"
    assert got.headers["cache-control"] != "no-store"  # no rules: cacheable as before


def test_a_budgeted_link_keeps_its_rules_after_each_click(app: App, auth: dict[str, str]) -> None:
    c = app.client
    body = {"longUrl": "https://example.com/", "maxClicks": 5}
    key = c.post("/v1/links", json=body, headers=auth).json()["key"]
    rule = {
        "longUrl": "https://example.org/",
        "conditions": [{"type": "device", "matchValue": "android"}],
    }
    c.put(f"/v1/links/{key}/redirect-rules", json={"redirectRules": [rule]}, headers=auth)
    for _ in range(3):
        got = c.get(f"/{key}", headers={"user-agent": ANDROID}, follow_redirects=False)
        assert got.headers["location"] == "https://example.org/"
