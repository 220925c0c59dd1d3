"""The crawler page's *Controls & host health* tab: steer a crawl through the API, see each host.

Commands go to ``POST /crawler/controls`` on the API with the admin token (the page
holds no back door: a crawl is steered the way an operator's script would steer it);
the controls in force, which version each crawler process has applied, the hosts block
detection flags for review, and the per-host health table are read from the crawl's own
files (:mod:`lookup.crawler.health`), so they show even with the API down.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st
from common import admin_headers, api_url, call

from lookup.crawler.controls import (
    COMMANDS,
    EVERY_HOST,
    Ack,
    ControlCommand,
    ControlState,
    controls_url,
    open_crawl_controls,
)
from lookup.crawler.health import HostHealth, host_health
from lookup.crawler.state import CrawlStateError, crawl_state_url, open_crawl_reader

__all__ = [
    "Issuer",
    "control_form",
    "controls_in_force",
    "controls_tab",
    "flagged_hosts",
    "health_frame",
]

LABELS = {
    "block-host": "Block a host (stop now, for good)",
    "block-pattern": "Block a URL pattern",
    "set-delay": "Set a host's delay (seconds; * for every host)",
    "pause-host": "Pause a host",
    "resume-host": "Resume a host",
    "unblock-host": "Unblock a host",
    "unblock-pattern": "Unblock a URL pattern",
    "recrawl": "Recrawl a URL now",
    "pause-crawl": "Pause the whole crawl",
    "resume-crawl": "Resume the whole crawl",
}
#: Issues one command; answers (issued?, what to tell the person).
Issuer = Callable[[ControlCommand], tuple[bool, str]]


def _counts(d: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in d.items()) or "–"


def _seconds_until(at: float | None, now: float) -> float | None:
    return None if at is None else round(max(0.0, at - now), 2)


def health_frame(rows: list[HostHealth], now: float) -> pd.DataFrame:
    """The health rows as the page's table."""
    return pd.DataFrame(
        [
            {
                "Host": r.host,
                "Control": (f"blocked ({r.blocked})" if r.blocked else "paused" if r.paused else "")
                + (f" delay {r.delay_override:g} s" if r.delay_override is not None else "")
                + (f" every host {r.global_delay:g} s" if r.global_delay is not None else ""),
                "Block check": (
                    f"flagged: {r.refused_share:.0%} refused, slowed {r.slowdown:g}x"
                    if r.flagged
                    else f"{r.refused_share:.0%} refused"
                    if r.refused_share
                    else ""
                ),
                "Requests": r.requests,
                "Pages": r.pages,
                "Errors": _counts(r.errors),
                "429/503": r.throttled,
                "Back-off (s)": round(r.backoff, 2),
                "robots.txt": r.robots or "not read",
                "Robots refused": r.robots_blocked,
                "Trap cuts": _counts(r.cuts),
                "Budget used": f"{r.budget_used}/{r.budget}" if r.budget else str(r.budget_used),
                "Queued": r.queued,
                "Next allowed in (s)": (
                    None
                    if r.next_allowed_at is None
                    else round(max(0.0, r.next_allowed_at - now), 2)
                ),
                "Worker": r.worker or "",
                "Epoch": r.epoch,
            }
            for r in rows
        ]
    )


def _read(out_dir: Path) -> tuple[ControlState, list[Any], list[HostHealth]]:
    controls = open_crawl_controls(controls_url(crawl_state_url(out_dir)))
    try:
        log = controls.since(0)
        acks = controls.acks()
    finally:
        controls.close()
    state = ControlState.of(log)
    with open_crawl_reader(crawl_state_url(out_dir)) as reader:
        rows = host_health(reader, state)
    return state, acks, rows


def _api_issuer(crawl: str | None) -> Issuer:
    """Issue through ``POST /crawler/controls`` with the admin token."""

    def issue(cmd: ControlCommand) -> tuple[bool, str]:
        body: dict[str, Any] = {"command": cmd.command, "target": cmd.target, "note": cmd.note}
        if cmd.value is not None:
            body["value"] = cmd.value
        params = {"crawl": crawl} if crawl else None
        answer = call(
            "POST", "/crawler/controls", json=body, params=params, headers=admin_headers()
        )
        if not answer.ok:
            return False, f"Not issued: {answer.message()}"
        rec = answer.body["issued"]
        return True, f"Control v{rec['version']} issued: {rec['command']} {rec['target']}".rstrip()

    return issue


