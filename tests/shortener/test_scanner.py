"""The safety scanner: verdicts, the queue, rescans on blocklist changes, through the real app."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lookup.kit.admin import load_admin_token_in
from lookup.shortener import LinkApi, Shortener, ShortenerService, Status
from lookup.shortener.scanner import (
    DEFAULT_FEED,
    FeedFile,
    Scanner,
    ScanQueue,
    ThreatFeed,
    assess,
    is_admin,
)
from lookup.shortener.urls import Blocklist
from tests.shortener.conftest import no_dns

FEED = ThreatFeed.load(DEFAULT_FEED)
SEVERITY = {"SAFE": 0, "SUSPICIOUS": 1, "MALICIOUS": 2}


def eventually(check: Callable[[], Any], timeout: float = 15.0) -> Any:
    """Poll ``check`` until it returns something truthy (the scanner runs in a thread)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


# --------------------------------------------------------------------------- verdicts


@pytest.mark.parametrize(
    ("url", "verdict"),
    [
        ("https://example.com/", "SAFE"),
        ("https://www.paypal.com/signin", "SAFE"),  # the brand's own domain
        ("https://login.microsoftonline.com/common/oauth2", "SAFE"),
        ("https://docs.python.org/3/library/logging.html", "SAFE"),
        ("https://en.wikipedia.org/wiki/Phishing", "SAFE"),
        ("https://shop.example.xyz/", "SAFE"),  # one weak signal is not enough
        ("http://192.0.2.7/files/report.pdf", "SUSPICIOUS"),  # a bare IP
        ("https://bit.ly/3abcDEF", "SAFE"),  # a chain alone: +2
        ("https://my-bank-verify.xyz/account/update", "SUSPICIOUS"),
        ("https://xn--pypal-4ve.com/", "SAFE"),  # punycode alone: +2
        ("https://xn--pypal-4ve.com/signin/verify", "SUSPICIOUS"),
        ("http://192.0.2.7/paypal/login", "MALICIOUS"),  # IP + brand in path + keyword
        ("https://paypal.com.account-verify.top/login", "MALICIOUS"),  # brand look-alike
        ("https://secure-apple-id.cf/unlock", "MALICIOUS"),
        ("https://phish.test/x", "MALICIOUS"),  # threat feed host
        ("https://a.b.malware.test/", "MALICIOUS"),  # and its subdomains
        ("https://amtso.org/", "MALICIOUS"),  # the built-in blocklist
    ],
)
def test_verdicts(url: str, verdict: str) -> None:
    result = assess(url, Blocklist(), FEED)
    assert result.verdict == verdict, result
    if verdict != "SAFE" or result.score:
        assert result.reasons  # every point is explained


