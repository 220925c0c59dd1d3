"""The URL shortener page, through ``streamlit.testing``, against the real API on a port.

Shorten a link, see it in "my links", click it over HTTP and watch the counts, disable
it and see the next click get the warning page, run the traffic simulator; and with
no API, a clear message instead of an exception. Against a real fleet (``lookup up
--backend postgres,redis``): the backends in use, the layers per worker, the simulator
over both workers, and the cache-tier drill.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import httpx
import pytest
from dashboard_testing import metric_value, ok, page_text
from drillcharts import phase_rates
from streamlit.testing.v1 import AppTest

PAGE = "views/shortener.py"
IPHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1"
)


def _frame(at: AppTest, column: str):  # type: ignore[no-untyped-def]
    """The one table on the page that has ``column``, as a pandas DataFrame."""
    found = [d.value for d in at.dataframe if column in d.value.columns]
    assert len(found) == 1, (column, [list(d.value.columns) for d in at.dataframe])
    return found[0]


@pytest.fixture
def page(threaded_api: str, visit: Callable[[str, str], AppTest]) -> Iterator[AppTest]:
    yield visit(PAGE, threaded_api)


def test_without_the_api_the_page_says_so(
    nothing_listening: str, visit: Callable[[str, str], AppTest]
) -> None:
    at = visit(PAGE, nothing_listening)
    text = page_text(at)
    assert "URL shortener" in text and "API down" in text
    assert "needs the API" in text and "lookup serve" in text
    assert not at.text_input and not at.button  # nothing to click that could fail


def test_shorten_click_watch_disable(page: AppTest, threaded_api: str) -> None:
    at = page
    assert "No links yet" in page_text(at)
    at.text_input(key="create-url").input("https://example.com/launch-notes")
    at.text_input(key="create-alias").input("launch-notes")
    ok(at.button(key="create-submit").click().run())
    text = page_text(at)
    assert "Your short link" in text
    assert "/launch-notes](" in text  # the short URL is a markdown link
    assert len(at.get("image")) == 1  # the QR code, fetched from the API
    table = _frame(at, "Short URL")
    assert list(table["Status"]) == ["ACTIVE"]
    assert table["Short URL"][0].endswith("/launch-notes")
    assert metric_value(at, "People") == "0"

    # Clicks over HTTP, as browsers and a chat app would make them.
    with httpx.Client(base_url=threaded_api) as client:
        for headers in (
            {"User-Agent": IPHONE, "CF-IPCountry": "IN", "Referer": "https://t.co/x"},
            {"User-Agent": IPHONE, "CF-IPCountry": "IN"},
            {"User-Agent": "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)"},
        ):
            assert client.get("/launch-notes", headers=headers).status_code == 302
    ok(at.button(key="stats-refresh").click().run())
    assert metric_value(at, "People") == "2"
    assert metric_value(at, "Link previews") == "1"
    assert metric_value(at, "Unique visitors") == "1"
    assert at.get("plotly_chart")  # clicks over time, countries, devices, ...

    ok(at.button(key="link-disable").click().run())
    assert "launch-notes is now DISABLED" in page_text(at)
    ok(at.button(key="link-probe").click().run())
    text = page_text(at)
    assert "HTTP 403" in text and "no `Location` header" in text
    assert "this link has been disabled" in text
    assert list(_frame(at, "Short URL")["Status"]) == ["DISABLED"]
    ok(at.button(key="link-enable").click().run())
    ok(at.button(key="link-probe").click().run())
    assert "HTTP 302" in page_text(at) and "https://example.com/launch-notes" in page_text(at)


def test_a_refused_link_shows_the_reason(page: AppTest) -> None:
    at = page
    at.text_input(key="create-url").input("javascript:alert(1)")
    ok(at.button(key="create-submit").click().run())
    errors = " ".join(e.value for e in at.error)
    assert "Not shortened" in errors and "INVALID_URL" in errors


def test_the_simulator_shows_what_each_layer_absorbed(page: AppTest) -> None:
    at = page
    at.slider(key="sim-requests").set_value(300)
    at.slider(key="sim-links").set_value(5)
    ok(at.button(key="sim-run").click().run())
    assert metric_value(at, "Requests") == "300"
    layers = _frame(at, "meaning")
    assert list(layers["layer"])[:2] == ["In-process LRU cache", "Negative cache"]
    assert layers["lookups"].sum() >= 300
    kinds = _frame(at, "Traffic")
    assert kinds["Sent"].sum() == 300
    # The simulated links are now "my links", the viral one selected with its clicks.
    table = _frame(at, "Short URL")
    assert len(table) == 6 and all("simulated" in tags for tags in table["Tags"])
    assert int(metric_value(at, "People")) == 60  # the viral burst: 20 % of 300


def test_the_scan_verdict_comes_with_its_reasons(page: AppTest, threaded_api: str) -> None:
    """A destination the safety scanner flags: the page shows the verdict and the rules
    that fired — the same reasons the scanner's own ``assess`` gives — in the table and
    in the safety panel; a clean link says that no rule fired."""
    import time

    from lookup.shortener.scanner import DEFAULT_FEED, ThreatFeed, assess

    at = page
    url = "https://paypal.com.account-verify.top/login"
    expected = assess(url, None, ThreatFeed.load(DEFAULT_FEED))
    assert expected.verdict == "MALICIOUS" and len(expected.reasons) >= 2
    at.text_input(key="create-url").input(url)
    ok(at.button(key="create-submit").click().run())
    deadline = time.monotonic() + 30  # the scanner works off the request path
    while list(_frame(at, "Short URL")["Scan"]) != ["MALICIOUS"]:
        assert time.monotonic() < deadline, list(_frame(at, "Short URL")["Scan"])
        time.sleep(0.2)
        ok(at.button(key="stats-refresh").click().run())
    table = _frame(at, "Short URL")
    assert list(table["Why"]) == ["; ".join(expected.reasons)]
    text = page_text(at)
    assert "**Safety scan** :red-badge[MALICIOUS]" in text
    assert "Why:\n" + "\n".join(f"- {reason}" for reason in expected.reasons) in text
    assert list(table["Status"]) == ["DISABLED"]  # a MALICIOUS verdict takes it down

    at.text_input(key="create-url").input("https://example.com/plain")
    ok(at.button(key="create-submit").click().run())
    deadline = time.monotonic() + 30
    while "SAFE" not in list(_frame(at, "Short URL")["Scan"]):
        assert time.monotonic() < deadline, list(_frame(at, "Short URL")["Scan"])
        time.sleep(0.2)
        ok(at.button(key="stats-refresh").click().run())
    table = _frame(at, "Short URL")
    assert dict(zip(table["Scan"], table["Why"], strict=True))["SAFE"] == "no rule fired"


# --------------------------------------------------------------------------- a real fleet


@pytest.fixture
def fleet(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict]:
    """``lookup up --backend postgres,redis --workers 2`` over its own data directory, which
    the dashboard is pointed at; yields the fleet's state."""
    from tests.conftest import _need_postgres, _need_redis
    from tests.test_fleet import reachable_dir, running_fleet

    _need_postgres()
    _need_redis()
    with reachable_dir() as data_dir:
        with running_fleet(data_dir, "--backend", "postgres,redis", "--workers", "2") as state:
            monkeypatch.setenv("LOOKUP_DATA_DIR", str(data_dir))
            yield state


