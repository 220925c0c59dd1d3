"""The Typeahead page, through ``streamlit.testing``, against the real API on a loopback port.

A small query log is generated and built twice (so each market has two snapshot
versions; the second one knows one new query), then every test gets its own copy of
that data directory and its own API server. What the page shows is checked against
the API asked directly (the oracle), and the client's counters against keystrokes
counted here.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from dashboard_testing import HOME, RUN_TIMEOUT
from starlette.types import ASGIApp
from streamlit.testing.v1 import AppTest

from lookup.typeahead import querylog, run

TYPEAHEAD = "views/typeahead.py"
BOX_STATE = "_searchbox_typeahead-q"  # where the search box (app/searchbox.py) keeps its state
EVENTS = 30_000
#: Queries only the second build knows (searched by enough users to pass the filter).
NEW_QUERIES = {"en-IN": "quokka selfie spot", "hi-IN": "क्वोक्का सेल्फी"}


@dataclass(frozen=True)
class BuiltData:
    """A data directory holding two published versions per market."""

    path: Path
    versions: dict[str, list[str]]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> BuiltData:
    data_dir = tmp_path_factory.mktemp("typeahead-app") / "data"
    log = querylog.generate(EVENTS, seed=11)
    first = run(data_dir, querylog.write(log, querylog.log_path(data_dir)))
    assert first.ok, first.to_dict()
    extra = data_dir / "new-searches.csv"
    later = querylog.START_EPOCH + (querylog.DAYS + 1) * 86400
    with extra.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["ts", "market", "query", "user_id"])
        for market, q in NEW_QUERIES.items():
            for u in range(12):
                w.writerow([later + u, market, q, f"new-user-{u}"])
    second = run(data_dir, extra)
    assert second.ok, second.to_dict()
    versions = {
        m.market: [a.version for a in first.markets if a.market == m.market] + [m.version]
        for m in second.markets
    }
    assert all(len(set(v)) == 2 for v in versions.values()), versions
    return BuiltData(data_dir, versions)


@pytest.fixture
def api(
    built: BuiltData,
    serve_asgi: Callable[[ASGIApp], str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> str:
    """The real API over a private copy of the built data; returns its base URL. The
    dashboard shares the data directory (where it finds the admin token)."""
    from lookup.server import create_app

    data_dir = tmp_path / "data"
    shutil.copytree(built.path, data_dir)
    monkeypatch.setenv("LOOKUP_DATA_DIR", str(data_dir))
    return serve_asgi(create_app(data_dir, subsystems=["lookup.typeahead.http:mount"]))


@pytest.fixture
def at(api: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[AppTest]:
    """The Typeahead page, reached through the dashboard's navigation, talking to ``api``."""
    monkeypatch.setenv("LOOKUP_API_URL", api)
    app = AppTest.from_file(HOME, default_timeout=RUN_TIMEOUT).run()
    app.switch_page(TYPEAHEAD).run()
    assert_clean(app)
    yield app


# ----------------------------------------------------------------------------- helpers


def assert_clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def type_into(at: AppTest, value: str) -> AppTest:
    """What the box reports once typing pauses (one debounced value)."""
    box = box_reported(at)
    at.session_state[BOX_STATE] = {"box": {**box, "text": value}}
    at.run()
    assert_clean(at)
    return at


def box_reported(at: AppTest) -> dict:
    """The box's state as the browser last reported it (text, last submission, counter)."""
    state = at.session_state[BOX_STATE] if BOX_STATE in at.session_state else {}
    return dict(state.get("box") or {"text": "", "submitted": "", "seq": 0})


def pick(at: AppTest, suggestion: str) -> AppTest:
    """What the box reports when a suggestion is clicked (or chosen with ↓ and Enter)."""
    box = box_reported(at)
    at.session_state[BOX_STATE] = {
        "box": {"text": suggestion, "submitted": suggestion, "seq": box["seq"] + 1}
    }
    at.run()
    assert_clean(at)
    return at


def box_data(at: AppTest) -> dict:
    """What the page handed the search box to draw (its dropdown among it)."""
    boxes = [e for e in at.get("bidi_component") if "lookup_searchbox" in e.proto.component_name]
    assert len(boxes) == 1, [e.proto.component_name for e in at.get("bidi_component")]
    return json.loads(boxes[0].proto.json)


def shown(at: AppTest) -> list[str]:
    """The suggestions in the dropdown, as a person reads them (typed part + the rest)."""
    items = box_data(at)["items"]
    return [i["typed"] + i["s"][len(i["typed"]) :] for i in items]


def metric(at: AppTest, label: str) -> str:
    found = [m.value for m in at.metric if m.label == label]
    assert len(found) == 1, (label, [m.label for m in at.metric])
    return found[0]