def test_the_feed_file_parses_and_skips_bad_lines(tmp_path: Path) -> None:
    assert "paypal" in FEED.brands and "top" in FEED.tlds and "phish.test" in FEED.domains
    feed = ThreatFeed.parse("domain bad..host\ntld top notanumber\nkeyword login 2\nnonsense\n")
    assert feed.domains == frozenset() and feed.tlds == {} and feed.keywords == {"login": 2}
    path = tmp_path / "feed.txt"
    path.write_text("domain one.test\n")
    watched = FeedFile(path)
    assert watched.current().domains == {"one.test"}
    path.write_text("domain two.test\n")
    os.utime(path, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
    assert watched.current().domains == {"two.test"}


labels = st.from_regex(r"[a-z][a-z0-9]{0,8}", fullmatch=True)


@settings(max_examples=200, deadline=None)
@given(blocked=st.lists(labels, min_size=1, max_size=3), sub=st.lists(labels, max_size=3))
def test_anything_under_a_blocked_domain_is_malicious(blocked: list[str], sub: list[str]) -> None:
    domain = ".".join(blocked) + ".com"
    blocklist = Blocklist(builtin=[domain])
    host = ".".join([*sub, domain])
    assert assess(f"https://{host}/page", blocklist, FEED).verdict == "MALICIOUS"


@settings(max_examples=200, deadline=None)
@given(
    host=st.lists(labels, min_size=1, max_size=4),
    tld=st.sampled_from(["com", "top", "xyz", "org", "tk"]),
    path=st.lists(st.sampled_from(["login", "verify", "paypal", "docs", "a1"]), max_size=3),
    extra=labels,
)
def test_blocking_more_never_makes_a_verdict_milder(
    host: list[str], tld: str, path: list[str], extra: str
) -> None:
    url = f"https://{'.'.join(host)}.{tld}/{'/'.join(path)}"
    before = assess(url, Blocklist(builtin=[]), FEED)
    after = assess(url, Blocklist(builtin=[f"{extra}.{tld}"]), FEED)
    assert SEVERITY[after.verdict] >= SEVERITY[before.verdict]


# ------------------------------------------------------------------------------ queue


@settings(max_examples=200, deadline=None)
@given(
    ops=st.lists(
        st.one_of(
            st.tuples(st.just("put"), st.sampled_from("abcde"), st.integers(0, 20)),
            st.tuples(st.just("pop"), st.just(""), st.integers(0, 20)),
        ),
        max_size=40,
    )
)
def test_scan_queue_matches_a_dictionary_model(ops: list[tuple[str, str, int]]) -> None:
    queue = ScanQueue()
    model: dict[str, int] = {}
    for op, key, t in ops:
        if op == "put":
            queue.put(key, t, "r")
            model[key] = min(model.get(key, t), t)
        else:
            got = [k for k, _ in queue.pop_due(t, limit=100)]
            want = {k for k, due in model.items() if due <= t}
            assert set(got) == want and len(got) == len(want)  # each due key exactly once
            dues = [model[k] for k in got]
            assert dues == sorted(dues)  # earliest due first
            for k in want:
                del model[k]
        assert len(queue) == len(model)
        expected_next = min(model.values()) if model else None
        assert queue.next_due() == expected_next


# ------------------------------------------------------------------ schedule, in process


class FakeAggregator:
    def __init__(self, top: list[tuple[str, int]]) -> None:
        self.top = top

    def top_keys(self, since: float, limit: int) -> list[tuple[str, int]]:
        return self.top[:limit]


def _scanner(shortener: Shortener, **options: Any) -> Scanner:
    """A scanner over the shortener's store, acting through its service (as app.py wires it)."""
    options.setdefault("resolve", no_dns)
    return Scanner(
        shortener.store, shortener.service, shortener.blocklist, state_dir=shortener.dir, **options
    )


def test_popular_links_are_rescanned_every_hot_interval(
    service: ShortenerService, api: LinkApi, shortener: Shortener, clock: Any
) -> None:
    keys = [api.create({"longUrl": f"https://example.com/{i}"}).body["key"] for i in range(3)]
    hot = FakeAggregator([(keys[2], 900), (keys[0], 50)])
    scanner = _scanner(
        shortener, hot_keys=hot.top_keys, clock=clock, hot_interval_s=3600, hot_top=1,
        sweep_interval_s=10**9,
    )  # fmt: skip
    scanner.drain()  # the first full sweep + the creates' own scans
    assert all(service.get(k).scan_verdict == "SAFE" for k in keys)
    first = scanner.scanned
    clock.advance(60)
    assert scanner.tick() == 0  # nothing due: the hot keys were queued an hour ahead
    clock.advance(3600)
    assert scanner.tick() == 1  # only the most clicked key, once an hour
    assert scanner.scanned == first + 1


def test_a_clean_rescan_never_re_enables_an_owner_disabled_link(
    service: ShortenerService, api: LinkApi, shortener: Shortener, clock: Any, token: str
) -> None:
    from lookup.shortener import owner_id

    owner = owner_id(token)
    key = api.create({"longUrl": "https://example.com/"}, owner=owner).body["key"]
    api.update(key, {"status": "DISABLED"}, owner=owner)
    scanner = _scanner(shortener, clock=clock)
    scanner.drain()
    link = service.get(key)
    assert link.status is Status.DISABLED and link.status_reason == "owner"
    assert link.scan_verdict == "SAFE"


# ----------------------------------------------------------------- through the real app


@pytest.fixture
def admin(monkeypatch: pytest.MonkeyPatch) -> Callable[[Any], dict[str, str]]:
    monkeypatch.delenv("LOOKUP_ADMIN_TOKEN", raising=False)

    def headers(app: Any) -> dict[str, str]:
        return {"Authorization": f"Bearer {load_admin_token_in(app.shortener.dir)}"}

    return headers


def _link(app: Any, key: str) -> Any:
    return app.service.store.get(key)


def test_a_malicious_new_link_is_disabled_and_gets_the_warning_page(
    make_app: Callable[..., Any], admin: Callable[[Any], dict[str, str]]
) -> None:
    app = make_app(scanner=True)
    bad = app.client.post(
        "/v1/links", json={"longUrl": "https://paypal.com.account-verify.top/login"}
    ).json()["key"]
    good = app.client.post("/v1/links", json={"longUrl": "https://example.com/"}).json()["key"]
    assert eventually(lambda: _link(app, bad).status is Status.DISABLED)
    assert eventually(lambda: _link(app, good).scan_verdict == "SAFE")
    resp = app.client.get(f"/{bad}", follow_redirects=False)
    assert resp.status_code == 403 and "location" not in resp.headers
    assert "has been disabled" in resp.text
    preview = app.client.get(f"/{bad}+")
    assert "id=verdict>MALICIOUS<" in preview.text and 'id="continue"' not in preview.text
    assert "id=verdict>SAFE<" in app.client.get(f"/{good}+").text
    metrics = app.client.get("/v1/shortener/metrics", headers=admin(app)).json()["scanner"]
    assert metrics["verdicts"]["MALICIOUS"] >= 1 and metrics["disabled"] == 1


def test_blocklist_update_rescans_disables_and_lifts(
    make_app: Callable[..., Any], admin: Callable[[Any], dict[str, str]]
) -> None:
    app = make_app(scanner=True)
    key = app.client.post("/v1/links", json={"longUrl": "https://sub.example.org/a"}).json()["key"]
    assert eventually(lambda: _link(app, key).scan_verdict == "SAFE")
    for _ in range(3):  # hot in the in-process cache
        assert app.client.get(f"/{key}", follow_redirects=False).status_code == 302
    resp = app.client.post(
        "/v1/shortener/blocklist", json={"add": ["Example.ORG."]}, headers=admin(app)
    )
    assert resp.status_code == 200, resp.text
    assert resp.json()["added"] == ["example.org"] and resp.json()["rescan"] is True
    assert eventually(lambda: _link(app, key).status is Status.DISABLED)
    nxt = app.client.get(f"/{key}", follow_redirects=False)  # the very next click
    assert nxt.status_code == 403 and "location" not in nxt.headers
    listed = app.client.get("/v1/shortener/blocklist", headers=admin(app)).json()
    assert "example.org" in listed["domains"]
    # New links to the domain are refused at creation, too.
    refused = app.client.post("/v1/links", json={"longUrl": "https://example.org/"})
    assert refused.status_code == 400 and refused.json()["error"] == "BLOCKED_DOMAIN"
    resp = app.client.post(
        "/v1/shortener/blocklist", json={"remove": ["example.org", "amtso.org"]},
        headers=admin(app),
    )  # fmt: skip
    assert resp.json()["removed"] == ["example.org"] and resp.json()["notRemovable"] == [
        "amtso.org"
    ]
    assert eventually(lambda: _link(app, key).status is Status.ACTIVE)
    assert app.client.get(f"/{key}", follow_redirects=False).status_code == 302
    assert [h["action"] for h in app.service.store.audit(key)][-2:] == ["scan", "enable"]


def test_editing_the_blocklist_file_triggers_a_rescan(make_app: Callable[..., Any]) -> None:
    app = make_app(scanner=True)
    key = app.client.post("/v1/links", json={"longUrl": "https://files.example.net/"}).json()["key"]
    assert eventually(lambda: _link(app, key).scan_verdict == "SAFE")
    with app.shortener.blocklist.path.open("a") as fh:
        fh.write("example.net\n")
    # The blocklist notices the new mtime within its 2 s recheck; the scanner then sweeps.
    assert eventually(lambda: _link(app, key).status is Status.DISABLED, timeout=20)
    assert app.client.get(f"/{key}", follow_redirects=False).status_code == 403


def test_the_blocklist_endpoint_needs_the_admin_token(
    make_app: Callable[..., Any], admin: Callable[[Any], dict[str, str]]
) -> None:
    app = make_app()
    url = "/v1/shortener/blocklist"
    assert app.client.post(url, json={"add": ["x.com"]}).status_code == 401
    owner = {"Authorization": "Bearer owner-token-0123456789-abcdef"}
    assert app.client.post(url, json={"add": ["x.com"]}, headers=owner).status_code == 403
    assert app.client.get(url, headers=owner).status_code == 403
    cases = {
        '{"add": "x.com"}': "INVALID_DOMAINS",
        '{"add": [1]}': "INVALID_DOMAINS",
        '{"add": ["not a domain"]}': "INVALID_DOMAIN",
        '{"drop": []}': "UNKNOWN_FIELD",
        "[1]": "MALFORMED_JSON",
        "{": "MALFORMED_JSON",
    }
    for body, code in cases.items():
        resp = app.client.post(
            url, content=body, headers={**admin(app), "content-type": "application/json"}
        )
        assert resp.status_code == 400 and resp.json()["error"] == code, (body, resp.text)
    # Without a scanner the edit still takes effect for creation.
    resp = app.client.post(url, json={"add": ["x.com"]}, headers=admin(app))
    assert resp.status_code == 200 and resp.json()["rescan"] is False


def test_admin_token_comes_from_env_or_a_private_file(tmp_path: Path) -> None:
    token = load_admin_token_in(tmp_path, environ={})
    assert len(token) >= 40 and load_admin_token_in(tmp_path, environ={}) == token
    assert (tmp_path / "admin.token").stat().st_mode & 0o777 == 0o600
    assert load_admin_token_in(tmp_path, environ={"LOOKUP_ADMIN_TOKEN": "from-env"}) == "from-env"
    assert is_admin(f"Bearer {token}", token) and is_admin(f"bearer  {token} ", token)
    assert not is_admin(f"Basic {token}", token) and not is_admin(None, token)
    assert not is_admin("Bearer ", "")


def test_edit_blocklist_keeps_comments(tmp_path: Path) -> None:
    blocklist = Blocklist(tmp_path / "blocklist.txt")
    blocklist.write_template()
    blocklist.edit(["a.example", "b.example"], [])
    result = blocklist.edit(["a.example"], ["b.example"])
    assert result["added"] == [] and result["removed"] == ["b.example"]
    text = (tmp_path / "blocklist.txt").read_text()
    assert text.startswith("# Domains the URL shortener refuses") and "a.example" in text
    assert blocklist.match("x.a.example") == "a.example" and blocklist.match("b.example") is None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(body=st.dictionaries(st.sampled_from(["add", "remove", "other"]), json_values, max_size=2))
def test_fuzzed_blocklist_edits_never_5xx(
    app: Any, admin: Callable[[Any], dict[str, str]], body: dict[str, Any]
) -> None:
    resp = app.client.post("/v1/shortener/blocklist", json=body, headers=admin(app))
    assert resp.status_code in (200, 400), resp.text
    if resp.status_code == 400:
        assert resp.json()["error"] in {"INVALID_DOMAINS", "INVALID_DOMAIN", "UNKNOWN_FIELD"}


def test_a_restart_sweeps_everything_only_when_the_rules_changed(
    service: ShortenerService, api: LinkApi, shortener: Shortener, clock: Any
) -> None:
    key = api.create({"longUrl": "https://shop.example.net/"}).body["key"]
    first = _scanner(shortener, clock=clock)
    first.drain()
    assert first.full_sweeps == 1 and service.get(key).scan_verdict == "SAFE"
    again = _scanner(shortener, clock=clock)  # same rules: no full sweep at start
    assert again.drain() == 0 and again.full_sweeps == 0
    with shortener.blocklist.path.open("a") as fh:  # edited while "the server was down"
        fh.write("example.net\n")
    shortener.blocklist._reload(force=True)
    after = _scanner(shortener, clock=clock)
    after.drain()
    assert after.full_sweeps == 1 and service.get(key).status is Status.DISABLED


def test_the_reasons_behind_a_verdict_are_kept_and_shown(
    make_app: Callable[..., Any], admin: Callable[[Any], dict[str, str]], auth: dict[str, str]
) -> None:
    """The rules and blocklist entries that fired are stored with the verdict and shown
    wherever it is: the link's API view, its preview page and the warning page."""
    app = make_app(scanner=True)
    url = "https://paypal.com.account-verify.top/login"
    bad = app.client.post("/v1/links", json={"longUrl": url}, headers=auth).json()["key"]
    plain = "https://sub.example.org/a"
    key = app.client.post("/v1/links", json={"longUrl": plain}, headers=auth).json()["key"]
    oracle = assess(url, app.shortener.blocklist, app.shortener.scanner.feed_file.current())
    assert oracle.verdict == "MALICIOUS" and len(oracle.reasons) >= 2
    assert eventually(lambda: _link(app, bad).scan_reasons == oracle.reasons)
    assert eventually(lambda: _link(app, key).scan_verdict == "SAFE")
    view = app.client.get(f"/v1/links/{bad}", headers=auth).json()
    assert view["scanVerdict"] == "MALICIOUS" and view["scanReasons"] == list(oracle.reasons)
    preview = app.client.get(f"/{bad}+").text
    warning = app.client.get(f"/{bad}", follow_redirects=False).text
    for reason in oracle.reasons:  # none has an HTML-special character to escape
        assert f"<li>{reason}</li>" in preview and f"<li>{reason}</li>" in warning
    assert app.client.get(f"/v1/links/{key}", headers=auth).json()["scanReasons"] == []
    assert "No safety rule fired" in app.client.get(f"/{key}+").text
    # A blocklist entry is a reason too, and a clean rescan clears it again.
    app.client.post("/v1/shortener/blocklist", json={"add": ["example.org"]}, headers=admin(app))
    assert eventually(lambda: _link(app, key).scan_reasons == ("example.org is on the blocklist",))
    assert "<li>example.org is on the blocklist</li>" in app.client.get(f"/{key}+").text
    app.client.post("/v1/shortener/blocklist", json={"remove": ["example.org"]}, headers=admin(app))
    assert eventually(lambda: _link(app, key).status is Status.ACTIVE)
    assert _link(app, key).scan_reasons == ()


def test_a_failing_round_is_counted_and_the_scanner_keeps_running(
    shortener: Shortener, clock: Any
) -> None:
    class FlakyStore:
        """The real store, except the sweep's first two pages fail."""

        def __init__(self) -> None:
            self.failures_left = 2

        def __getattr__(self, name: str) -> Any:
            return getattr(shortener.store, name)

        def iter_links(self, **kw: Any) -> Any:
            if self.failures_left:
                self.failures_left -= 1
                raise RuntimeError("the store is briefly down")
            return shortener.store.iter_links(**kw)

    scanner = Scanner(
        FlakyStore(), shortener.service, shortener.blocklist,  # type: ignore[arg-type]
        state_dir=shortener.dir, clock=clock, tick_s=0.01, resolve=no_dns,
    )  # fmt: skip
    scanner.start()
    try:
        assert eventually(lambda: scanner.full_sweeps == 1)  # it got past the failures
        assert scanner.stats()["errors"] == 2
    finally:
        scanner.stop()
    assert not scanner._task.running
