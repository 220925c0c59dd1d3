"""A whole crawl of the sandbox web, judged from the sandbox's own request log.

The server logs when each request arrived and when its answer was complete (a
lower bound of the moment the crawler had it), so every politeness rule can be
checked from the side of the site being crawled, against the manifest's ground
truth of duplicates, traps, robots cases and hostile hosts.
"""

from __future__ import annotations

from collections import defaultdict
from urllib.parse import urlsplit

from protego import Protego

from lookup.crawler import normalize_url, read_events, read_record, url_hash
from lookup.crawler.sandbox import LoggedRequest
from lookup.crawler.sandbox.web import Request, Response
from lookup.crawler.session import FAILED_OUTCOMES
from tests.crawler.conftest import DELAY_FACTOR, HOST_BUDGET, MIN_DELAY, CrawlRun, request_url

# A stream the crawler cut off at its size cap ends, on the server, when the server
# notices: up to a few scheduler ticks after the crawler let go.
ABORT_SLACK = 0.05


def _by(log: list[LoggedRequest], key: str) -> dict[str, list[LoggedRequest]]:
    groups: dict[str, list[LoggedRequest]] = defaultdict(list)
    for e in log:
        groups[getattr(e, key)].append(e)
    for entries in groups.values():
        entries.sort(key=lambda e: e.start)
    return groups


def _robots_txt(run: CrawlRun, host: str) -> Response:
    key = next(h["key"] for h in run.manifest["hosts"] if h["name"] == host)
    site = run.web.sites.handlers[key]
    addr = run.web.hosts()[host]
    return site.handle(Request(host, addr, "GET", "/robots.txt", "", {}))


def test_the_crawl_finishes_and_reports(crawl_run: CrawlRun) -> None:
    r = crawl_run.report
    # Everything reachable was crawled; what is left waits for an unreadable robots.txt.
    assert r.stop_reason in ("done", "waiting-robots")
    assert r.pages > 50 and r.events > 20
    assert r.outcomes.get("crawler-error", 0) == 0
    assert (crawl_run.out / "report.json").exists()


def test_never_two_requests_in_flight_to_one_host_or_one_address(crawl_run: CrawlRun) -> None:
    for key in ("host", "address"):
        for name, entries in _by(crawl_run.log, key).items():
            for prev, nxt in zip(entries, entries[1:], strict=False):
                assert nxt.start >= prev.end - (ABORT_SLACK if prev.aborted else 0), (
                    f"{key} {name}: {nxt.target} started before {prev.target} ended"
                )


def test_never_closer_than_the_hosts_delay(crawl_run: CrawlRun) -> None:
    delays = crawl_run.manifest["robots"]["crawl_delay"]
    retry_after = crawl_run.manifest["hostile"]["retry_after"]
    for key in ("host", "address"):
        for name, entries in _by(crawl_run.log, key).items():
            streak = 0  # consecutive 429/503 answers from this host
            for prev, nxt in zip(entries, entries[1:], strict=False):
                gap = nxt.start - prev.end + (ABORT_SLACK if prev.aborted else 0)
                # Crawl-delay applies once robots.txt has been read (not to that request).
                crawl_delay = delays.get(prev.host, 0.0) if prev.path != "/robots.txt" else 0.0
                duration = prev.end - prev.start if not prev.aborted else 0.0
                floor = max(MIN_DELAY, DELAY_FACTOR * duration, crawl_delay)
                if key == "host" and prev.status in (429, 503) and prev.path != "/robots.txt":
                    streak += 1
                    # Retry-After honoured, doubling on every further refusal.
                    floor = max(floor, retry_after * 2 ** (streak - 1))
                elif key == "host":
                    streak = 0
                assert gap >= floor, f"{key} {name}: {gap:.4f}s before {nxt.target}, need {floor}"


def test_robots_txt_is_the_first_request_to_every_host(crawl_run: CrawlRun) -> None:
    for host, entries in _by(crawl_run.log, "host").items():
        assert entries[0].path == "/robots.txt", host