def frame(at: AppTest, column: str):  # type: ignore[no-untyped-def]
    """The table on the page that has ``column`` (tables are told apart by their columns)."""
    found = [d.value for d in at.dataframe if column in d.value.columns]
    assert len(found) == 1, (column, [list(d.value.columns) for d in at.dataframe])
    return found[0]


def suggest(api: str, q: str, market: str = "en-IN") -> dict:
    """The oracle: the API asked directly."""
    r = httpx.get(f"{api}/v1/suggest", params={"q": q, "market": market})
    assert r.status_code == 200, r.text
    return r.json()


def edits(a: str, b: str) -> int:
    """Keystrokes from a to b: delete back to the common prefix, type the rest."""
    n = len(os.path.commonprefix([a, b]))
    return len(a) - n + len(b) - n


def text_of(at: AppTest) -> str:
    return " ".join(m.value for m in at.markdown) + " ".join(
        e.value for kind in (at.info, at.warning, at.success, at.error) for e in kind
    )


# ------------------------------------------------------------------- without a live system


def open_page(monkeypatch: pytest.MonkeyPatch, api_url: str) -> tuple[AppTest, str]:
    """The typeahead page against the API at ``api_url``, drawn without an exception,
    and the commands it shows."""
    monkeypatch.setenv("LOOKUP_API_URL", api_url)
    app = AppTest.from_file(HOME, default_timeout=RUN_TIMEOUT).run()
    app.switch_page(TYPEAHEAD).run()
    assert_clean(app)
    return app, " ".join(c.value for c in app.code)


def test_api_down_says_how_to_start_it(
    monkeypatch: pytest.MonkeyPatch, nothing_listening: str
) -> None:
    app, commands = open_page(monkeypatch, nothing_listening)
    assert "needs the API" in app.warning[0].value
    assert "make run" in commands and "lookup serve" in commands
    assert "lookup typeahead build" in commands
    assert not app.metric  # no half-drawn page


def test_api_without_data_says_how_to_build_it(
    monkeypatch: pytest.MonkeyPatch, threaded_api: str
) -> None:
    app, commands = open_page(monkeypatch, threaded_api)
    assert "No typeahead snapshot" in app.info[0].value
    assert "lookup datasets build typeahead" in commands
    assert "lookup typeahead build" in commands


# ----------------------------------------------------------------------------- the box


def test_every_answer_equals_the_servers_and_the_counters_add_up(at: AppTest, api: str) -> None:
    target = suggest(api, "ip")["suggestions"][0]  # the most popular query under "ip"
    # Type it one character at a time, then backspace twice, then clear the box.
    values = [target[:n] for n in range(1, len(target) + 1)]
    values += [target[:-1], target[:-2], ""]
    typed, last, completed_at = 0, "", None
    for value in values:
        before = int(metric(at, "Requests sent")) if at.metric else 0
        type_into(at, value)
        typed += edits(last, value)
        last = value
        requests = int(metric(at, "Requests sent"))
        if value:
            oracle = suggest(api, value)
            assert shown(at) == oracle["suggestions"], value
            if completed_at is not None and value.startswith(completed_at):
                assert requests == before, (
                    f"{value!r} was asked although {completed_at!r} was complete"
                )
            if oracle["complete"] and completed_at is None:
                completed_at = value
        else:
            assert requests == before  # an empty box asks nothing
            assert "Type to see suggestions" in box_data(at)["empty"]
    assert int(metric(at, "Keystrokes typed")) == typed
    requests = int(metric(at, "Requests sent"))
    local = int(metric(at, "Answered locally"))
    answered = sum(1 for v in values if v)
    assert requests + local == answered
    assert local >= 2  # the two backspaces were answered from the local cache
    assert requests < typed


def test_complete_answers_are_filtered_locally(at: AppTest, api: str) -> None:
    # Find a prefix whose answer is complete and has a longer prefix with fewer answers.
    body = suggest(api, "iphone 1")
    assert body["complete"] or body["suggestions"]
    prefix = next(
        p
        for p in ("iphone 1", "iphone 16", "iphone 16 p", "iphone 17")
        if suggest(api, p)["complete"]
    )
    type_into(at, prefix)
    requests = int(metric(at, "Requests sent"))
    longer = suggest(api, prefix)["suggestions"][0]
    type_into(at, longer)
    assert int(metric(at, "Requests sent")) == requests
    assert shown(at) == suggest(api, longer)["suggestions"]
    assert "complete reuse" in text_of(at)
    # The walk panel still shows what the server would do for the longer prefix.
    trace = httpx.get(f"{api}/v1/typeahead/trace", params={"q": longer, "market": "en-IN"}).json()
    assert metric(at, "Nodes visited") == str(trace["nodesVisited"])


