"""A person types into the live typeahead, watches a burst trend, blocks a term, rolls back.

Runs the real API and the real dashboard (see ``conftest.py``) in Debian's Chromium.
The harness starts the API over an empty data directory; the fixture below builds a
small query log and two snapshot versions into it, and the API's poller picks them up
as it would after ``lookup typeahead build``.
"""

from __future__ import annotations

import csv
import re
import time
import unicodedata
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from browser_harness import Service

from lookup.kit.admin import server_admin_token
from lookup.typeahead import querylog, run

pytestmark = pytest.mark.browser

EXCEPTION = '[data-testid="stException"]'
EVENTS = 30_000
NEW_QUERIES = {"en-IN": "quokka selfie spot", "hi-IN": "क्वोक्का सेल्फी"}
BOX = "input.ta-box"


def _data_dir(api: Service) -> Path:
    """The data directory the harness gave ``lookup serve`` (its ``--data-dir``)."""
    argv = [str(a) for a in api.process.args]  # type: ignore[union-attr]
    return Path(argv[argv.index("--data-dir") + 1])


def _wait_serving(api: Service, versions: dict[str, str], timeout: float = 30.0) -> None:
    """Until the API serves ``versions`` (its poller deploys published snapshots)."""
    deadline = time.monotonic() + timeout
    while True:
        markets = httpx.get(f"{api.url}/v1/typeahead/snapshots").json()["markets"]
        serving = {m: (markets.get(m, {}).get("current") or {}).get("version") for m in versions}
        if serving == versions:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"the API serves {serving}, expected {versions}")
        time.sleep(0.2)


@pytest.fixture(scope="module")
def versions(api: Service) -> dict[str, list[str]]:
    """Two published versions per market, the newer serving and the older its previous."""
    data_dir = _data_dir(api)
    log = querylog.generate(EVENTS, seed=11)
    first = run(data_dir, querylog.write(log, querylog.log_path(data_dir)))
    assert first.ok, first.to_dict()
    _wait_serving(api, {m.market: m.version for m in first.markets})
    extra = data_dir / "new-searches.csv"
    later = querylog.START_EPOCH + (querylog.DAYS + 1) * 86400
    with extra.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["ts", "market", "query", "user_id"])
        for market, q in NEW_QUERIES.items():
            w.writerows([later + u, market, q, f"new-user-{u}"] for u in range(12))
    second = run(data_dir, extra)
    assert second.ok, second.to_dict()
    _wait_serving(api, {m.market: m.version for m in second.markets})
    return {
        m.market: [a.version for a in first.markets if a.market == m.market] + [m.version]
        for m in second.markets
    }


def _suggest(api: Service, q: str, market: str = "en-IN") -> list[str]:
    body = httpx.get(f"{api.url}/v1/suggest", params={"q": q, "market": market}).json()
    return list(body["suggestions"])


def _settled(page) -> None:  # type: ignore[no-untyped-def]
    """Wait until no script run is in progress (the status widget shows only after a delay,
    so the app's own run state is read too): input sent during a run can be dropped."""
    from playwright.sync_api import expect

    app = page.locator('[data-testid="stApp"]')
    expect(app).to_have_attribute("data-test-script-state", "notRunning")
    expect(page.locator('[data-testid="stStatusWidget"]')).to_have_count(0)


def _metric(page, label: str):  # type: ignore[no-untyped-def]
    card = page.locator(
        '[data-testid="stElementContainer"]:not([data-stale="true"]) [data-testid="stMetric"]'
    ).filter(has=page.locator('[data-testid="stMetricLabel"]', has_text=label))
    return card.locator('[data-testid="stMetricValue"]')


def _expect_dropdown(page, suggestions: list[str]) -> None:  # type: ignore[no-untyped-def]
    """The dropdown lists exactly ``suggestions``, in order."""
    from playwright.sync_api import expect

    items = page.locator(".ta-list .ta-item")
    expect(items).to_have_count(len(suggestions))
    for i, s in enumerate(suggestions):
        expect(items.nth(i)).to_have_attribute("title", s)


def _loopback_only(page) -> list[str]:  # type: ignore[no-untyped-def]
    """Refuse every request to a host other than loopback; returns the list of attempts.

    Everything the page needs must come from the dashboard itself: no CDN, no outside host.
    """
    outside: list[str] = []

    def route(r) -> None:  # type: ignore[no-untyped-def]
        if urlsplit(r.request.url).hostname in ("127.0.0.1", "localhost"):
            r.continue_()
        else:
            outside.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    return outside