def test_nothing_disallowed_is_ever_fetched(crawl_run: CrawlRun) -> None:
    requested = crawl_run.requested()
    for url in crawl_run.manifest["robots"]["disallowed"]:
        assert url not in requested
        row = crawl_run.url_row(normalize_url(url) or url)
        assert row is not None and row["state"] == "blocked", url
    # And every request agrees with the host's robots.txt for our agent.
    agent = crawl_run.manifest["agent"]
    parsers: dict[str, Protego | None] = {}
    for e in crawl_run.log:
        if e.path == "/robots.txt":
            continue
        if e.host not in parsers:
            resp = _robots_txt(crawl_run, e.host)
            body = resp.body.decode() if isinstance(resp.body, bytes) else resp.body
            parsers[e.host] = Protego.parse(body) if resp.status == 200 else None
        parser = parsers[e.host]
        if parser is not None:
            assert parser.can_fetch(f"http://{e.host}{e.target}", agent), e.target


def test_our_agent_group_and_wildcards_are_used(crawl_run: CrawlRun) -> None:
    requested = crawl_run.requested()
    # "User-agent: *" disallows /lib/ but our own group allows it.
    docs_lib = [u for u in requested if "docs.sandbox.test" in u and "/lib/" in u]
    assert docs_lib
    for url in crawl_run.manifest["robots"]["allowed_by_wildcard"]:
        assert url in requested, url


def test_nothing_but_robots_txt_from_hosts_whose_robots_txt_fails(crawl_run: CrawlRun) -> None:
    by_host = _by(crawl_run.log, "host")
    for host in crawl_run.manifest["robots"]["failing_hosts"]:
        assert by_host[host], f"{host} was never even asked for robots.txt"
        assert {e.path for e in by_host[host]} == {"/robots.txt"}, host
        # Its URLs are still queued, waiting until robots.txt can be read.
        queued = crawl_run.rows(
            "SELECT url FROM urls WHERE host LIKE ? AND state = 'queued'", host + "%"
        )
        assert queued


def test_a_missing_robots_txt_means_crawl_freely(crawl_run: CrawlRun) -> None:
    for host in crawl_run.manifest["robots"]["missing_hosts"]:
        pages = [e for e in crawl_run.log if e.host == host and e.path != "/robots.txt"]
        assert len(pages) >= 3


def test_noindex_and_nofollow_are_honoured(crawl_run: CrawlRun) -> None:
    requested = crawl_run.requested()
    events = {e["url"] for e in read_events(crawl_run.out / "events.jsonl")}
    for url in crawl_run.manifest["robots"]["noindex"]:
        assert url in requested  # fetched (to read its directives) ...
        assert url not in events  # ... but never sent to the indexer
        assert crawl_run.url_row(url)["outcome"] == "noindex"
    for url in crawl_run.manifest["robots"]["nofollow_only"]:
        assert url not in requested


def test_trap_hosts_are_bounded_by_their_budget(crawl_run: CrawlRun) -> None:
    by_host = _by(crawl_run.log, "host")
    for trap in crawl_run.manifest["traps"]:
        pages = {e.target for e in by_host[trap["host"]] if e.path != "/robots.txt"}
        assert len(pages) <= HOST_BUDGET, trap
    cuts = {r["rule"] for r in crawl_run.rows("SELECT rule FROM cuts")}
    # The layered defences each caught something, and each cut names its rule.
    assert {"host-budget", "repeated-segments", "session-param", "redirect-limit"} <= cuts
    assert not crawl_run.rows("SELECT * FROM cuts WHERE rule = '' OR rule IS NULL")


