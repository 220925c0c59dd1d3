"""The sandbox web is what its manifest says it is (the ground truth must itself be true)."""

from __future__ import annotations

import ssl
import time
from urllib.parse import unquote, urlsplit

import httpx
import pytest

from lookup.crawler.dedup import content_hash, hamming, simhash
from lookup.crawler.fetcher import tls_context
from lookup.crawler.parse import parse_html
from lookup.crawler.sandbox import Sandbox, SandboxConfig
from lookup.crawler.sandbox.web import Request
from lookup.kit.urlnorm import normalize_url


def get(
    web: Sandbox, url: str, *, verify: ssl.SSLContext | None = None, **headers: str
) -> httpx.Response:
    """GET a sandbox URL at its host's address (http, or https with the sandbox's CA)."""
    parts = urlsplit(url)
    name = parts.hostname or ""
    https = parts.scheme == "https"
    target = f"{parts.scheme}://{web.hosts()[name]}:{parts.port}{parts.path or '/'}"
    if parts.query:
        target += "?" + parts.query
    context = verify or (tls_context(web.ca_path) if https else None)
    with httpx.Client(verify=context or True, timeout=10, trust_env=False) as client:
        request = client.build_request(
            "GET",
            target,
            headers={"Host": parts.netloc, **headers},
            extensions={"sni_hostname": name} if https else {},
        )
        return client.send(request)


def test_hosts_live_on_their_own_loopback_addresses(web: Sandbox) -> None:
    hosts = web.hosts()
    assert hosts["docs.sandbox.test"] == hosts["www.docs.sandbox.test"] == "127.0.0.2"
    assert hosts["blog.sandbox.test"] == hosts["wiki.sandbox.test"]  # shared hosting
    assert hosts["moved.sandbox.test"] == hosts["www.moved.sandbox.test"]  # moved to www
    addresses = list(hosts.values())
    shared = {a for a in addresses if addresses.count(a) > 1}
    assert shared == {"127.0.0.2", hosts["blog.sandbox.test"], hosts["moved.sandbox.test"]}
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
        assert normalize_url(v["raw"], base) == v["normal"]
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


def test_every_link_of_the_sandbox_web_leads_to_a_page() -> None:
    """Walk each host from its front page in process (every handler renders what its
    links name): no handler fails, no link is broken, every redirect lands somewhere."""
    web = Sandbox(SandboxConfig.small())
    w = web.world
    key_of = {w.names[k]: k for k in web.sites.handlers}
    queue = [w.url(k, "/") for k in web.sites.handlers]
    seen, per_host, answered = set(queue), dict.fromkeys(key_of, 0), set()
    for url in queue:  # grows while it is walked
        parts = urlsplit(url)
        key = key_of[parts.hostname or ""]
        if per_host[w.names[key]] >= 40:  # traps never end: a bounded walk of each host
            continue
        per_host[w.names[key]] += 1
        req = Request(w.names[key], w.addresses[key], "GET", unquote(parts.path), parts.query, {})
        resp = web.sites.handlers[key].handle(req)
        assert resp.status in (200, 301, 302, 303, 307, 429), (url, resp.status)
        answered.add(key)
        links = [v for k, v in resp.headers if k == "Location"]
        if resp.status == 200 and resp.stream is None and "html" in (resp.content_type or ""):
            body = resp.body if isinstance(resp.body, str) else resp.body.decode("utf-8", "replace")
            links += parse_html(body).links
        for link in links:
            target = normalize_url(link, url)
            if target and target.startswith("http://") and urlsplit(target).hostname in key_of:
                if target not in seen:
                    seen.add(target)
                    queue.append(target)
    assert answered == set(web.sites.handlers)
    assert sum(per_host.values()) > 150


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


def test_docs_is_served_over_tls_with_the_sandboxs_own_ca(web: Sandbox) -> None:
    tls = web.manifest()["tls"]
    assert tls["hosts"] == ["docs.sandbox.test"] and tls["port"] == web.tls_port
    assert httpx.get(tls["ca"]).content == web.ca_pem
    before = len(web.log)
    for pair in tls["https_variants"]:
        plain, secure = get(web, pair["http"]), get(web, pair["https"])
        assert plain.status_code == secure.status_code == 200
        assert parse_html(plain.text).text == parse_html(secure.text).text  # the same page
    logged = web.log.entries(before)
    assert {(e.scheme, e.port) for e in logged} == {("http", web.port), ("https", web.tls_port)}
    # Verification is real: without the sandbox's CA the certificate does not verify ...
    with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        get(web, tls["https_variants"][0]["https"], verify=ssl.create_default_context())
    # ... and a name without a certificate is misdirected on the TLS port.
    www = f"https://www.docs.sandbox.test:{web.tls_port}/"
    context = tls_context(web.ca_path)
    context.check_hostname = False  # the certificate names docs only; ask as www anyway
    assert get(web, www, verify=context).status_code == 421


def test_a_sandbox_without_tls_has_no_ca() -> None:
    with Sandbox(SandboxConfig.small(tls_hosts=())) as plain:
        assert plain.tls_port is None and plain.manifest()["tls"]["hosts"] == []
        assert httpx.get(f"{plain.control_url}/_sandbox/ca.pem").status_code == 404
        with pytest.raises(RuntimeError):
            _ = plain.ca_pem
    with pytest.raises(ValueError, match="nowhere"):
        Sandbox(SandboxConfig.small(tls_hosts=("nowhere",)))


def test_planted_soft_404s_answer_200_and_the_log_knows(web: Sandbox) -> None:
    before = len(web.log)
    for url in web.manifest()["soft_404s"]:
        r = get(web, url)
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    # Hosts that soft-404 everything, and one that only does so for stories.
    assert get(web, web.url("calendar", "/no/such/page")).status_code == 200
    assert get(web, web.url("shop", "/no-such-aisle")).status_code == 200
    assert get(web, web.url("news", "/no-such-page.html")).status_code == 404
    # Real pages are not soft 404s.
    assert get(web, web.url("news", "/")).status_code == 200
    logged = web.log.entries(before)
    assert [e.soft_404 for e in logged] == [True] * (len(logged) - 2) + [False, False]
    # The shop's catch-all never says "not found": only a probe can reveal it.
    catch_all = parse_html(get(web, web.manifest()["soft_404s"][-1]).text)
    assert "found" not in catch_all.text.lower() and "404" not in catch_all.text
