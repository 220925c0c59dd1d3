"""The sandbox web is what its manifest says it is (the ground truth must itself be true)."""

from __future__ import annotations

import time

import httpx
import pytest

from lookup.crawler.dedup import content_hash, hamming, simhash
from lookup.crawler.parse import parse_html
from lookup.crawler.sandbox import Sandbox, SandboxConfig
from lookup.crawler.sandbox.web import Request
from lookup.crawler.urlnorm import normalize


def get(web: Sandbox, url: str, **headers: str) -> httpx.Response:
    host, _, rest = url.removeprefix("http://").partition("/")
    name = host.split(":")[0]
    return httpx.get(
        f"http://{web.hosts()[name]}:{web.port}/{rest}",
        headers={"Host": host, **headers},
        timeout=10,
    )


def test_hosts_live_on_their_own_loopback_addresses(web: Sandbox) -> None:
    hosts = web.hosts()
    assert hosts["docs.sandbox.test"] == hosts["www.docs.sandbox.test"] == "127.0.0.2"
    assert hosts["blog.sandbox.test"] == hosts["wiki.sandbox.test"]  # shared hosting
    assert len(set(hosts.values())) == 12
    r = httpx.get(f"http://127.0.0.3:{web.port}/", headers={"Host": "docs.sandbox.test"})
    assert r.status_code == 421  # a name on the wrong address is misdirected


@pytest.mark.parametrize(
    "key,status", [("docs", 200), ("blog", 404), ("closed", 503), ("busy", 200), ("wiki", 200)]
)
def test_robots_txt_cases(web: Sandbox, key: str, status: int) -> None:
    assert get(web, web.url(key, "/robots.txt")).status_code == status


def test_exact_duplicate_clusters_really_are_identical(web: Sandbox) -> None:
    for cluster in web.manifest()["duplicates"]:
        texts = [parse_html(get(web, m["url"]).text).text for m in cluster["members"]]
        if cluster["kind"] == "exact":
            assert len({content_hash(t) for t in texts}) == 1, cluster
        else:
            assert len({content_hash(t) for t in texts}) == len(texts)  # all differ ...
            base = simhash(texts[0])
            assert all(hamming(base, simhash(t)) <= 8 for t in texts)  # ... a little


def test_url_variants_serve_the_same_page(web: Sandbox) -> None:
    base = web.seeds()[0]
    for v in web.manifest()["url_variants"]:
        canonical = parse_html(get(web, v["normal"]).text).text
        assert normalize(v["raw"], base) == v["normal"]
        if v["raw"].startswith("/lib/") and "?utm_" in v["raw"]:
            # Tracking parameters reach the server and change nothing.
            assert parse_html(get(web, web.url("docs", v["raw"])).text).text == canonical


def test_traps_never_end(web: Sandbox) -> None:
    assert get(web, web.url("calendar", "/cal/9999/12.html")).status_code == 200
    assert get(web, web.url("calendar", "/guide/guide/guide/guide/")).status_code == 200
    soft = get(web, web.url("calendar", "/events/anything-at-all"))
    assert soft.status_code == 200 and "couldn't find" in soft.text  # a soft 404
    facets = get(web, web.url("shop", "/products?colour=red&size=m&sort=name&page=7"))
    assert facets.status_code == 200 and "/products?" in facets.text


def test_busy_host_answers_429_then_503_with_retry_after() -> None:
    web = Sandbox(SandboxConfig.small())
    site = web.sites.handlers["busy"]
    req = Request("busy.sandbox.test", "127.0.0.11", "GET", "/", "", {})
    answers = [site.handle(req) for _ in range(4)]
    assert [a.status for a in answers] == [429, 429, 503, 200]
    assert ("Retry-After", "1") in answers[0].headers


def test_pages_change_at_their_own_rates() -> None:
    web = Sandbox(SandboxConfig.small(time_scale=1000.0))
    blog = web.sites.handlers["blog"]
    def req(slug: str) -> Request:
        return Request("blog.sandbox.test", "127.0.0.7", "GET", f"/post/{slug}.html", "", {})

    fast, never = blog.posts[0][0], blog.posts[4 % len(blog.posts)][0]
    periods = {c["url"].rsplit("/", 1)[-1]: c["period"] for c in web.manifest()["changing"]}
    assert periods[f"{fast}.html"] == 30.0
    before = (blog.handle(req(fast)).body, blog.handle(req(never)).body)
    time.sleep(0.08)  # 80 s on the scaled clock
    after = (blog.handle(req(fast)).body, blog.handle(req(never)).body)
    assert before[0] != after[0]
    if periods.get(f"{never}.html") is None:
        assert before[1] == after[1]


def test_wiki_sitemap_lists_lastmod(web: Sandbox) -> None:
    xml = get(web, web.url("wiki", "/sitemap.xml")).text
    assert "<lastmod>" in xml and "/wiki/" in xml


def test_every_request_is_logged(web: Sandbox) -> None:
    before = len(web.log)
    get(web, web.url("mirror", "/"))
    entry = web.log.entries(before)[-1]
    assert (entry.host, entry.address, entry.path, entry.status) == (
        "mirror.sandbox.test", "127.0.0.3", "/", 200,
    )  # fmt: skip
    assert entry.end >= entry.start and entry.wall > 0
    log = httpx.get(f"{web.control_url}/_sandbox/log?since={before}").text
    assert '"mirror.sandbox.test"' in log
