"""The typeahead client: debounce, local prefix cache, ``complete`` reuse, version eviction,
and out-of-order answers.

Time is a fake clock the tests move by hand, and requests in flight are explicit
tickets answered in whatever order a test chooses: nothing sleeps, nothing is timed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lookup.typeahead.client import (
    DEFAULT_MAX_AGE,
    Debouncer,
    Shown,
    SuggestClient,
    Ticket,
    edits,
    max_age,
)
from lookup.typeahead.normalize import normalize_prefix

from .conftest import Clock

CORPUS = ["iphone 15", "iphone 16", "iphone 16 pro", "ipl score", "ipl live", "india"]


@dataclass(frozen=True)
class Reply:
    """A ``SuggestReply`` shaped like the dashboard's ``Answer`` (``app/common.py``)."""

    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    ms: float = 1.0
    problem: str | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None and 200 <= self.status < 300

    @property
    def error(self) -> str | None:
        return self.body.get("error") if isinstance(self.body, dict) else None

    def message(self) -> str:
        return self.problem or f"the API answered HTTP {self.status}"


@dataclass
class FakeServer:
    """``/v1/suggest`` over a list of queries: the top ``k`` by list order, ``complete``
    when every completion fits."""

    corpus: list[str]
    version: str = "20261009T060000Z-aaaaaa"
    k: int = 3
    max_age: int = 300
    asked: list[str] = field(default_factory=list)

    def answer(self, raw: str, market: str = "en-IN") -> Reply:
        p = normalize_prefix(raw)
        self.asked.append(p)
        hits = [q for q in self.corpus if q.startswith(p)]
        body = {"q": p, "version": self.version, "complete": len(hits) <= self.k,
                "suggestions": hits[: self.k]}  # fmt: skip
        return Reply(200, body, {"cache-control": f"public, max-age={self.max_age}"})

    __call__ = answer


def truth(prefix: str, server: FakeServer) -> list[str]:
    """What the server would answer: the oracle for whatever the client shows."""
    return [q for q in server.corpus if q.startswith(prefix)][: server.k]


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def server() -> FakeServer:
    return FakeServer(list(CORPUS))


@pytest.fixture
def client(clock: Clock) -> SuggestClient:
    return SuggestClient(clock=clock)


# ------------------------------------------------------------------- keystrokes and debounce


@given(st.text(alphabet="abc ", max_size=8), st.text(alphabet="abc ", max_size=8))
def test_edits_are_deletes_back_to_the_common_prefix_then_typing(a: str, b: str) -> None:
    common = len(os.path.commonprefix([a, b]))
    assert edits(a, b) == (len(a) - common) + (len(b) - common)


def test_typed_counts_the_keystrokes_a_report_merges() -> None:
    c = SuggestClient()
    assert c.typed("iph") and (c.keystrokes, c.reports) == (3, 1)
    assert not c.typed("iph") and (c.keystrokes, c.reports) == (3, 1)  # nothing changed
    assert c.typed("ipl") and (c.keystrokes, c.reports) == (5, 2)  # backspace, then "l"


def test_debounce_reports_once_typing_pauses(clock: Clock) -> None:
    # steps are binary fractions, so the fake clock's sums are exact
    d = Debouncer(0.125, clock)
    assert d.ready() is None and not d.pending
    for text in ("i", "ip", "iph"):
        d.push(text)
        clock.advance(0.0625)  # faster than the pause: nothing is reported
        assert d.ready() is None
    assert d.pending
    clock.advance(0.0625)  # the pause since the last keystroke
    assert d.ready() == "iph"
    assert d.ready() is None and not d.pending  # once per pause
    d.push("ipho")
    clock.advance(0.0625)
    assert d.ready() is None
    d.push("iphon")  # a keystroke restarts the wait
    clock.advance(0.0625)
    assert d.ready() is None
    clock.advance(0.0625)
    assert d.ready() == "iphon"


def test_debounce_zero_reports_every_keystroke(clock: Clock) -> None:
    d = Debouncer(0.0, clock)
    reported = []
    for text in ("i", "ip", "iph"):
        d.push(text)
        reported.append(d.ready())
    assert reported == ["i", "ip", "iph"]
    with pytest.raises(ValueError):
        Debouncer(-1.0, clock)


def test_debounced_typing_sends_one_request_per_pause(
    clock: Clock, client: SuggestClient, server: FakeServer
) -> None:
    d = Debouncer(0.125, clock)
    # "in" typed in a burst, a pause, then "dia" typed in a burst, a pause.
    for burst in (["i", "in"], ["ind", "indi", "india"]):
        for text in burst:
            d.push(text)
            clock.advance(0.03125)
            assert d.ready() is None
        clock.advance(0.125)
        value = d.ready()
        assert value is not None
        client.typed(value)
        shown = client.resolve(value, "en-IN", server)
        assert shown.suggestions == truth(normalize_prefix(value), server)
    assert client.keystrokes == 5 and client.reports == 2
    assert server.asked == ["in"]  # "india" came from the complete answer for "in"
    assert client.requests == 1 and client.from_complete == 1


# ------------------------------------------------------------------ cache, reuse, eviction


def test_empty_box_asks_nothing(client: SuggestClient, server: FakeServer) -> None:
    shown = client.resolve("   ", "en-IN", server)
    assert shown.source == "empty" and shown.suggestions == []
    assert server.asked == [] and client.requests == 0