def _open(page, dashboard: Service) -> None:  # type: ignore[no-untyped-def]
    from playwright.sync_api import expect

    page.goto(f"{dashboard.url}/typeahead")
    expect(page.get_by_role("heading", name="Typeahead")).to_be_visible()
    expect(page.get_by_text("The trie walk on the server")).to_be_visible()
    # The page's last element (in the Blocklist tab): the first run has drawn everything.
    # Typing while that run is still drawing can leave the box's updates unsent.
    expect(page.get_by_text("Built-in policy list (every build")).to_be_attached()
    _settled(page)


def test_page_fills_in_once_the_first_snapshot_is_served(
    page,
    dashboard: Service,
    api: Service,
    request: pytest.FixtureRequest,  # type: ignore[no-untyped-def]
) -> None:
    """Opened before anything is built, the page says how to build and then, with no reload,
    shows the search box once the API serves a snapshot."""
    from playwright.sync_api import expect

    status = httpx.get(f"{api.url}/healthz").json()["systems"]["typeahead"]["status"]
    if status != "NOT_BUILT":
        pytest.skip("another test built the snapshots first")
    page.goto(f"{dashboard.url}/typeahead")
    expect(page.get_by_text("No typeahead snapshot for")).to_be_visible()
    expect(page.get_by_text("Watching the API")).to_be_visible()
    request.getfixturevalue("versions")  # builds and publishes two versions per market
    expect(page.get_by_text("The trie walk on the server")).to_be_visible(timeout=30_000)
    expect(page.get_by_text("No typeahead snapshot for")).to_have_count(0)
    expect(page.locator(EXCEPTION)).to_have_count(0)


def test_suggestions_follow_every_keystroke(
    page,
    dashboard: Service,
    api: Service,
    versions: dict[str, list[str]],  # type: ignore[no-untyped-def]
) -> None:
    from playwright.sync_api import expect

    outside = _loopback_only(page)
    _open(page, dashboard)
    sent_before = int(_metric(page, "Requests sent").inner_text().replace(",", ""))
    page.locator(BOX).click()
    page.keyboard.type("ip", delay=0)  # faster than the 100 ms debounce: one value reported
    _expect_dropdown(page, _suggest(api, "ip"))
    expect(_metric(page, "Keystrokes typed")).to_have_text("2")
    # Two keystrokes, one debounced value, one request (a debounce of 0 would send two).
    expect(_metric(page, "Requests sent")).to_have_text(str(sent_before + 1))
    expect(page.get_by_text("Debounce merged 1 keystrokes")).to_be_visible()
    expect(page.get_by_text("answered in").first).to_be_visible()
    trace = httpx.get(f"{api.url}/v1/typeahead/trace", params={"q": "ip"}).json()
    expect(_metric(page, "Nodes visited")).to_have_text(str(trace["nodesVisited"]))

    page.keyboard.type("h")
    _expect_dropdown(page, _suggest(api, "iph"))
    expect(_metric(page, "Keystrokes typed")).to_have_text("3")
    requests = _metric(page, "Requests sent").inner_text()
    page.keyboard.press("Backspace")  # back to "ip": answered from the local cache
    _expect_dropdown(page, _suggest(api, "ip"))
    expect(_metric(page, "Keystrokes typed")).to_have_text("4")
    expect(_metric(page, "Answered locally")).to_have_text("1")
    expect(_metric(page, "Requests sent")).to_have_text(requests)
    expect(page.get_by_text("no request sent").first).to_be_visible()

    # Hindi: switch the market, type Devanagari (code points, not glyphs, are walked).
    page.get_by_role("radio", name="Hindi · hi-IN").click()
    _settled(page)
    top = next(s for s in _suggest(api, "", "hi-IN") if not s.isascii())
    page.locator(BOX).fill("")
    page.locator(BOX).click()
    page.keyboard.type(top[:2], delay=20)
    _expect_dropdown(page, _suggest(api, top[:2], "hi-IN"))
    expect(page.locator(".ta-cp")).to_contain_text(f"U+{ord(top[0]):04X}")
    _settled(page)
    expect(page.locator(EXCEPTION)).to_have_count(0)
    assert outside == []