def test_against_a_fleet_the_page_shows_backends_layers_and_drills_the_cache_tier(
    fleet: dict, visit: Callable[[str, str], AppTest]
) -> None:
    workers = [w["url"] for w in fleet["workers"]]
    at = visit(PAGE, workers[0])
    assert "2 API processes" in page_text(at)
    backends = _frame(at, "Seam")
    engine = dict(zip(backends["Seam"], backends["Backend"], strict=True))
    assert engine["Links, aliases, audit, click budgets"] == "PostgreSQL"
    assert engine["Id blocks"] == "PostgreSQL"
    assert engine["Shared cache tier"] == "Redis" and engine["Rate limits"] == "Redis"
    assert "Domain blocklist" in engine  # every seam by its name, none by the API's key
    redis_at = fleet["servers"]["redis"]["url"].split("://", 1)[1]
    assert redis_at in list(backends["Where"])

    # The simulator goes round-robin over both workers: each one counted lookups.
    at.slider(key="sim-requests").set_value(300)
    at.slider(key="sim-links").set_value(5)
    ok(at.button(key="sim-run").click().run())
    layers = _frame(at, "Worker").set_index("Worker")
    assert list(layers.index) == [*workers, "All workers"]
    assert all(layers.loc[url, "Lookups"] >= 100 for url in workers)
    assert layers.loc["All workers", "Lookups"] >= 300

    # Stop the cache tier: redirects keep answering from the L1 and the store.
    ok(at.button(key="tier-stop").click().run())
    assert "The cache tier is stopped." in page_text(at) and ":red-badge[stopped]" in page_text(at)
    key = list(_frame(at, "Short URL")["Short URL"])[0].rsplit("/", 1)[1]
    for url in workers:
        assert httpx.get(f"{url}/{key}", timeout=10).status_code == 302
    ok(at.button(key="tier-start").click().run())
    assert "running again" in page_text(at) and ":green-badge[running]" in page_text(at)

    # The drill: Redis stopped under steady redirects, no 5xx, the charts drawn.
    ok(at.button(key="tier-drill").click().run(timeout=180))
    assert metric_value(at, "5xx or no answer") == "0"
    charts = {c.proto.id for c in at.get("plotly_chart")}
    assert any("chart-drill-latency" in c for c in charts), charts
    # ... and the story the layers chart promises: the tier answers misses before the
    # outage, the store takes them while Redis is down, the tier again once it is back.
    rates = phase_rates(at.session_state["shortener.drill_result"])
    assert rates["before"]["shared"] >= 3, rates  # 15 ticks/s, one tier hit each
    assert rates["during"]["shared"] <= 1, rates
    assert rates["during"]["store"] >= rates["before"]["store"] + 3, rates
    assert rates["after"]["shared"] >= 3, rates
    assert "Before the outage the Redis tier answered" in page_text(at)