def test_an_exact_prefix_is_answered_from_the_cache_until_max_age(
    clock: Clock, client: SuggestClient, server: FakeServer
) -> None:
    assert client.resolve("ip", "en-IN", server).source == "server"
    clock.advance(299)
    again = client.resolve("ip", "en-IN", server)
    assert again.source == "cache" and again.suggestions == truth("ip", server)
    clock.advance(1)  # max-age=300 has run out
    assert client.resolve("ip", "en-IN", server).source == "server"
    assert server.asked == ["ip", "ip"]
    assert (client.requests, client.from_cache) == (2, 1)


def test_a_complete_answer_is_filtered_for_longer_prefixes(
    client: SuggestClient, server: FakeServer
) -> None:
    first = client.resolve("iphone", "en-IN", server)
    assert first.complete and first.suggestions == ["iphone 15", "iphone 16", "iphone 16 pro"]
    for raw in ("iphone 1", "iphone 16", "iphone 16 p", "iphone 17"):
        shown = client.resolve(raw, "en-IN", server)
        assert shown.source == "complete" and shown.via == "iphone"
        assert shown.suggestions == truth(raw, server)
    assert server.asked == ["iphone"]
    # an incomplete answer is never filtered: "i" has more than k completions
    assert not client.resolve("i", "en-IN", server).complete
    assert client.resolve("in", "en-IN", server).source == "server"


def test_a_newer_version_evicts_the_answers_of_older_ones(
    client: SuggestClient, server: FakeServer
) -> None:
    client.resolve("ipl", "en-IN", server)
    client.resolve("india", "hi-IN", server)  # another market keeps its answers
    server.version = "20261010T060000Z-bbbbbb"
    server.corpus.insert(0, "iphone 17")
    assert client.resolve("iph", "en-IN", server).suggestions[0] == "iphone 17"
    assert client.versions["en-IN"] == server.version
    assert ("en-IN", "ipl") not in client.cache  # the old cut's answer is gone
    assert ("hi-IN", "india") in client.cache
    assert client.resolve("ipl", "en-IN", server).source == "server"


def test_a_failed_request_is_shown_as_an_error_and_not_cached(client: SuggestClient) -> None:
    def down(raw: str, market: str) -> Reply:
        return Reply(503, {"error": "NOT_BUILT", "message": "no snapshot"})

    shown = client.resolve("ip", "en-IN", down)
    assert shown.source == "error" and shown.code == "NOT_BUILT"
    assert client.cache == {} and client.requests == 1


def test_refreshes_count_requests_no_keystroke_caused(
    client: SuggestClient, server: FakeServer
) -> None:
    client.resolve("ip", "en-IN", server)
    client.forget("en-IN")
    assert client.shown is None and client.cache == {}
    client.resolve("ip", "en-IN", server, typed=False)
    client.resolve("ip", "en-IN", server, typed=False)  # from the cache: no request
    assert (client.requests, client.refreshes) == (2, 1)


def test_max_age_comes_from_cache_control() -> None:
    assert max_age({"cache-control": "public, max-age=60"}) == 60.0
    assert max_age({}) == DEFAULT_MAX_AGE


# ----------------------------------------------------------------------- out of order


def ticket(client: SuggestClient, raw: str) -> Ticket:
    decided = client.begin(raw, "en-IN")
    assert isinstance(decided, Ticket), decided
    return decided


def test_a_late_answer_to_an_old_keystroke_never_replaces_a_newer_one(
    client: SuggestClient, server: FakeServer
) -> None:
    old, new = ticket(client, "ip"), ticket(client, "ipl")
    assert new.seq > old.seq
    shown = client.finish(new, server("ipl"))
    assert shown is not None and shown.suggestions == truth("ipl", server)
    assert client.finish(old, server("ip")) is None  # arrives last: not shown
    assert client.shown is shown and client.late == 1
    # ... but it was a good answer for "ip", so it is kept
    again = client.resolve("ip", "en-IN", server)
    assert again.source == "cache" and again.suggestions == truth("ip", server)
    assert server.asked == ["ipl", "ip"]


def test_answers_in_order_each_take_the_screen(client: SuggestClient, server: FakeServer) -> None:
    old, new = ticket(client, "ip"), ticket(client, "ipl")
    first = client.finish(old, server("ip"))  # the older answer comes first: shown for now
    assert first is not None and client.shown is first
    second = client.finish(new, server("ipl"))
    assert second is not None and client.shown is second and client.late == 0


def test_a_local_answer_after_a_request_is_not_replaced_by_it(
    client: SuggestClient, server: FakeServer
) -> None:
    client.resolve("iphone", "en-IN", server)  # complete
    pending = ticket(client, "i")  # sent, still in flight
    local = client.begin("iphone 16", "en-IN")  # answered at once from the complete one
    assert isinstance(local, Shown) and local.source == "complete"
    assert client.finish(pending, server("i")) is None
    assert client.shown is local


def test_a_late_answer_from_an_older_cut_neither_evicts_nor_is_kept(
    client: SuggestClient, server: FakeServer
) -> None:
    old = ticket(client, "ip")
    stale = server("ip")  # answered by the old snapshot, delivered late
    server.version = "20261010T060000Z-bbbbbb"
    new = ticket(client, "in")
    assert client.finish(new, server("in")) is not None
    assert client.finish(old, stale) is None
    assert client.versions["en-IN"] == server.version
    assert ("en-IN", "in") in client.cache and ("en-IN", "ip") not in client.cache


def test_a_late_failure_leaves_the_newer_answer_on_screen(
    client: SuggestClient, server: FakeServer
) -> None:
    old, new = ticket(client, "ip"), ticket(client, "ipl")
    shown = client.finish(new, server("ipl"))
    assert client.finish(old, Reply(0, problem="timed out")) is None
    assert client.shown is shown and client.shown.source == "server"