#: Types "ip" into the search box the moment its HTML is in the page, before the box's
#: script has run (the HTML goes in first; the script is a module loaded after it): a
#: person typing as soon as the box shows. The script sets the placeholder, so an empty
#: one says it had not run yet.
_TYPE_BEFORE_THE_SCRIPT = """
window.__typedEarly = null;
const attachShadow = Element.prototype.attachShadow;
Element.prototype.attachShadow = function (init) {
  const root = attachShadow.call(this, init);
  const watch = new MutationObserver(() => {
    const box = root.querySelector("input.ta-box");
    if (!box) return;
    watch.disconnect();
    const scriptRan = box.placeholder !== "";
    box.focus();
    box.value = "ip";
    box.dispatchEvent(new InputEvent("input", {bubbles: true, composed: true,
                                              inputType: "insertText", data: "ip"}));
    window.__typedEarly = {scriptRan};
  });
  watch.observe(root, {childList: true, subtree: true});
  return root;
};
"""


def test_text_typed_before_the_box_is_ready_is_kept_and_reported(
    page,
    dashboard: Service,
    api: Service,
    versions: dict[str, list[str]],  # type: ignore[no-untyped-def]
) -> None:
    """The box takes keystrokes before its script has run: what was typed then stays in
    the box and is reported (the script once blanked it, and the dropdown stayed empty)."""
    from playwright.sync_api import expect

    page.add_init_script(_TYPE_BEFORE_THE_SCRIPT)
    _open(page, dashboard)
    page.wait_for_function("window.__typedEarly !== null")
    assert page.evaluate("window.__typedEarly") == {"scriptRan": False}
    expect(page.locator(BOX)).to_have_value("ip")
    _expect_dropdown(page, _suggest(api, "ip"))
    expect(_metric(page, "Keystrokes typed")).to_have_text("2")
    expect(_metric(page, "Requests sent")).to_have_text("1")
    expect(page.locator(EXCEPTION)).to_have_count(0)