def accounted_requests(run: CrawlRun) -> dict[str, int]:
    """How many requests to each URL the crawler's own record accounts for.

    One fetch, plus one more for every answer the fetch log marks as tried again
    (``retry:timeout``, ``retry:http-503``, …): a timeout is recorded even when the
    sandbox had already written the whole body into the socket (it then logs the answer
    complete, not aborted — seen under load with ``/huge-chunked.html``, read past the
    1 s deadline). A host's soft-404 probe: as many times as the host row counts.
    """
    accounted: dict[str, int] = defaultdict(lambda: 1)
    retried = "SELECT url, COUNT(*) FROM fetches WHERE outcome LIKE 'retry:%' GROUP BY url"
    for url, n in run.rows(retried):
        accounted[url] += n
    probes = "SELECT probe_url, probe_attempts FROM hosts WHERE probe_url IS NOT NULL"
    for url, attempts in run.rows(probes):
        accounted[normalize_url(url) or url] = max(1, attempts)
    return accounted


def unaccounted_requests(run: CrawlRun, log: list[LoggedRequest]) -> dict[str, str]:
    """URLs the sandbox was asked for more often than the crawler's record explains."""
    asked: dict[str, int] = defaultdict(int)
    for e in log:
        if e.path != "/robots.txt":  # re-read on expiry and failure: its own tests
            asked[normalize_url(request_url(e)) or e.target] += 1
    accounted = accounted_requests(run)
    over: dict[str, str] = {}
    for url, n in asked.items():
        if n > accounted[url]:
            record = run.rows("SELECT outcome FROM fetches WHERE url = ? ORDER BY id", url)
            over[url] = f"asked {n}×, recorded: {', '.join(r[0] for r in record)}"
    return over


def test_no_url_is_fetched_twice_in_one_cycle(crawl_run: CrawlRun) -> None:
    # Every request the sandbox saw, aborted or refused ones included, is one fetch or
    # a retry the crawler recorded (a timeout, a 429/503, another 5xx) — never two fetches.
    assert not unaccounted_requests(crawl_run, crawl_run.log)


def test_a_double_fetch_would_be_caught(crawl_run: CrawlRun) -> None:
    log = crawl_run.log
    ok = {r["url"] for r in crawl_run.rows("SELECT url FROM urls WHERE outcome = 'ok'")}
    once = next(e for e in log if normalize_url(request_url(e)) in ok)
    stall = normalize_url(crawl_run.manifest["hostile"]["stall"])
    retried = [e for e in log if normalize_url(request_url(e)) == stall]
    assert len(retried) == 2  # a timeout, then the retry that gave up
    # One request more than the record explains — to a page, or to a retried URL — fails.
    doubled = unaccounted_requests(crawl_run, [*log, once, retried[-1]])
    assert set(doubled) == {normalize_url(request_url(once)), stall}, doubled


def test_url_variants_collapse_before_fetching(crawl_run: CrawlRun) -> None:
    for e in crawl_run.log:
        assert "utm_" not in e.target and "sessionid" not in e.target.lower(), e.target
        assert "jsessionid" not in e.target.lower() and "sid=" not in e.target
    requested = crawl_run.requested()
    for v in crawl_run.manifest["url_variants"]:
        assert normalize_url(v["raw"], crawl_run.manifest["seeds"][0]) == v["normal"]
        assert v["normal"] in requested


def test_every_known_duplicate_is_detected_by_kind(crawl_run: CrawlRun) -> None:
    for cluster in crawl_run.manifest["duplicates"]:
        urls = [m["url"] for m in cluster["members"]]
        rows = [crawl_run.url_row(u) for u in urls]
        assert all(r is not None and r["state"] == "done" for r in rows), urls
        originals = [r for r in rows if r["outcome"] == "ok"]
        dups = [r for r in rows if r["outcome"] == "duplicate"]
        assert len(originals) == 1 and len(dups) == len(urls) - 1, [
            (r["url"], r["outcome"]) for r in rows
        ]
        for d in dups:
            assert d["dup_of"] in urls  # it names a page of its own cluster
            if cluster["kind"] == "exact":
                assert d["dup_kind"] == "exact", d["url"]
            else:
                assert d["dup_kind"] in ("simhash", "minhash"), (d["url"], d["dup_kind"])