def test_hindi_market_devanagari_and_the_walk(at: AppTest, api: str) -> None:
    at.button_group(key="ta-market").set_value("hi-IN").run()
    assert_clean(at)
    # क्ष is one syllable and three code points; the walk steps through code points.
    type_into(at, "क्ष")
    assert shown(at) == suggest(api, "क्ष", "hi-IN")["suggestions"]
    assert "3 code points: U+0915 U+094D U+0937" in text_of(at)
    # A Devanagari prefix the data set certainly holds: two code points of its top query.
    top = next(s for s in suggest(api, "", "hi-IN")["suggestions"] if not s.isascii())
    type_into(at, top[:2])
    assert shown(at) == suggest(api, top[:2], "hi-IN")["suggestions"]
    assert top in shown(at)
    trace = httpx.get(f"{api}/v1/typeahead/trace", params={"q": top[:2], "market": "hi-IN"}).json()
    assert metric(at, "Nodes visited") == str(trace["nodesVisited"])
    # Latin-typed Hindi: the spellings people use lead to the same suggestion.
    type_into(at, "kyaa")
    assert shown(at) == suggest(api, "kyaa", "hi-IN")["suggestions"]
    assert any(s.startswith("kya ") for s in shown(at))


def test_the_trie_walk_matches_the_servers_trace(at: AppTest, api: str) -> None:
    type_into(at, "iph")
    trace = httpx.get(f"{api}/v1/typeahead/trace", params={"q": "iph", "market": "en-IN"}).json()
    assert metric(at, "Nodes visited") == str(trace["nodesVisited"])
    walk = next(m.value for m in at.markdown if 'class="ta-walk"' in m.value)
    labels = re.findall(r'<span class="ta-node">(.*?)<small>', walk)
    assert "".join(labels) == "iph"
    assert metric(at, "Walk").endswith("µs")
    stored = frame(at, "stored suggestion")["stored suggestion"].tolist()
    assert stored == trace["stored"]


# ----------------------------------------------------------------- trending, block, swap


def test_a_replayed_burst_makes_a_newcomer_trend(at: AppTest, api: str) -> None:
    term = at.text_input(key="ta-burst-term-en-IN").value
    watch = term[:3]
    assert term not in suggest(api, watch)["suggestions"]
    at.button(key="ta-burst").click().run()
    assert_clean(at)
    assert f"{term} was suggested for {watch} from simulated minute" in text_of(at).replace(
        "**", ""
    )
    assert term in suggest(api, watch)["suggestions"]
    trending = frame(at, "searches in window")
    assert term in trending["query"].tolist()
    lists = frame(at, "before the burst")
    assert term not in lists["before the burst"].tolist()
    assert term in lists["after the burst"].tolist()
    type_into(at, watch)
    assert term in shown(at)


def test_blocking_removes_a_suggestion_at_once_and_unblocking_restores_it(
    at: AppTest, api: str
) -> None:
    type_into(at, "ip")
    victim = shown(at)[0]
    at.text_input(key="ta-block-term").set_value(victim)
    at.button(key="ta-block-submit").click().run()
    assert_clean(at)
    assert victim not in shown(at)
    assert shown(at) == suggest(api, "ip")["suggestions"]
    assert f"Blocked `{victim}`" in text_of(at)
    assert f"~~{victim}~~" in text_of(at)
    assert victim in httpx.get(f"{api}/v1/typeahead/blocklist").json()["terms"]
    at.button(key=f"ta-unblock-{victim}").click().run()
    assert_clean(at)
    assert victim in shown(at)
    assert httpx.get(f"{api}/v1/typeahead/blocklist").json()["terms"] == []


def test_swap_and_rollback_change_what_the_box_answers(
    at: AppTest, api: str, built: BuiltData
) -> None:
    old, new = built.versions["en-IN"]
    prefix = NEW_QUERIES["en-IN"][:-1]
    type_into(at, prefix)
    assert NEW_QUERIES["en-IN"] in shown(at)  # only the newer snapshot knows it

    def states() -> dict[str, str]:
        versions = frame(at, "version")
        return dict(zip(versions["version"], versions["state"], strict=True))

    def serving() -> str:
        body = httpx.get(f"{api}/v1/typeahead/snapshots").json()
        return body["markets"]["en-IN"]["current"]["version"]

    assert states() == {new: "serving", old: "stored"}  # a fresh server keeps no previous
    assert at.button(key="ta-rollback").disabled
    at.selectbox(key="ta-version-en-IN").set_value(old)
    at.button(key="ta-activate").click().run()
    assert_clean(at)
    assert serving() == old
    assert f"swapped in `{old}`" in text_of(at)
    assert states() == {old: "serving", new: "previous (rollback target)"}
    assert NEW_QUERIES["en-IN"] not in shown(at)  # the box asked the old snapshot afresh
    assert shown(at) == suggest(api, prefix)["suggestions"]

    at.button(key="ta-rollback").click().run()
    assert_clean(at)
    assert serving() == new
    assert f"rolled back to `{new}`" in text_of(at)
    assert NEW_QUERIES["en-IN"] in shown(at)


