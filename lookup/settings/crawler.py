"""The crawler's knobs (control API, fleet)."""

from __future__ import annotations

from lookup.settings.base import (
    Setting,
    as_partitions,
    as_positive_float,
    as_share,
    as_text,
)


def _window(raw: str) -> int:
    n = int(raw)
    if not 1 <= n <= 1000:
        raise ValueError(f"must be between 1 and 1000, not {n}")
    return n


def _slowdown(raw: str) -> float:
    value = float(raw)
    if not 1 <= value <= 100:
        raise ValueError("expected a factor from 1 to 100")
    return value


def _render_count(raw: str) -> int:
    value = raw.strip()
    if not value.isdigit() or int(value) > 1_000_000:
        raise ValueError("expected a whole number from 0 to 1000000")
    return int(value)


KNOBS: list[Setting] = [
    # -- crawler control API ---------------------------------------------------------------
    Setting(
        "crawl_store",
        "LOOKUP_CRAWL_STORE",
        "",
        as_text,
        "url",
        "",
        "the crawl the API's /crawler endpoints (controls, per-host health) act on: its "
        "store URL (sqlite:///DIR/crawl.sqlite, or the fleet's postgresql://…); default: "
        "the newest crawl under <data-dir>/crawls. A request's crawl=NAME picks another "
        "crawl there.",
    ),
    # -- block detection (crawler/blocking.py) --------------------------------------------
    Setting(
        "crawl_block_window",
        "LOOKUP_CRAWL_BLOCK_WINDOW",
        20,
        _window,
        "int",
        "1..1000",
        "answers per host the block detector looks back over (its last page and sitemap "
        "answers): long enough that one refusal is not a trend, short enough to notice "
        "within a minute of a site turning the crawler away.",
    ),
    Setting(
        "crawl_block_min_answers",
        "LOOKUP_CRAWL_BLOCK_MIN_ANSWERS",
        8,
        _window,
        "int",
        "1..1000",
        "answers a host's window must hold before it can be flagged (so a host's first "
        "two answers, one a 403, are not a 50% share).",
    ),
    Setting(
        "crawl_block_share",
        "LOOKUP_CRAWL_BLOCK_SHARE",
        0.5,
        as_share,
        "fraction",
        "(0, 1]",
        "share of 403/429/CAPTCHA answers in a host's window that flags it for review "
        "and slows it; it is cleared below half this share.",
    ),
    Setting(
        "crawl_block_slowdown",
        "LOOKUP_CRAWL_BLOCK_SLOWDOWN",
        4.0,
        _slowdown,
        "factor",
        "1..100",
        "a flagged host's least pause is this many times what it would be (its own "
        "delay, robots.txt's Crawl-delay or the crawl's floor), until it is cleared.",
    ),
    # -- the crawler fleet ----------------------------------------------------------------
    Setting(
        "crawl_partitions",
        "LOOKUP_CRAWL_PARTITIONS",
        256,
        as_partitions,
        "int",
        "1..65536",
        "partitions a fleet crawl splits its hosts into (hash of the host's address mod "
        "P), far more than workers so work moves in small pieces; fixed when a crawl "
        "starts (kept in its store).",
    ),
    Setting(
        "crawl_lease_ttl",
        "LOOKUP_CRAWL_LEASE_TTL",
        10.0,
        as_positive_float,
        "s",
        "",
        "seconds a fleet worker's partition leases live in etcd without a keep-alive "
        "(renewed every third of it); a worker stops fetching a partition once it passes.",
    ),
    Setting(
        "crawl_pickup_interval",
        "LOOKUP_CRAWL_PICKUP_INTERVAL",
        0.5,
        as_positive_float,
        "s",
        "",
        "how often a fleet worker polls the store for URLs other workers discovered "
        "in its partitions.",
    ),
    # -- two-tier rendering (crawler/render.py) --------------------------------------------
    Setting(
        "crawl_render_budget",
        "LOOKUP_CRAWL_RENDER_BUDGET",
        0,
        _render_count,
        "int",
        "0..1000000",
        "pages a crawl may render in a headless browser when the cheap fetch shows a page "
        "its scripts build (0: never); a render costs about ten times a fetch, so the "
        "budget, not the detector, is what bounds the cost. `lookup crawl --render-budget`.",
    ),
    Setting(
        "crawl_render_text_chars",
        "LOOKUP_CRAWL_RENDER_TEXT_CHARS",
        200,
        _render_count,
        "chars",
        "0..1000000",
        "a page with scripts is a render candidate when its fetched HTML shows at most this "
        "much visible text (and has an empty app root or is mostly inline script): raise it "
        "and more pages pay for a render, lower it and thin pages are indexed as fetched.",
    ),
    Setting(
        "crawl_render_timeout",
        "LOOKUP_CRAWL_RENDER_TIMEOUT",
        15.0,
        as_positive_float,
        "s",
        "",
        "seconds one render may take, the politeness pauses between its requests included; "
        "then the DOM is taken as it is.",
    ),
    Setting(
        "crawl_render_browser",
        "LOOKUP_CRAWL_RENDER_BROWSER",
        "/usr/bin/chromium",
        as_text,
        "path",
        "",
        "the Chromium executable the render tier drives (Debian's package; nothing is "
        "downloaded). Missing: rendering is reported unavailable and pages stay as fetched.",
    ),
]