def test_distinct_pages_are_not_called_duplicates(crawl_run: CrawlRun) -> None:
    in_clusters = {m["url"] for c in crawl_run.manifest["duplicates"] for m in c["members"]}
    port = crawl_run.web.port
    distinct_hosts = {f"blog.sandbox.test:{port}", f"wiki.sandbox.test:{port}"}
    for row in crawl_run.rows("SELECT * FROM urls WHERE outcome = 'duplicate'"):
        if row["url"] in in_clusters:
            continue
        assert row["host"] not in distinct_hosts, row["url"]
        assert "/lib/" not in row["url"] and "/story/" not in row["url"], row["url"]


def test_hostile_hosts_are_survived(crawl_run: CrawlRun) -> None:
    h = crawl_run.manifest["hostile"]
    outcome = {r["url"]: r["outcome"] for r in crawl_run.rows("SELECT url, outcome FROM urls")}
    assert all(outcome[u] == "too-large" for u in h["oversize"])
    assert outcome[h["binary_as_html"]] == "binary"
    assert all(outcome[u] == "not-html" for u in h["non_html"])
    assert outcome[h["damaged_pdf"]] == "unreadable-pdf"  # a page may be a PDF, not this one
    assert outcome[h["stall"]] == "timeout"
    assert outcome[h["malformed"]] == "ok"
    assert all(outcome[u] == "ok" for u in h["malformed_links"])
    requested = crawl_run.requested()
    assert not set(h["never_linked"]) & requested
    # An oversize page is dropped at the cap — by its declared length, or while reading
    # one that declares none — and nothing of it is stored.
    declared, chunked = (crawl_run.url_row(u) for u in h["oversize"])
    assert declared["storage_key"] is None and chunked["storage_key"] is None
    assert declared["reason"].startswith("Content-Length")
    assert chunked["reason"].startswith("body over")
    # The busy host's pages all arrived in the end.
    pages = {r["url"] for r in crawl_run.rows("SELECT url FROM urls WHERE kind = 'page'")}
    busy = [u for u in pages if h["busy"] in u]
    assert busy and all(outcome[u] == "ok" for u in busy)


def test_redirects_go_through_the_filter_one_hop_at_a_time(crawl_run: CrawlRun) -> None:
    r = crawl_run.manifest["hostile"]["redirects"]
    requested = crawl_run.requested()
    assert set(r["chain"]) <= requested  # every hop, each its own polite request
    assert set(r["loop"]) <= requested
    loops = [e for e in crawl_run.log if e.path in ("/loop/a", "/loop/b")]
    assert len(loops) == 2  # the loop ends at the seen-check
    assert r["long_end"] not in requested  # the limit cut the long chain ...
    assert crawl_run.rows("SELECT * FROM cuts WHERE rule = 'redirect-limit'")
    assert r["cross_host"]["to"] in requested  # ... a cross-host hop joins that host's queue
    assert r["to_disallowed"]["to"] not in requested


def test_events_carry_the_seed_contract(crawl_run: CrawlRun) -> None:
    events = read_events(crawl_run.out / "events.jsonl")
    assert len(events) == crawl_run.report.events
    keys = set()
    fetched = [ev for ev in events if ev["type"] == "PageFetched"]
    for ev in events:  # in one cycle a page leaves only for its cluster's declared canonical
        if ev["type"] == "PageRemoved":
            assert ev["reason"] == "duplicate", ev
            assert ev["duplicateOf"] in {f["url"] for f in fetched} and ev["url"] in {
                f["url"] for f in fetched
            }, ev
    assert len(fetched) > len(events) - len(fetched)
    events = fetched
    for ev in events:
        assert ev["type"] == "PageFetched"
        assert {
            "url", "urlHash", "fetchedAt", "httpStatus", "contentHash", "simhash",
            "storageKey", "outLinks", "changed",
        } <= set(ev)  # fmt: skip
        assert ev["urlHash"] == url_hash(ev["url"])
        assert ev["contentHash"].startswith("sha256:") and ev["simhash"].startswith("0x")
        assert ev["httpStatus"] == 200 and ev["changed"] is True
        keys.add((ev["urlHash"], ev["contentHash"]))
    assert len(keys) == len(events)
    # Each storage key reads back the page that was fetched.
    for ev in events[:10]:
        kind, headers, body = read_record(crawl_run.out, ev["storageKey"])
        assert kind == "response" and body
    dup = crawl_run.rows("SELECT storage_key FROM urls WHERE dup_kind = 'exact' LIMIT 1")
    assert read_record(crawl_run.out, dup[0][0])[0] == "revisit"