def test_a_snapshot_built_from_the_page_serves_and_keeps_the_old_one_for_rollback(
    at: AppTest, api: str, built: BuiltData
) -> None:
    """Issue 24, item 16: the Snapshots tab builds a new snapshot through the API
    (``POST /v1/typeahead/snapshots/build``), follows it to the end and shows it serving."""
    _, new = built.versions["en-IN"]
    assert not at.button(key="ta-build").disabled
    at.button(key="ta-build").click().run(timeout=180)
    assert_clean(at)
    job = httpx.get(f"{api}/v1/typeahead/snapshots/build").json()
    assert job["state"] == "succeeded", job
    made = {m["market"]: m["version"] for m in job["result"]["markets"]}
    assert made["en-IN"] not in built.versions["en-IN"]
    assert f"built and published `{made['en-IN']}`" in text_of(at)
    body = httpx.get(f"{api}/v1/typeahead/snapshots").json()["markets"]["en-IN"]
    assert body["current"]["version"] == made["en-IN"] and body["previous"] == new
    versions = frame(at, "version")
    states = dict(zip(versions["version"], versions["state"], strict=True))
    assert states[made["en-IN"]] == "serving" and states[new] == "previous (rollback target)"
    assert not at.button(key="ta-rollback").disabled  # the old one is one click away
    type_into(at, "ip")
    assert shown(at) == suggest(api, "ip")["suggestions"]


def test_a_canary_is_started_shown_and_aborted_from_the_page(
    at: AppTest, api: str, built: BuiltData
) -> None:
    old, new = built.versions["en-IN"]
    canary_url = f"{api}/v1/typeahead/snapshots/en-IN/canary"
    at.selectbox(key="ta-version-en-IN").set_value(old)
    assert at.button(key="ta-canary-abort").disabled
    at.button(key="ta-canary-start").click().run()
    assert_clean(at)
    assert f"started a canary of `{old}`" in text_of(at)
    state = httpx.get(canary_url).json()["canary"]
    assert (state["state"], state["version"], state["share"]) == ("RUNNING", old, 0.1)
    assert "Canary in progress" in text_of(at)
    versions = frame(at, "version")
    assert dict(zip(versions["version"], versions["state"], strict=True)) == {
        new: "serving",
        old: "canary",
    }
    # A client the canary takes sees the old version; the page counts its requests.
    answers = [
        httpx.get(f"{api}/v1/suggest", params={"q": "ip"}, headers={"X-Client-Id": f"c{i}"})
        for i in range(60)
    ]
    versions_seen = {a.json()["version"] for a in answers}
    assert versions_seen == {old, new}  # 10 % of 60 clients: both arms are there
    at.run()
    assert metric(at, "Canary requests") == str(httpx.get(canary_url).json()["canary"]["requests"])
    assert at.button(key="ta-canary-start").disabled
    at.button(key="ta-canary-abort").click().run()
    assert_clean(at)
    assert httpx.get(canary_url).json()["canary"]["state"] == "ABORTED"
    assert "aborted" in text_of(at)
    assert httpx.get(f"{api}/v1/suggest", params={"q": "ip"}).json()["version"] == new


# ------------------------------------------------------------------ choosing a suggestion


def test_choosing_a_suggestion_submits_the_search(at: AppTest, api: str, tmp_path: Path) -> None:
    """A suggestion clicked (or chosen with the arrow keys and Enter) fills the box and is
    recorded by ``POST /v1/searches`` — in the log the next build reads — once per choice."""
    from lookup.typeahead.pipeline import typeahead_dir

    searches = typeahead_dir(tmp_path / "data") / "searches.csv"
    type_into(at, "ip")
    first = shown(at)[0]
    assert not searches.exists()  # typing alone searches nothing
    pick(at, first)
    assert box_data(at)["text"] == first
    assert metric(at, "Keystrokes typed") == "2"  # a choice is not typing
    assert shown(at) == suggest(api, first)["suggestions"]
    assert any(f"Searched for **{first}**" in s.value for s in at.success)
    with searches.open(encoding="utf-8") as f:
        assert [(r["market"], r["query"]) for r in csv.DictReader(f)] == [("en-IN", first)]
    type_into(at, first + " ")  # typing on after a search submits nothing more
    pick(at, first)  # the same choice again is a second search
    with searches.open(encoding="utf-8") as f:
        assert [r["query"] for r in csv.DictReader(f)] == [first, first]