def control_form(prefix: str, issue: Issuer, placeholder: str = "docs.sandbox.test") -> None:
    """The form that issues any control command, then the last command's result.

    ``prefix`` keys the widgets (``{prefix}-command``, ``-target``, ``-delay``, ``-note``), so
    the Controls tab and the fleet panel can share a page; ``issue`` sends the command.
    """
    result_key = f"{prefix}.result"
    result = st.session_state.pop(result_key, None)
    if result is not None:
        (st.success if result[0] else st.error)(result[1])
    with st.form(f"{prefix}-form", border=True):
        cols = st.columns([2, 3, 1])
        command = cols[0].selectbox(
            "Command", list(COMMANDS), format_func=LABELS.get, key=f"{prefix}-command"
        )
        target = cols[1].text_input(
            "Target",
            key=f"{prefix}-target",
            placeholder=placeholder,
            help="A host (`docs.sandbox.test`, every port; or `host:port`; `*` with "
            "*Set a host's delay* for every host: the global ceiling), a URL glob "
            "(`http://shop.sandbox.test*/cart*`), or a URL to recrawl. Empty for the "
            "whole crawl.",
        )
        value = cols[2].number_input(
            "Delay (s)", min_value=0.0, max_value=3600.0, value=2.0, key=f"{prefix}-delay"
        )
        note = st.text_input("Why (kept in the log)", key=f"{prefix}-note")
        if st.form_submit_button("Issue", icon=":material/send:"):
            delay = value if command == "set-delay" else None
            st.session_state[result_key] = issue(ControlCommand(command, target, delay, note))
            st.rerun()


def controls_in_force(state: ControlState, acks: Sequence[Ack], now: float) -> None:
    """The controls in force as badges, and which version each worker has applied."""
    badges = []
    if state.crawl_paused:
        badges.append(":orange-badge[:material/pause: crawl paused]")
    badges += [f":red-badge[:material/block: {h}]" for h in sorted(state.blocked_hosts)]
    badges += [f":red-badge[:material/block: {p}]" for p in sorted(state.blocked_patterns)]
    badges += [f":orange-badge[:material/pause: {h}]" for h in sorted(state.paused_hosts)]
    badges += [
        f":blue-badge[{'every host' if h == EVERY_HOST else h}: {d:g} s]"
        for h, d in sorted(state.delays.items())
    ]
    st.markdown(f"**Controls in force** (version {state.version}): " + (" ".join(badges) or "none"))
    if acks:
        st.caption(
            "Applied: "
            + "; ".join(f"{a.worker} up to v{a.version} ({now - a.at:.0f} s ago)" for a in acks)
        )
    elif state.version:
        st.caption("No crawler process has applied these yet (none running?).")


def flagged_hosts(rows: Sequence[HostHealth], now: float) -> None:
    """The hosts block detection flags for review: why, and what the crawler did."""
    flagged = [r for r in rows if r.flagged]
    if not flagged:
        return
    lines = [
        f"- **{r.host}**: {r.flagged}"
        + (f" (for {now - r.flagged_since:.0f} s)" if r.flagged_since else "")
        + f"; its pause is {r.slowdown:g}x longer until most answers are pages again"
        for r in flagged
    ]
    st.warning(
        f"**{len(flagged)} host(s) flagged for review**: the site may be blocking the "
        "crawler. Look at what it answered, then block it, pause it or set its delay.\n\n"
        + "\n".join(lines),
        icon=":material/flag:",
    )


def _live(out_dir: Path) -> list[str]:
    """The controls in force, who applied them, and the health table (refreshed live)."""
    try:
        state, acks, rows = _read(out_dir)
    except (FileNotFoundError, CrawlStateError) as exc:
        st.info(f"This crawl has no state to show yet ({exc}).")
        return []
    now = time.time()
    controls_in_force(state, acks, now)
    flagged_hosts(rows, now)
    st.markdown("**Per-host health**")
    if rows:
        st.dataframe(health_frame(rows, now), hide_index=True, key="health-table")
    else:
        st.caption("No host contacted yet.")
    return [r.host for r in rows]


def controls_tab(out_dir: Path, crawl: str | None, running: bool) -> None:
    """The tab: a form to issue a command, the controls in force, the per-host health."""
    st.markdown(
        "Steer the crawl **while it runs**: every command is a versioned row the crawler "
        "reads at least once a second. A blocked host gets **no request at all** from the "
        "next second on — not a page, not robots.txt (the design notes: stop *immediately and "
        "permanently*); its queued URLs are cut by the rule `operator-block`."
    )
    control_form("control", _api_issuer(crawl))
    hint = "" if running else " The crawl is not running: commands apply when it resumes."
    st.caption(f"Commands go to {api_url()}/crawler/controls with the admin token.{hint}")
    st.fragment(run_every=2.0 if running else None)(_live)(out_dir)