def test_sitemaps_from_robots_txt_are_read_with_their_lastmod(crawl_run: CrawlRun) -> None:
    for sitemap in crawl_run.manifest["sitemaps"]:
        assert crawl_run.url_row(sitemap)["outcome"] == "sitemap"
    wiki = crawl_run.rows(
        "SELECT sitemap_lastmod FROM urls WHERE url LIKE '%wiki.sandbox.test%/wiki/%'"
    )
    assert wiki and all(r["sitemap_lastmod"] for r in wiki)


def test_the_store_explains_every_duplicate_and_every_block(crawl_run: CrawlRun) -> None:
    from lookup.crawler import open_crawl_reader
    from lookup.crawler.store import crawl_state_url

    with open_crawl_reader(crawl_state_url(crawl_run.out)) as store:
        dups = store.urls_with_outcome("duplicate")
        assert dups and all(d.dup_of and d.dup_kind for d in dups)
        assert {d.dup_kind for d in dups} >= {"exact"}
        blocked = store.blocked()
        assert blocked and all(b.reason for b in blocked)
        assert {c.rule for c in store.cuts()} == set(store.count_cuts())
        assert store.fetch_log()[0].kind == "robots"


def _probe_urls(run: CrawlRun) -> dict[str, str]:
    return {r["host"]: r["probe_url"] for r in run.rows("SELECT host, probe_url FROM hosts")}


def test_every_planted_soft_404_is_detected_and_no_real_page_is(crawl_run: CrawlRun) -> None:
    # The oracle is the sandbox itself: its log marks every answer that was a planted
    # soft 404 (the crawler never sees that mark).
    probes = set(_probe_urls(crawl_run).values())
    judged = soft = 0
    for e in crawl_run.log:
        url = normalize_url(request_url(e))
        if e.status != 200 or e.path == "/robots.txt" or url in probes:
            continue
        row = crawl_run.url_row(url or "")
        if row is None or row["kind"] != "page" or row["outcome"] in FAILED_OUTCOMES:
            continue
        judged += 1
        soft += e.soft_404
        assert (row["outcome"] == "soft-404") == e.soft_404, (url, row["outcome"], row["reason"])
    assert judged > 100 and soft >= 5
    # Every soft 404 linked from a real page was fetched and caught, by the right signal:
    # the probe where the host soft-404s everything, the wording where it does not.
    methods = {"calendar": "cannot exist", "shop": "cannot exist", "news": "says"}
    events = {ev["url"] for ev in read_events(crawl_run.out / "events.jsonl")}
    for url in crawl_run.manifest["soft_404s"]:
        row = crawl_run.url_row(url)
        assert row is not None and row["outcome"] == "soft-404", url
        assert methods[urlsplit(url).hostname.split(".")[0]] in row["reason"], row["reason"]
        assert url not in events and row["out_links"] == 0
    # Their "did you mean" links were not followed.
    assert not [u for u in crawl_run.requested() if "/events/launch-party-" in u]