def test_the_form_empties_after_a_link_is_made_and_keeps_a_refused_address(
    page: AppTest,
) -> None:
    at = page
    at.text_input(key="create-url").input("https://example.com/emptied")
    at.text_input(key="create-alias").input("emptied-form")
    ok(at.button(key="create-submit").click().run())
    assert "/emptied-form](" in page_text(at)
    assert at.text_input(key="create-url").value == ""
    assert at.text_input(key="create-alias").value == ""

    at.text_input(key="create-url").input("example.com/no-scheme")
    ok(at.button(key="create-submit").click().run())
    errors = " ".join(e.value for e in at.error)
    assert "is not a web address" in errors and "https://example.com/page" in errors
    assert "longUrl" not in errors  # the API's field name is not the person's word
    assert at.text_input(key="create-url").value == "example.com/no-scheme"  # to fix it


def test_a_local_address_says_why_it_is_suspicious(page: AppTest) -> None:
    """A link to the sandbox web (a bare loopback IP on an odd port) scores SUSPICIOUS;
    the page says why, and that the link still works."""
    import time

    at = page
    at.text_input(key="create-url").input("http://127.0.0.1:8600/")
    ok(at.button(key="create-submit").click().run())
    deadline = time.monotonic() + 30  # the scanner works off the request path
    while list(_frame(at, "Short URL")["Scan"]) != ["SUSPICIOUS"]:
        assert time.monotonic() < deadline, list(_frame(at, "Short URL")["Scan"])
        time.sleep(0.2)
        ok(at.button(key="stats-refresh").click().run())
    infos = " ".join(i.value for i in at.info)
    assert "Why a local address scores SUSPICIOUS" in infos and "still redirects" in infos
    assert list(_frame(at, "Short URL")["Status"]) == ["ACTIVE"]


def test_the_form_sets_the_forwarding_switches(page: AppTest, threaded_api: str) -> None:
    """Off for the query, on for the extra path: the created link redirects accordingly."""
    at = page
    at.text_input(key="create-url").input("https://example.com/docs/")
    at.text_input(key="create-alias").input("fwd-docs")
    at.toggle(key="create-forward-query").set_value(False)
    at.toggle(key="create-forward-path").set_value(True)
    ok(at.button(key="create-submit").click().run())
    assert "Your short link" in page_text(at)
    with httpx.Client(base_url=threaded_api) as client:
        r = client.get("/fwd-docs/guide?utm_source=x", follow_redirects=False)
    assert r.status_code == 302 and r.headers["location"] == "https://example.com/docs/guide"
    assert at.toggle(key="create-forward-query").value is True  # the form starts afresh
    assert at.toggle(key="create-forward-path").value is False