def test_burst_trends_block_removes_and_rollback_swaps(
    page,
    dashboard: Service,
    api: Service,
    versions: dict[str, list[str]],
    browser,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    from playwright.sync_api import expect

    outside = _loopback_only(page)
    _open(page, dashboard)
    # Trending: replay a burst for a query the snapshot has never seen.
    term_box = page.get_by_label("A new query to make trend")
    expect(term_box).to_have_value(re.compile(r"\S{3}"))
    term = term_box.input_value()
    watch = term[:3]
    assert term not in _suggest(api, watch)
    page.get_by_role("button", name="Replay a burst of searches").click()
    expect(page.get_by_text("was suggested for")).to_be_visible(timeout=60_000)
    expect(page.locator(".js-plotly-plot")).to_be_visible()
    before_after = page.locator('[data-testid="stDataFrame"]').filter(has_text="after the burst")
    expect(before_after).to_be_visible()
    _settled(page)
    assert term in _suggest(api, watch)

    # Another visitor types the prefix: the newcomer is suggested, badged as trending.
    # (A second page: in the page that replayed the burst, the search box sometimes stops
    # reporting keystrokes under this headless harness — see the report of issue 4.)
    page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
    page.set_default_timeout(20_000)
    outside += _loopback_only(page)
    _open(page, dashboard)
    page.locator(BOX).click()
    page.keyboard.type(watch, delay=20)
    item = page.locator(".ta-list .ta-item").filter(has_text=term)
    expect(item).to_have_count(1)
    expect(item.locator(".ta-hot")).to_have_text("trending")
    shot = tmp_path / "typeahead.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000

    # Blocklist: the term disappears from the box on the next request.
    page.get_by_role("tab", name="Blocklist").click()
    phrase = page.locator('[data-testid="stForm"] input[aria-label="Phrase"]')
    phrase.fill(term)
    page.get_by_role("button", name="Block now").click()
    expect(page.get_by_text(f"Blocked {term}")).to_be_visible()
    _settled(page)
    expect(page.locator(".ta-list .ta-item").filter(has_text=term)).to_have_count(0)
    assert term not in _suggest(api, watch)

    # Snapshots: roll back to the previous version; the box answers from it.
    old, new = versions["en-IN"]
    page.get_by_role("tab", name="Snapshots").click()
    page.get_by_role("button", name="Roll back").click()
    expect(page.get_by_text(f"rolled back to {old}")).to_be_visible()
    served = httpx.get(f"{api.url}/v1/typeahead/snapshots").json()["markets"]["en-IN"]
    assert served["current"]["version"] == old
    page.locator(BOX).fill(NEW_QUERIES["en-IN"][:-1])  # a paste: one input event
    expect(page.locator(BOX)).to_have_value(NEW_QUERIES["en-IN"][:-1])
    _expect_dropdown(page, _suggest(api, NEW_QUERIES["en-IN"][:-1]))
    expect(page.locator(".ta-list")).not_to_contain_text(NEW_QUERIES["en-IN"])

    # Canary: the newer version to 10 % of clients, shown in progress, then aborted.
    page.get_by_role("button", name="Start a canary (10 % of clients)").click()
    expect(page.get_by_text(f"started a canary of {new}")).to_be_visible()
    expect(page.get_by_text("Canary in progress")).to_be_visible()
    canary = httpx.get(f"{api.url}/v1/typeahead/snapshots/en-IN/canary").json()["canary"]
    assert (canary["state"], canary["version"]) == ("RUNNING", new)
    page.get_by_role("button", name="Abort the canary").scroll_into_view_if_needed()
    page.screenshot(path=str(tmp_path / "typeahead-canary.png"))  # the app scrolls inside
    page.get_by_role("button", name="Abort the canary").click()
    expect(page.get_by_text("aborted the canary of")).to_be_visible()
    canary = httpx.get(f"{api.url}/v1/typeahead/snapshots/en-IN/canary").json()["canary"]
    assert canary["state"] == "ABORTED"

    # Leave the shared API as the other tests expect it: newest snapshot, empty hot list.
    admin = {"Authorization": f"Bearer {server_admin_token(_data_dir(api))}"}
    httpx.post(f"{api.url}/v1/typeahead/snapshots/en-IN/rollback", headers=admin)
    httpx.delete(f"{api.url}/v1/typeahead/blocklist", params={"term": term}, headers=admin)
    _settled(page)
    expect(page.locator(EXCEPTION)).to_have_count(0)
    page.context.close()
    assert outside == []


def _searches(api: Service) -> list[tuple[str, str]]:
    """``(market, query)`` of every search the API recorded (the log the next build reads)."""
    from lookup.typeahead.pipeline import typeahead_dir

    path = typeahead_dir(_data_dir(api)) / "searches.csv"
    if not path.exists():
        return []
    with path.open(encoding="utf-8") as f:
        return [(r["market"], r["query"]) for r in csv.DictReader(f)]


def _until(check, timeout: float = 20.0):  # type: ignore[no-untyped-def]
    """``check()``'s first truthy answer, polled until ``timeout``."""
    deadline = time.monotonic() + timeout
    while not (answer := check()):
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.1)
    return answer