def test_each_host_is_probed_once_after_robots_txt_and_before_any_page(
    crawl_run: CrawlRun,
) -> None:
    probes = _probe_urls(crawl_run)
    status = dict(crawl_run.rows("SELECT host, probe_status FROM hosts"))
    failing = set(crawl_run.manifest["robots"]["failing_hosts"])
    by_origin: dict[tuple[str, int], list[LoggedRequest]] = defaultdict(list)
    for e in crawl_run.log:
        by_origin[(e.host, e.port)].append(e)
    for (name, port), entries in by_origin.items():
        entries.sort(key=lambda e: e.start)
        kinds = ["probe" if "/lookupbot-probe-" in e.path else e.path for e in entries]
        if name in failing:
            assert "probe" not in kinds
            continue
        probe_url = probes[f"{name}:{port}"]
        assert {request_url(e) for e in entries if "/lookupbot-probe-" in e.path} == {probe_url}
        assert kinds[0] == "/robots.txt" and kinds[1] == "probe", (name, kinds[:3])
        first_page = next(i for i, k in enumerate(kinds) if k not in ("/robots.txt", "probe"))
        assert all(k != "probe" for k in kinds[first_page:])
    port = crawl_run.web.port
    assert status[f"shop.sandbox.test:{port}"] == status[f"calendar.sandbox.test:{port}"] == 200
    assert status[f"news.sandbox.test:{port}"] == status[f"docs.sandbox.test:{port}"] == 404


def test_https_is_fetched_over_tls_and_http_https_twins_are_deduplicated(
    crawl_run: CrawlRun,
) -> None:
    tls = crawl_run.manifest["tls"]
    secure = [e for e in crawl_run.log if e.scheme == "https"]
    assert secure and {e.host for e in secure} == set(tls["hosts"])
    assert {e.port for e in secure} == {tls["port"]}
    for pair in tls["https_variants"]:
        http, https = crawl_run.url_row(pair["http"]), crawl_run.url_row(pair["https"])
        assert http["state"] == https["state"] == "done"
        outcomes = [http["outcome"], https["outcome"]]
        # At most one of the twins is kept; the other (or both, when the mirror's or the
        # www twin's copy came first — the hub seed reaches those early) is an exact
        # duplicate of the one copy that was.
        assert "duplicate" in outcomes and set(outcomes) <= {"ok", "duplicate"}, outcomes
        for dup in (r for r in (http, https) if r["outcome"] == "duplicate"):
            original = crawl_run.url_row(dup["dup_of"])
            assert dup["dup_kind"] == "exact" and original["outcome"] == "ok", dict(dup)
    # Only one copy of each page reaches the indexer, whichever scheme it came by.
    events = read_events(crawl_run.out / "events.jsonl")
    paths: defaultdict[str, set[str]] = defaultdict(set)
    for ev in events:
        parts = urlsplit(ev["url"])
        if parts.hostname == "docs.sandbox.test":
            paths[parts.path + parts.query].add(parts.scheme)
    assert paths and all(len(schemes) == 1 for schemes in paths.values())
    assert not crawl_run.rows("SELECT url FROM urls WHERE outcome = 'tls'")


def live_index(events: list[dict]) -> set[str]:
    """The URLs the event stream leaves indexed (PageFetched adds, PageRemoved takes away)."""
    live: set[str] = set()
    for e in events:
        (live.add if e["type"] == "PageFetched" else live.discard)(e["url"])
    return live


def test_the_declared_canonical_represents_its_duplicates(crawl_run: CrawlRun) -> None:
    """The sandbox's rel=canonical ground truth: member → the URL it names canonical."""
    live = live_index(read_events(crawl_run.out / "events.jsonl"))
    canonical = crawl_run.manifest["canonical"]
    checked = 0
    for member, target in canonical.items():
        m, t = crawl_run.url_row(member), crawl_run.url_row(target)
        if t is None or t["state"] != "done" or m is None or m["state"] != "done":
            continue  # not both fetched (a budget, a robots rule)
        assert t["outcome"] == "ok" and target in live, dict(t)
        if m["outcome"] == "duplicate":  # a member the dedup put in the target's cluster
            assert m["dup_of"] == target and member not in live, dict(m)
            checked += 1
    assert checked >= 3, checked
