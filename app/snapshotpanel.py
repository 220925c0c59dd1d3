"""The typeahead page's Snapshots tab: build a new snapshot, swap, roll back, canary.

Every action is a call to the API's snapshot endpoints (``/v1/typeahead/snapshots…``), made
through the page's own client (:class:`PageHooks`: its kept-alive connection, the admin
token on writes). A build runs in the API in the background (``POST
/v1/typeahead/snapshots/build``, :mod:`lookup.typeahead.building`); the tab follows it
with a progress bar until the new version is published and served.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pandas as pd
import streamlit as st
from common import LOOKUP, Answer
from jobwatch import failure, follow
from typeaheadbackends import dask_live, dask_progress

BUILD_PATH = "/v1/typeahead/snapshots/build"
#: Seconds to wait for the API's poller to serve a version a build published.
SERVE_WAIT_S = 10.0


@dataclass(frozen=True)
class PageHooks:
    """What the tab needs from its page."""

    #: ``call(method, path, **kwargs)``: one API call (the admin token on writes).
    call: Callable[..., Answer]
    #: ``finish(kind, text, market)``: keep a notice, forget cached answers, rerun the page.
    finish: Callable[[str, str, str | None], None]
    #: ``not_built(market)``: the fix when a market has no snapshot yet.
    not_built: Callable[[str], None]


def built_at(version: str) -> str:
    """``20261009T060000Z-ab12cd`` → ``2026-10-09 06:00:00 UTC``."""
    try:
        stamp = datetime.strptime(version.split("-")[0], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    except ValueError:
        return ""
    return stamp.strftime("%Y-%m-%d %H:%M:%S UTC")


def snapshots_panel(market: str, body: dict[str, Any], page: PageHooks) -> None:
    """Stored versions of the market's snapshot (``body``: ``GET /v1/typeahead/snapshots``),
    with a build of a new one, validated swap, one-step rollback and the canary."""
    info = body.get("markets", {}).get(market)
    if not info or not info.get("current"):
        page.not_built(market)
        return
    cur = info["current"]
    a, b, c, d = st.columns(4)
    a.metric("Suggestions", f"{cur['strings']:,}", border=True)
    b.metric(
        "Radix-trie nodes",
        f"{cur['nodes']:,}",
        border=True,
        help=f"A plain trie of the same keys has {cur['plainTrieNodes']:,} nodes.",
    )
    c.metric("Snapshot file", f"{cur['bytes'] / 1e6:.2f} MB", border=True)
    d.metric(
        "Bytes per suggestion",
        f"{cur['bytesPerQuery']:.0f} B",
        border=True,
        help="The whole file (trie, top-10 lists, strings, scores) over the suggestions.",
    )
    rows = []
    canary = info.get("canary") or {}
    for v in reversed(info.get("stored", [])):
        state = (
            "serving"
            if v == cur["version"]
            else "canary"
            if v == canary.get("version") and canary.get("state") == "RUNNING"
            else "previous (rollback target)"
            if v == info.get("previous")
            else "refused"
            if v == info.get("refused")
            else "stored"
        )
        rows.append({"version": v, "built": built_at(v), "state": state})
    st.dataframe(pd.DataFrame(rows), hide_index=True, key="ta-versions")
    pick, swap, back = st.columns([2, 1, 1], vertical_alignment="bottom")
    others = [r["version"] for r in rows if r["version"] != cur["version"]]
    choice = pick.selectbox(
        "Version to swap in",
        others or ["(only one version stored)"],
        key=f"ta-version-{market}",
        disabled=not others,
    )
    if swap.button(
        "Validate and swap in",
        key="ta-activate",
        disabled=not others,
        icon=":material/swap_horiz:",
        width="stretch",
    ):
        out = page.call(
            "POST",
            f"/v1/typeahead/snapshots/{market}/activate",
            json={"version": choice, "compare": True},
        )
        _after_deploy(market, out, page, "swapped in")
    if back.button(
        "Roll back",
        key="ta-rollback",
        disabled=not info.get("previous"),
        icon=":material/undo:",
        width="stretch",
    ):
        out = page.call("POST", f"/v1/typeahead/snapshots/{market}/rollback")
        _after_deploy(market, out, page, "rolled back to")
    build_panel(market, page, only_one=not others)
    canary_panel(market, canary, choice if others else None, page)


def canary_panel(market: str, canary: dict[str, Any], choice: str | None, page: PageHooks) -> None:
    """The canary: start one for the chosen version, watch it compare, abort it."""
    st.markdown(
        "**Canary.** Instead of swapping for everyone, serve the chosen version to a "
        "share of clients first (the same clients throughout, by a hash of their id) and "
        "compare it with the current one on the very same live requests; it is promoted "
        "when it is healthy and rolled back when it is not, by itself."
    )
    running = canary.get("state") == "RUNNING"
    if running:
        st.info(
            f"Canary in progress: `{canary['version']}` answers {canary['share']:.0%} of "
            f"clients, against `{canary['baseline']}`.",
            icon=":material/science:",
        )
        done = min(1.0, canary["requests"] / max(1, canary["minRequests"]))
        st.progress(done, text=f"{canary['requests']:,} of {canary['minRequests']:,} requests")
    if canary:
        a, b, c, d = st.columns(4)
        a.metric("Canary requests", f"{canary['requests']:,}", border=True)
        a_empty, now_empty = canary["emptyRate"], canary["baselineEmptyRate"]
        b.metric(
            "Empty answers",
            f"{a_empty:.1%}",
            f"{a_empty - now_empty:+.1%} vs now" if canary["requests"] else None,
            delta_color="inverse",
            border=True,
        )
        c.metric(
            "Top-5 overlap",
            f"{canary['overlap']:.2f}",
            border=True,
            help=f"Promoted only at {canary['thresholds']['minOverlap']:.2f} or more.",
        )
        d.metric("p95 lookup", f"{canary['p95Ms']:.3f} ms", border=True)
        st.caption(
            f"On the same requests, the current snapshot: {now_empty:.1%} empty answers, "
            f"p95 {canary['baselineP95Ms']:.3f} ms; {canary['errorRate']:.1%} of the "
            "candidate's lookups failed (those were answered by the current one)."
        )
    if canary and not running:
        say = st.success if canary["state"] == "PROMOTED" else st.warning
        say(f"Last canary `{canary['version']}`: **{canary['state'].lower().replace('_', ' ')}**"
            f" — {canary['reason']}")  # fmt: skip
    start, stop = st.columns(2)
    if start.button(
        "Start a canary (10 % of clients)",
        key="ta-canary-start",
        disabled=running or choice is None,
        icon=":material/science:",
        width="stretch",
    ):
        out = page.call("POST", f"/v1/typeahead/snapshots/{market}/canary",
                   json={"version": choice, "share": 0.1})  # fmt: skip
        _after_canary(market, out, page, "started a canary of")
    if stop.button(
        "Abort the canary", key="ta-canary-abort", disabled=not running,
        icon=":material/cancel:", width="stretch",
    ):  # fmt: skip
        out = page.call("DELETE", f"/v1/typeahead/snapshots/{market}/canary")
        _after_canary(market, out, page, "aborted the canary of")


def _after_canary(market: str, out: Answer, page: PageHooks, verb: str) -> None:
    if out.ok and isinstance(out.body, dict):
        version = out.body["canary"]["version"]
        page.finish("success", f"{market}: {verb} `{version}`.", market)
    else:
        page.finish("error", f"{market}: {out.message()}", market)


def _after_deploy(market: str, out: Answer, page: PageHooks, verb: str) -> None:
    if out.ok and isinstance(out.body, dict):
        page.finish(
            "success",
            f"{market}: {verb} `{out.body['version']}` (was `{out.body.get('previous')}`). "
            "The search box now answers from it.",
            market,
        )
    else:
        report = out.body.get("report") if isinstance(out.body, dict) else None
        failed = ""
        if isinstance(report, dict):
            failed = "; ".join(
                f"{c['name']}: {c['detail']}" for c in report.get("checks", []) if not c["ok"]
            )
        page.finish(
            "error",
            f"{market}: not {verb.split()[0]} — {out.message()}{' — ' + failed if failed else ''}",
            market,
        )


def build_panel(market: str, page: PageHooks, *, only_one: bool) -> None:
    """Build a new snapshot of every market from the page, as ``lookup typeahead build``
    does: fold what is new, build, validate against the current one, publish."""
    st.markdown(
        "**Build a new snapshot.** The offline pipeline, run by the API: it folds what is "
        "new since the last build (the searches people submitted), rebuilds each market's "
        "trie with its top 10 per node, validates it against the current snapshot and "
        "publishes it — the server then swaps it in, and the current one becomes the "
        "rollback target."
    )
    state = page.call("GET", BUILD_PATH)
    running = state.ok and isinstance(state.body, dict) and state.body.get("state") == "running"
    clicked = st.button(
        "Build a new snapshot", key="ta-build", icon=":material/construction:",
        type="primary" if only_one else "secondary", disabled=running,
    )  # fmt: skip
    if only_one:
        st.caption(
            "Only one version is stored: build another to swap, roll back or run a canary "
            f"(the same as `{LOOKUP} typeahead build`)."
        )
    if clicked:
        started = page.call("POST", BUILD_PATH, json={})
        if not started.ok:
            page.finish("error", f"The build did not start: {started.message()}", None)
            return
        running = True
    if running:
        done = follow(lambda: page.call("GET", BUILD_PATH), "Building the snapshots",
                      on_state=dask_live(st.empty()))  # fmt: skip
        if done is not None:
            _after_build(market, done, page)


def _after_build(market: str, done: dict[str, Any], page: PageHooks) -> None:
    if done.get("state") == "running":
        page.finish("info", "The build is still running; this tab follows it when opened.", None)
        return
    if done.get("state") != "succeeded":
        page.finish("error", f"The build failed: {failure(done)}", None)
        return
    markets = (done.get("result") or {}).get("markets") or []
    made = {m["market"]: m for m in markets}
    mine = made.get(market)
    if mine is None:
        page.finish("error", f"The build made no snapshot of {market}.", None)
        return
    if not mine.get("published"):
        failed = "; ".join(
            f"{c['name']}: {c['detail']}"
            for c in (mine.get("validation") or {}).get("checks", []) if not c.get("ok")
        )  # fmt: skip
        page.finish("error", f"{market}: the new snapshot `{mine['version']}` was refused — "
                             f"{failed or 'validation failed'}; the current one keeps serving.",
                    market)  # fmt: skip
        return
    _wait_until_served(page, market, mine["version"])
    others = ", ".join(f"{m} `{r['version']}`" for m, r in made.items() if m != market)
    cluster = dask_progress(done)
    folded = f" The log was folded on Dask: {cluster.sentence()}." if cluster else ""
    page.finish(
        "success",
        f"{market}: built and published `{mine['version']}` ({mine['suggestions']:,} "
        f"suggestions, {mine['seconds']:.1f} s); it is serving now and the previous version "
        f"is the rollback target." + (f" Also published: {others}." if others else "") + folded,
        market,
    )


def _wait_until_served(page: PageHooks, market: str, version: str) -> None:
    """The API's poller swaps a published version in within a second; wait for it."""
    deadline = time.monotonic() + SERVE_WAIT_S
    while time.monotonic() < deadline:
        answer = page.call("GET", "/v1/typeahead/snapshots")
        info = answer.body.get("markets", {}).get(market, {}) if answer.ok else {}
        if (info.get("current") or {}).get("version") == version:
            return
        time.sleep(0.2)