def test_a_suggestion_is_chosen_by_mouse_and_by_keyboard(
    page,
    dashboard: Service,
    api: Service,
    versions: dict[str, list[str]],  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    """A click on a suggestion, and ↓ ↓ Enter, each fill the box and submit the search:
    ``POST /v1/searches`` records it (in the log the next build reads)."""
    from playwright.sync_api import expect

    outside = _loopback_only(page)
    _open(page, dashboard)
    before = len(_searches(api))
    box = page.locator(BOX)
    box.click()
    page.keyboard.type("ip", delay=20)
    options = _suggest(api, "ip")
    _expect_dropdown(page, options)
    _settled(page)

    # The mouse: a click on the third suggestion.
    page.locator(".ta-list .ta-item").nth(2).click()
    expect(box).to_have_value(options[2])
    expect(page.get_by_text(f"Searched for {options[2]}")).to_be_visible()
    clicked = options[2]
    assert _until(lambda: _searches(api)[before:]) == [("en-IN", clicked)]
    _expect_dropdown(page, _suggest(api, options[2]))  # the box now suggests for the pick
    expect(box).to_be_focused()
    _settled(page)
    shot = tmp_path / "typeahead-picked.png"
    page.screenshot(path=str(shot), full_page=True)

    # The keyboard: clear, type, arrow down twice, Enter — the second suggestion.
    box.fill("")
    page.keyboard.type("wea", delay=20)
    options = _suggest(api, "wea")
    _expect_dropdown(page, options)
    _settled(page)
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    expect(page.locator(".ta-list .ta-item.ta-active")).to_have_attribute("title", options[1])
    page.keyboard.press("Enter")
    expect(box).to_have_value(options[1])
    expect(page.get_by_text(f"Searched for {options[1]}")).to_be_visible()
    assert _until(lambda: len(_searches(api)) >= before + 2 and _searches(api)[before:]) == [
        ("en-IN", clicked),
        ("en-IN", options[1]),
    ]
    _settled(page)
    expect(page.locator(EXCEPTION)).to_have_count(0)
    assert outside == []


_GLYPH_WIDTHS = r"""async el => {
  const style = getComputedStyle(el);
  const text = el.textContent;
  const ctx = document.createElement("canvas").getContext("2d");
  const measure = (family, what = text) => {
    ctx.font = `${style.fontWeight} ${style.fontSize} ${family}`;
    return ctx.measureText(what).width;
  };
  // Spaces come from the first font of the stack that has one (Streamlit's Latin face),
  // so the served face is compared on the Devanagari alone.
  const letters = text.replace(/\s+/g, "");
  const face = [...document.fonts].find(
    f => f.family.replace(/"/g, "") === "Noto Sans Devanagari");
  // The served file again under a name no machine has: whatever fonts are installed, text
  // measured in this family is drawn from the file the dashboard serves.
  // (with the served rule's descriptors: its weight range picks the same instance)
  const probe = new FontFace("lookup-served-probe", "url(/app/static/NotoSansDevanagari.ttf)",
    face ? {weight: face.weight, style: face.style, stretch: face.stretch} : {});
  document.fonts.add(await probe.load());
  return {
    text,
    faceStatus: face ? face.status : "absent",
    rendered: el.getBoundingClientRect().width,
    page: measure(style.fontFamily),
    pageLetters: measure(style.fontFamily, letters),
    servedLetters: measure('"lookup-served-probe"', letters),
  };
}"""


def test_hindi_suggestions_are_drawn_with_the_served_font(
    page,
    dashboard: Service,
    api: Service,
    versions: dict[str, list[str]],
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    """hi-IN suggestions render in the Noto Sans Devanagari the dashboard serves itself
    (app/fonts.py), not as missing-glyph boxes, whichever fonts the machine has."""
    from fontTools.ttLib import TTFont
    from playwright.sync_api import expect

    outside = _loopback_only(page)
    _open(page, dashboard)  # the first script run puts the font into app/static/
    font = httpx.get(f"{dashboard.url}/app/static/NotoSansDevanagari.ttf")
    assert font.status_code == 200 and len(font.content) > 100_000
    page.get_by_role("radio", name="Hindi · hi-IN").click()
    _settled(page)
    top = next(s for s in _suggest(api, "", "hi-IN") if not s.isascii())
    page.locator(BOX).fill("")
    page.locator(BOX).click()
    page.keyboard.type(top[:1], delay=20)
    _expect_dropdown(page, _suggest(api, top[:1], "hi-IN"))
    page.evaluate("document.fonts.ready")
    rest = page.locator(".ta-list .ta-item .ta-rest").first
    expect(rest).to_be_visible()
    page.wait_for_function(
        """() => [...document.fonts].some(f =>
             f.family.replace(/"/g, "") === "Noto Sans Devanagari" && f.status === "loaded")"""
    )
    widths = rest.evaluate(_GLYPH_WIDTHS)
    assert widths["faceStatus"] == "loaded", widths
    assert not widths["text"].isascii(), widths
    # The bold part starts at a grapheme boundary (no vowel sign cut off its consonant).
    assert not unicodedata.category(widths["text"][0]).startswith("M"), widths
    # The row is as wide as the page's font stack draws it, and its letters are as wide as
    # the served file draws them (loaded again under a name only it has)...
    assert abs(widths["rendered"] - widths["page"]) <= 2.0, widths
    assert abs(widths["pageLetters"] - widths["servedLetters"]) <= 1.0, widths
    # ...and the served file has a glyph for every character of the row: no boxes.
    served = tmp_path / "served.ttf"
    served.write_bytes(font.content)
    cmap = TTFont(served).getBestCmap()
    assert all(ord(ch) in cmap for ch in widths["text"] if not ch.isspace()), widths
    page.locator(".ta-list").screenshot(path=str(tmp_path / "hindi-suggestions.png"))
    print(f"hi-IN list screenshot: {tmp_path / 'hindi-suggestions.png'} widths={widths}")
    expect(page.locator(EXCEPTION)).to_have_count(0)
    assert outside == []
