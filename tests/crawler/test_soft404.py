"""The soft-404 classifier on pages whose answer is known (the sandbox's own pages)."""

from __future__ import annotations

from lookup.crawler.parse import parse_html
from lookup.crawler.sandbox import Sandbox, SandboxConfig
from lookup.crawler.sandbox.web import Request, Response
from lookup.crawler.soft404 import (
    NOT_FOUND_WORDING,
    ProbeSignature,
    classify,
    masked_words,
    probe_path,
)

SANDBOX = Sandbox(SandboxConfig.small())  # never started: its sites answer in-process


def _answer(key: str, path: str, query: str = "") -> Response:
    w = SANDBOX.world
    req = Request(w.names[key], w.addresses[key], "GET", path, query, {})
    return SANDBOX.sites.handlers[key].handle(req)


def _verdict(key: str, path: str, probe: ProbeSignature | None):  # type: ignore[no-untyped-def]
    resp = _answer(key, path)
    body = resp.body.decode() if isinstance(resp.body, bytes) else resp.body
    parsed = parse_html(body)
    url = SANDBOX.world.url(key, path)
    return resp, classify(url, title=parsed.title, heading=parsed.heading, text=parsed.text,
                          probe=probe)  # fmt: skip


def _probe(key: str) -> ProbeSignature:
    path = probe_path()
    resp = _answer(key, path)
    body = resp.body.decode() if isinstance(resp.body, bytes) else resp.body
    parsed = parse_html(body) if resp.status == 200 else None
    return ProbeSignature(
        SANDBOX.world.names[key],
        SANDBOX.world.url(key, path),
        resp.status,
        parsed.title if parsed else "",
        parsed.text if parsed else "",
    )


def test_probe_paths_are_random_and_unused() -> None:
    a, b = probe_path(), probe_path()
    assert a != b and a.startswith("/lookupbot-probe-")
    assert _answer("docs", a).status == 404
    assert _answer("shop", a).status == 200 and _answer("calendar", a).status == 200


def test_the_probe_reveals_a_catch_all_that_never_says_not_found() -> None:
    probe = _probe("shop")
    assert probe.soft
    for path in ("/gift-cards", "/clearance/2019", "/some/other/aisle"):
        resp, v = _verdict("shop", path, probe)
        assert resp.soft_404 and v.is_soft_404 and v.method == "probe-exact", (path, v)
        assert "cannot exist" in v.reason
        _, blind = _verdict("shop", path, None)  # without the probe: nothing to go on
        assert not blind.is_soft_404
    # The shop's real pages are not like its catch-all.
    for path, query in (("/", ""), ("/products", ""), ("/products", "colour=red&page=3"),
                        ("/product/2", "")):  # fmt: skip
        resp = _answer("shop", path, query)
        parsed = parse_html(resp.body if isinstance(resp.body, str) else resp.body.decode())
        url = SANDBOX.world.url("shop", path + ("?" + query if query else ""))
        v = classify(url, title=parsed.title, heading=parsed.heading, text=parsed.text,
                     probe=probe)  # fmt: skip
        assert not resp.soft_404 and not v.is_soft_404, (path, query, v)


def test_the_wording_catches_a_soft_404_on_a_host_whose_probe_gets_a_real_404() -> None:
    probe = _probe("news")
    assert probe.status == 404 and not probe.soft
    for url in SANDBOX.sites.handlers["news"].soft_404s():
        path = url.split(str(SANDBOX.port), 1)[1]
        resp, v = _verdict("news", path, probe)
        assert resp.soft_404 and v.is_soft_404 and v.method == "wording", v
    story = SANDBOX.sites.handlers["news"].stories[0].slug
    for kind in ("story", "live", "promo"):
        resp, v = _verdict("news", f"/{kind}/{story}.html", probe)
        assert not resp.soft_404 and not v.is_soft_404, (kind, v)


def test_an_echoed_url_does_not_hide_a_match() -> None:
    probe = _probe("calendar")
    resp, v = _verdict("calendar", "/events/a-very-different-name-2031", probe)
    assert resp.soft_404 and v.is_soft_404 and v.method == "probe-exact"
    # The page echoes its own path: unmasked, the texts differ.
    page = parse_html(resp.body if isinstance(resp.body, str) else resp.body.decode()).text
    assert page != probe.text
    url = SANDBOX.world.url("calendar", "/events/a-very-different-name-2031")
    assert masked_words(page, url) == masked_words(probe.text, probe.url)
    for path in ("/cal/2026/11.html", "/cal/1999/01.html", "/guide/", "/guide/intro/"):
        resp, v = _verdict("calendar", path, probe)
        assert not resp.soft_404 and not v.is_soft_404, (path, v)


def test_near_matches_and_the_root_page() -> None:
    text = (
        "Sorry this page is gone but here are some other things you may like in our big "
        "shop of many useful functions for every purpose and more every day of the week"
    )
    probe = ProbeSignature("h", "http://h/zzz-probe", 200, "Shop", text)
    edited = text.replace("every day", "each day")
    v = classify("http://h/a", title="Shop", heading="", text=edited, probe=probe)
    assert v.is_soft_404 and v.method == "probe-near" and v.score is not None
    assert 0.7 <= v.score < 1.0
    # A host that serves its home page for every unknown URL keeps its home page.
    assert not classify("http://h/", title="Shop", heading="", text=text, probe=probe).is_soft_404
    other = "Completely different text about binary search trees and their balance factors."
    assert not classify("http://h/b", title="BST", heading="", text=other, probe=probe).is_soft_404


def test_wording_needs_a_short_page() -> None:
    assert NOT_FOUND_WORDING.search("Sorry, we couldn't find that page")
    assert NOT_FOUND_WORDING.search("This story cannot be found")
    assert NOT_FOUND_WORDING.search("Error 404")
    assert not NOT_FOUND_WORDING.search("found a bug? open an issue")
    short = classify("http://h/x", title="Page not found", heading="", text="Oops.", probe=None)
    assert short.is_soft_404 and "title" in short.reason
    long_text = "FileNotFoundError is raised when a file does not exist. " * 40
    doc = classify("http://h/os", title="os — not found errors", heading="", text=long_text,
                   probe=None)  # fmt: skip
    assert not doc.is_soft_404
    # Every real module page of the documentation host stays a page.
    docs = SANDBOX.sites.handlers["docs"]
    probe = _probe("docs")
    for mod in docs.modules:
        resp, v = _verdict("docs", f"/lib/{mod}.html", probe)
        assert resp.status == 200 and not v.is_soft_404, mod
