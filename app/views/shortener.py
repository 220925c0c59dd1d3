"""URL shortener: shorten a link, click it, watch its clicks, push traffic through the caches.

Everything here goes over HTTP to the API at ``$LOOKUP_API_URL`` (the same calls any
client makes). The page's owner token, minted once with ``POST /v1/tokens``, is kept in
a cookie of this browser (``app/cookies.py``), so "My links" — ``GET /v1/links`` with
that token — are still there after a reload or in a new tab.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import httpx
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
import streamlit as st
from common import LOOKUP, Answer, api_url, data_dir, show_api_status, term_help
from common import call as api_call
from cookies import read_cookie, remember_cookie
from drillcharts import drill_figures, drill_story

from lookup.fleet import layer_counts, outage_drill, read_state
from lookup.kit.admin import load_admin_token_in, server_admin_token
from lookup.shortener.simulate import TrafficPlan, simulate_traffic

TOKEN = "shortener.token"
#: The browser cookie that keeps the owner token across reloads.
TOKEN_COOKIE = "lookup_owner_token"
#: Set after a link is made: the next run empties the form's boxes.
CLEAR_FORM = "shortener.clear_form"
FORM_KEYS = {"create-url": "", "create-alias": "", "create-password": ""}
CREATED = "shortener.created"
PROBE = "shortener.probe"
SIM_RESULT = "shortener.sim_result"
SIM_KEYS = "shortener.sim_keys"
NOTICE = "shortener.notice"
DRILL_RESULT = "shortener.drill_result"
FLEET_NOTICE = "shortener.fleet_notice"
SELECTED = "shortener.selected"
#: A link to select on the next run (a widget's own key cannot change once it is drawn).
SELECT_NEXT = "shortener.select_next"

HUMAN_COLOR = "#1f6feb"
BOT_COLOR = "#bf8700"
PREVIEW_COLOR = "#8250df"
TRAFFIC_LABELS = {
    "human": "People, Zipf-skewed over the links",
    "viral": "Viral burst (cache entry just purged)",
    "bot": "Crawlers (Googlebot, bingbot, …)",
    "preview": "Link-preview fetchers (Slack, WhatsApp, …)",
    "scraper": "Scraper guessing keys",
}
SCAN_BADGE = {
    "SAFE": ":green-badge[SAFE]",
    "SUSPICIOUS": ":orange-badge[SUSPICIOUS]",
    "MALICIOUS": ":red-badge[MALICIOUS]",
    "PENDING": ":gray-badge[PENDING]",
}
STATUS_BADGE = {
    "ACTIVE": ":green-badge[ACTIVE]",
    "DISABLED": ":red-badge[DISABLED]",
    "EXPIRED": ":gray-badge[EXPIRED]",
    "DELETED": ":gray-badge[DELETED]",
}

#: The take-down button a link's status offers: label, icon, widget key, status it sets.
STATUS_TOGGLE = {
    "ACTIVE": ("Disable link", ":material/block:", "link-disable", "DISABLED"),
    "DISABLED": ("Enable link", ":material/check_circle:", "link-enable", "ACTIVE"),
}


def call(method: str, path: str, *, auth: bool = True, **kwargs: Any) -> Answer:
    """One API call with the page's owner token; network failures become an Answer."""
    headers = dict(kwargs.pop("headers", {}) or {})
    if auth and st.session_state.get(TOKEN):
        headers["Authorization"] = f"Bearer {st.session_state[TOKEN]}"
    return api_call(method, path, headers=headers, **kwargs)


def metric_row(columns: Sequence[Any], figures: Sequence[tuple[str, str, str | None]]) -> None:
    """Bordered metrics, one a column: ``(label, value, help)`` each."""
    for column, (label, value, help_text) in zip(columns, figures, strict=True):
        column.metric(label, value, border=True, help=help_text)


def ensure_token() -> bool:
    """This browser's owner token: the one its cookie holds, else one minted now (and
    stored in the cookie); False (with a message) if minting fails."""
    if not st.session_state.get(TOKEN):
        kept = read_cookie(TOKEN_COOKIE)
        if kept is None:
            answer = call("POST", "/v1/tokens", auth=False)
            if not answer.ok or not isinstance(answer.body, dict):
                st.error(
                    f"Could not get an owner token: {answer.message()}", icon=":material/key_off:"
                )
                return False
            kept = answer.body["token"]
        st.session_state[TOKEN] = kept
    remember_cookie(TOKEN_COOKIE, st.session_state[TOKEN])
    return True


def refusal(answer: Answer, long_url: str) -> str:
    """Why a link was not made, in words for the person who typed it (the API's code kept
    at the end for whoever reports it)."""
    body = answer.body if isinstance(answer.body, dict) else {}
    if body.get("error") != "INVALID_URL":
        return answer.message()
    if not long_url:
        return "type or paste a web address first (INVALID_URL)"
    reason = str(body.get("message", "")).replace("longUrl", "the address")
    return (
        f"“{long_url[:80]}” is not a web address this shortener accepts — {reason}. "
        "Write it in full, such as https://example.com/page (INVALID_URL)"
    )


# ------------------------------------------------------------------------------ create


def create_form() -> None:
    """The form that shortens a link, with the optional extras."""
    if st.session_state.pop(CLEAR_FORM, False):
        st.session_state.update(FORM_KEYS)  # before the boxes are drawn: they start empty
        st.session_state["create-max-clicks"] = 0
        st.session_state["create-expiry"] = None
    with st.form("shortener-create", border=True):
        st.markdown("**Shorten a link**")
        long_url = st.text_input(
            "Long URL", placeholder="https://example.com/a/very/long/path", key="create-url"
        )
        left, right = st.columns(2)
        alias = left.text_input(
            "Custom alias (optional)",
            placeholder="spring-sale",
            max_chars=32,
            key="create-alias",
            help="3 to 32 letters, digits, '-' or '_'; reserved words are refused.",
        )
        password = right.text_input(
            "Password (optional)",
            type="password",
            key="create-password",
            help="Visitors see a password page first.",
        )
        left, right = st.columns(2)
        expires = left.datetime_input(
            "Expires (UTC, optional)",
            value=None,
            min_value=datetime.now(UTC).replace(tzinfo=None),
            key="create-expiry",
            format="YYYY-MM-DD",
        )
        max_clicks = right.number_input(
            "Max clicks (0 = unlimited)",
            min_value=0,
            max_value=1_000_000,
            step=1,
            key="create-max-clicks",
        )
        submitted = st.form_submit_button(
            "Shorten", type="primary", icon=":material/link:", key="create-submit"
        )
    if not submitted:
        return
    body: dict[str, Any] = {"longUrl": long_url.strip()}
    if alias.strip():
        body["customAlias"] = alias.strip()
    if password:
        body["password"] = password
    if expires is not None:
        body["expiresAt"] = expires.replace(tzinfo=UTC).isoformat().replace("+00:00", "Z")
    if max_clicks:
        body["maxClicks"] = int(max_clicks)
    answer = call("POST", "/v1/links", json=body)
    if answer.ok:
        st.session_state[CREATED] = answer.body
        st.session_state[SELECT_NEXT] = answer.body["key"]
        st.session_state[CLEAR_FORM] = True
        st.session_state.pop(PROBE, None)
        st.rerun()
    else:
        st.session_state.pop(CREATED, None)
        st.error(f"Not shortened: {refusal(answer, long_url.strip())}", icon=":material/error:")


def created_card() -> None:
    """The last link made: a short URL that really redirects, and its QR code."""
    created = st.session_state.get(CREATED)
    with st.container(border=True, key="created-card", height="stretch"):
        if not created:
            st.markdown("**Your short link appears here**")
            st.caption(
                "It redirects through the real API server: click it and the server answers "
                "`302` with the destination in `Location` — and drops a click event into its "
                "analytics buffer after the answer has gone out."
            )
            return
        short = created["shortUrl"]
        st.markdown("**Your short link**")
        st.markdown(f"#### [{short}]({short})")
        st.caption(f"→ {created['longUrl']}")
        text, qr = st.columns([3, 2], vertical_alignment="center")
        with text:
            st.markdown(
                f"[Preview page]({short}+) shows the destination, the safety verdict and "
                "the reasons for it before going there."
            )
            if created.get("expiresAt"):
                st.caption(f"Expires {created['expiresAt']}")
        answer = call("GET", f"/v1/links/{created['key']}/qr.png", params={"scale": 6})
        if answer.ok:
            qr.image(answer.content, caption="Scan to open", width="stretch")  # within the card
        else:
            qr.caption(f"QR code unavailable: {answer.message()}")


# ---------------------------------------------------------------------------- my links


def my_links() -> list[dict[str, Any]]:
    """The owner's links, newest first (at most 200)."""
    answer = call("GET", "/v1/links", params={"limit": 200})
    if not answer.ok:
        st.warning(f"Could not list your links: {answer.message()}", icon=":material/warning:")
        return []
    return list(answer.body.get("links", []))


def scan_why(link: dict[str, Any]) -> str:
    """The scanner's reasons for a link's verdict, in one line (what fired, or why none)."""
    reasons = link.get("scanReasons") or []
    if reasons:
        return "; ".join(reasons)
    if link.get("scanVerdict") == "PENDING":
        return "not scanned yet"
    return "no rule fired"


def links_table(links: list[dict[str, Any]]) -> None:
    """A table of the owner's links with status, scan verdict and the reasons for it."""
    rows = [
        {
            "Short URL": link["shortUrl"],
            "Destination": link.get("longUrl") or "—",
            "Status": link["status"],
            "Scan": link.get("scanVerdict", ""),
            "Why": scan_why(link),
            "Created": pd.to_datetime(link["createdAt"]),
            "Expires": pd.to_datetime(link["expiresAt"]) if link.get("expiresAt") else None,
            "Clicks left": link.get("clicksRemaining"),
            "Tags": ", ".join(link.get("tags") or []),
        }
        for link in links
    ]
    st.dataframe(
        pd.DataFrame(rows),
        hide_index=True,
        key="links-table",
        height=min(420, 38 + 35 * len(rows)),
        column_config={
            "Short URL": st.column_config.LinkColumn("Short URL", width="medium"),
            "Destination": st.column_config.TextColumn("Destination", width="large"),
            "Why": st.column_config.TextColumn(
                "Why", width="medium", help="The safety scanner's rules that fired"
            ),
            "Created": st.column_config.DatetimeColumn("Created", format="YYYY-MM-DD HH:mm"),
            "Expires": st.column_config.DatetimeColumn("Expires", format="YYYY-MM-DD HH:mm"),
        },
    )


def _figure_style(fig: go.Figure, height: int = 300) -> go.Figure:
    fig.update_layout(
        height=height,
        margin=dict(l=10, r=10, t=30, b=10),
        legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0),
        bargap=0.15,
    )
    return fig


def timeline_chart(stats: dict[str, Any]) -> go.Figure:
    """Clicks over time: people, crawlers and link previews stacked."""
    frame = pd.DataFrame(stats["series"])
    frame["t"] = pd.to_datetime(frame["t"])
    fig = go.Figure()
    for column, name, color in (
        ("clicks", "People", HUMAN_COLOR),
        ("bots", "Bots", BOT_COLOR),
        ("previews", "Link previews", PREVIEW_COLOR),
    ):
        fig.add_bar(x=frame["t"], y=frame[column], name=name, marker_color=color)
    fig.update_layout(barmode="stack", yaxis_title="clicks")
    return _figure_style(fig, 300)


def breakdown_chart(rows: list[dict[str, Any]], top: int = 10) -> go.Figure:
    """A horizontal bar chart of the top values of one breakdown."""
    frame = pd.DataFrame(rows[:top])
    fig = px.bar(frame, x="clicks", y="value", orientation="h", text="clicks")
    fig.update_traces(
        marker_color=HUMAN_COLOR, textposition="outside", textangle=0, cliponaxis=False
    )
    fig.update_yaxes(autorange="reversed", title=None)
    fig.update_xaxes(title=None)
    return _figure_style(fig, 260)


def devices_chart(rows: list[dict[str, Any]]) -> go.Figure:
    """Devices as a donut."""
    frame = pd.DataFrame(rows)
    fig = px.pie(frame, names="value", values="clicks", hole=0.55)
    fig.update_traces(textinfo="label+percent", showlegend=False)
    return _figure_style(fig, 260)


def link_panel(links: list[dict[str, Any]]) -> None:
    """One link's clicks (charts), and the disable / enable action with the next click."""
    options = [link["key"] for link in links]
    labels = {
        link["key"]: f"{link['key']} → {(link.get('longUrl') or link['status'].lower())[:60]}"
        for link in links
    }
    pending = st.session_state.pop(SELECT_NEXT, None)
    if pending in options:
        st.session_state[SELECTED] = pending
    if st.session_state.get(SELECTED) not in options:
        st.session_state[SELECTED] = options[0]
    top = st.columns([3, 2, 1], vertical_alignment="bottom")
    key = top[0].selectbox("Link", options, format_func=labels.get, key=SELECTED)
    window = top[1].segmented_control(
        "Window",
        ["Last hour, by minute", "Last 24 hours, by hour"],
        default="Last hour, by minute",
        key="stats-window",
    )
    top[2].button("Refresh", icon=":material/refresh:", key="stats-refresh")
    link = next(link for link in links if link["key"] == key)
    granularity = "hour" if window == "Last 24 hours, by hour" else "minute"
    answer = call("GET", f"/v1/links/{key}/stats", params={"granularity": granularity})
    if not answer.ok:
        st.warning(f"No statistics: {answer.message()}", icon=":material/warning:")
        return
    stats = answer.body
    totals = stats["totals"]
    figures = st.columns(5)
    metric_row(
        figures[:4],
        [
            (
                "People",
                f"{totals['clicks']:,}",
                "Clicks by people: bots and link previews excluded.",
            ),
            (
                "Unique visitors",
                f"{stats['uniqueVisitors']['allTime']:,}",
                "HyperLogLog estimate of distinct (IP, browser) pairs, all time (±1.6 %).",
            ),
            ("Bots", f"{totals['bots']:,}", "Crawlers and scripted clients, counted apart."),
            (
                "Link previews",
                f"{totals['previews']:,}",
                "Chat apps fetching the link to draw a preview card.",
            ),
        ],
    )
    verdict = link.get("scanVerdict", "?")
    figures[4].markdown(
        f"**Status** {STATUS_BADGE.get(link['status'], link['status'])}  \n"
        f"**Scan** {SCAN_BADGE.get(verdict, verdict)}"
    )
    if link.get("scanReasons"):
        figures[4].caption(f"{len(link['scanReasons'])} scan rule(s) fired — see below")
    if totals["total"] == 0:
        st.info(
            "No clicks yet. Open the short link (in the table above, or with **Open it** "
            "below), or run the traffic simulator — the charts fill in as clicks arrive.",
            icon=":material/ads_click:",
        )
    else:
        st.markdown(f"**Clicks per {stats['granularity']}** (UTC)")
        st.plotly_chart(timeline_chart(stats), key="chart-timeline")
        breakdowns = stats["breakdowns"]
        charts = [
            ("Countries", "chart-countries", lambda: breakdown_chart(breakdowns["countries"])),
            ("Devices", "chart-devices", lambda: devices_chart(breakdowns["devices"])),
            ("Referrers", "chart-referrers", lambda: breakdown_chart(breakdowns["referrers"])),
            ("Browsers", "chart-browsers", lambda: breakdown_chart(breakdowns["browsers"], 8)),
            ("Operating systems", "chart-os", lambda: breakdown_chart(breakdowns["os"], 8)),
        ]
        for row in (charts[:3], charts[3:]):
            for column, (title, key_name, build) in zip(st.columns(len(row)), row, strict=True):
                with column:
                    st.markdown(f"**{title}** · people only")
                    if totals["clicks"]:
                        st.plotly_chart(build(), key=key_name)
                    else:
                        st.caption("Only bots and link previews so far.")
    safety_panel(link)


def _set_status(key: str, status: str) -> None:
    answer = call("PATCH", f"/v1/links/{key}", json={"status": status})
    if answer.ok:
        st.session_state[NOTICE] = ("success", f"{key} is now {status}.")
    else:
        st.session_state[NOTICE] = ("error", f"Could not change {key}: {answer.message()}")
    st.session_state.pop(PROBE, None)


def _probe(key: str) -> None:
    answer = call("GET", f"/{key}", auth=False)
    title = ""
    if answer.content and b"<h1" in answer.content:
        head = answer.content.split(b"<h1", 1)[1].split(b">", 1)[1].split(b"</h1>", 1)[0]
        title = head.decode("utf-8", "replace")
    st.session_state[PROBE] = {
        "key": key,
        "status": answer.status,
        "location": answer.headers.get("location") if answer.headers else None,
        "title": title,
        "problem": answer.problem,
    }


def local_address(url: str) -> bool:
    """Whether ``url`` points at this machine or a private network (the sandbox web,
    the dashboard): an IP address the scanner cannot tell from a phishing host."""
    try:
        host = urlsplit(url).hostname or ""
        return ipaddress.ip_address(host).is_private or host == "localhost"
    except ValueError:
        return host == "localhost" or host.endswith(".localhost")


def scan_verdict(link: dict[str, Any]) -> None:
    """The safety scan's verdict with the reasons behind it: the rules and blocklist
    entries that fired, as the scanner recorded them."""
    verdict = link.get("scanVerdict", "?")
    reasons = link.get("scanReasons") or []
    st.markdown(f"**Safety scan** {SCAN_BADGE.get(verdict, verdict)}")
    if reasons:
        st.markdown("Why:\n" + "\n".join(f"- {reason}" for reason in reasons))
    elif verdict == "PENDING":
        st.caption("Not scanned yet: the scanner checks every new link within moments.")
    else:
        st.caption("No safety rule fired for this destination.")
    if verdict == "SUSPICIOUS" and local_address(link.get("longUrl") or ""):
        st.info(
            "**Why a local address scores SUSPICIOUS:** the destination is an IP address on "
            "this machine (the sandbox web or the dashboard), not a domain name — and phishing "
            "links often hide behind a bare IP and an unusual port, so the scanner adds points "
            "for both. Nothing is wrong with the link: it still redirects; its preview page "
            "shows a caution.",
            icon=":material/info:",
        )
    st.caption(
        f"The same verdict and reasons are on the link's public [preview page]"
        f"({link['shortUrl']}+)."
    )


def safety_panel(link: dict[str, Any]) -> None:
    """The scan verdict and its reasons; disable or enable the link, and see exactly what
    the next click gets."""
    key = link["key"]
    with st.container(border=True, key="safety-panel"):
        scan_verdict(link)
        st.markdown("**Take it down** — a disabled link gets a warning page, never a `Location`")
        buttons = st.columns([1, 1, 1, 2], vertical_alignment="center")
        toggle = STATUS_TOGGLE.get(link["status"])
        if toggle is not None:
            label, icon, widget_key, target = toggle
            buttons[0].button(
                label, icon=icon, key=widget_key, on_click=_set_status, args=(key, target)
            )
        buttons[1].button(
            "Try the next click",
            icon=":material/ads_click:",
            key="link-probe",
            on_click=_probe,
            args=(key,),
        )
        buttons[2].link_button("Open it", link["shortUrl"], icon=":material/open_in_new:")
        notice = st.session_state.pop(NOTICE, None)
        if notice:
            (st.success if notice[0] == "success" else st.error)(notice[1])
        probe = st.session_state.get(PROBE)
        if probe and probe["key"] == key:
            if probe["problem"]:
                st.warning(probe["problem"])
            elif probe["location"]:
                st.success(
                    f"`GET /{key}` → **HTTP {probe['status']}**, `Location: {probe['location']}`",
                    icon=":material/call_made:",
                )
            else:
                shown = f" — the page says: *{probe['title']}*" if probe["title"] else ""
                st.error(
                    f"`GET /{key}` → **HTTP {probe['status']}**, no `Location` header{shown}",
                    icon=":material/gpp_bad:",
                )


# --------------------------------------------------------------------------- simulator


def simulator() -> None:
    """Run the traffic simulator against the API and show what each layer absorbed."""
    st.markdown(
        "Sends realistic traffic through the **real HTTP redirect path** — people clicking "
        "links with Zipf-skewed popularity, a viral link whose cache entry was just purged "
        "hit by a burst, crawlers, link-preview fetchers and a scraper guessing keys — and "
        "reads the server's own counters before and after."
    )
    with st.form("simulator-form", border=True):
        cols = st.columns(3)
        requests = cols[0].slider("Requests", 200, 10_000, 2_000, step=100, key="sim-requests")
        links = cols[1].slider("Links", 5, 100, 30, step=5, key="sim-links")
        zipf_s = cols[2].slider("Popularity skew (Zipf s)", 0.5, 2.0, 1.1, step=0.1, key="sim-zipf")
        cols = st.columns(4)
        viral = cols[0].slider("Viral burst", 0.0, 0.5, 0.2, step=0.05, key="sim-viral")
        bots = cols[1].slider("Crawlers", 0.0, 0.3, 0.08, step=0.02, key="sim-bots")
        previews = cols[2].slider("Link previews", 0.0, 0.2, 0.04, step=0.02, key="sim-previews")
        scraper = cols[3].slider(
            "Key-guessing scraper", 0.0, 0.4, 0.1, step=0.05, key="sim-scraper"
        )
        run = st.form_submit_button(
            "Run the simulation", type="primary", icon=":material/play_arrow:", key="sim-run"
        )
    if run:
        plan = TrafficPlan(
            requests=requests,
            links=links,
            zipf_s=zipf_s,
            viral_share=viral,
            bot_share=bots,
            preview_share=previews,
            scraper_share=scraper,
        )
        try:
            plan.validate()
        except ValueError as exc:
            st.error(f"This mix cannot run: {exc}.", icon=":material/error:")
            return
        keys = st.session_state.get(SIM_KEYS)
        if not keys or len(keys) != links + 1:
            keys = None
        targets = simulator_targets()
        with st.spinner(f"Sending {requests:,} requests to {', '.join(targets)} …"):
            try:
                result = simulate_traffic(
                    targets,
                    plan,
                    token=st.session_state[TOKEN],
                    admin_token=_metrics_token(),  # the metrics need it
                    keys=keys,
                )
            except (httpx.HTTPError, RuntimeError) as exc:
                st.error(f"The simulation stopped: {exc}", icon=":material/error:")
                return
        st.session_state[SIM_KEYS] = result.keys
        st.session_state[SIM_RESULT] = result
        st.session_state[SELECT_NEXT] = result.viral_key
        st.rerun()  # so "My links", drawn earlier in this run, shows the new links too
    result = st.session_state.get(SIM_RESULT)
    if result is None:
        st.caption("Choose a mix and run it; the results stay here until the next run.")
        return
    layers = result.layers
    lookups = max(1, layers.get("lookups", 0))
    served_from_memory = layers.get("l1Hits", 0) + layers.get("negativeHits", 0)
    metric_row(
        st.columns(5),
        [
            ("Requests", f"{result.total:,}", None),
            (
                "Answered from memory",
                f"{served_from_memory / lookups:.1%}",
                "LRU hits plus negative-cache hits, of all redirect lookups.",
            ),
            (
                "Store reads",
                f"{layers.get('storeReads', 0):,}",
                "Lookups that reached SQLite (found or not).",
            ),
            (
                "Latency p50 / p99",
                f"{result.latency_ms['p50']:.0f} / {result.latency_ms['p99']:.0f} ms",
                "Round trips measured by the simulator's client "
                "(two cores shared with the server).",
            ),
            (
                "Clicks dropped",
                f"{result.analytics.get('dropped', 0):,}",
                "Click events the analytics buffer had to drop (full buffer).",
            ),
        ],
    )
    rows = result.layer_rows()
    left, right = st.columns([1, 1], gap="medium")
    with left:
        frame = pd.DataFrame(rows)
        fig = px.bar(
            frame,
            x="lookups",
            y="layer",
            orientation="h",
            text="lookups",
            title="What each layer absorbed",
            color="layer",
            color_discrete_sequence=[
                "#1f6feb",
                "#2da44e",
                "#8250df",
                "#6e7781",
                "#bf8700",
                "#cf222e",
            ],
        )
        fig.update_yaxes(
            categoryorder="array", categoryarray=[r["layer"] for r in rows][::-1], title=None
        )
        fig.update_xaxes(title="redirect lookups")
        fig.update_layout(showlegend=False)
        st.plotly_chart(_figure_style(fig, 320), key="chart-layers")
    with right:
        st.dataframe(
            pd.DataFrame(rows)[["layer", "lookups", "share", "meaning"]],
            hide_index=True,
            key="layers-table",
            column_config={
                "layer": st.column_config.TextColumn("Layer", width="medium"),
                "lookups": st.column_config.NumberColumn("Lookups", format="%d", width="small"),
                "share": st.column_config.ProgressColumn(
                    "Share", format="percent", min_value=0.0, max_value=1.0, width="small"
                ),
                "meaning": st.column_config.TextColumn("What it means", width="large"),
            },
        )
        st.caption(
            f"Single-flight: {layers.get('loads', 0):,} loads served "
            f"{layers.get('loads', 0) + layers.get('collapsed', 0):,} misses "
            f"({layers.get('collapsed', 0):,} requests waited for a load already in flight). "
            f"Viral link: `{result.viral_key}`."
        )
    kinds = pd.DataFrame(
        [
            {
                "Traffic": label,
                "Sent": result.sent.get(kind, 0),
                "Answers": ", ".join(
                    f"{status or 'error'} × {n:,}"
                    for status, n in sorted(result.statuses.get(kind, {}).items())
                ),
            }
            for kind, label in TRAFFIC_LABELS.items()
        ]
    )
    st.dataframe(
        kinds,
        hide_index=True,
        key="sim-kinds",
        column_config={
            "Traffic": st.column_config.TextColumn(width="large"),
            "Sent": st.column_config.NumberColumn(width="small"),
            "Answers": st.column_config.TextColumn("HTTP answers", width="medium"),
        },
    )
    st.caption(
        f"{result.total:,} requests in {result.elapsed_s:.1f} s "
        f"({result.requests_per_s:,.0f}/s from a Python client on the same two cores — "
        "the client, not the server, is the limit here). The simulated links are in "
        "“My links”, tagged `simulated`: pick one to see its countries, devices and referrers."
    )


# ------------------------------------------------------------------ backends and the fleet

#: The shortener's seams as ``metrics()["backends"]`` names them, in the order shown.
SEAMS = {
    "store": "Links, aliases, audit, click budgets",
    "ids": "Id blocks",
    "secrets": "Key secret, HMAC keys",
    "cache": "Shared cache tier",
    "limits": "Rate limits",
    "clicks": "Click stream",
    "clickCounts": "Click counts",
    "blocklist": "Domain blocklist",
}


def running_fleet() -> dict[str, Any] | None:
    """The fleet ``lookup up --backend …`` runs over this data directory, when the API this
    page talks to is one of its workers (else None)."""
    state = read_state(data_dir())
    if state and api_url() in [w["url"].rstrip("/") for w in state.get("workers", [])]:
        return state
    return None


def simulator_targets() -> list[str]:
    """Where the simulator sends its traffic: every worker of a running fleet, round-robin,
    or the one API."""
    fleet = running_fleet()
    return [w["url"] for w in fleet["workers"]] if fleet else [api_url()]


def backend_row(seam: str, described: Any) -> dict[str, str]:
    """One seam's backend as a person reads it: the engine and its address."""
    text = str(described or "embedded")
    scheme = text.split("://", 1)[0].lower() if "://" in text else ""
    engine = {"postgresql": "PostgreSQL", "postgres": "PostgreSQL", "redis": "Redis"}.get(scheme)
    if engine:
        return {"Seam": SEAMS.get(seam, seam), "Backend": engine, "Where": text.split("://", 1)[1]}
    where = {
        "embedded": "this process",
        "sqlite": "SQLite in the data directory",
        "none": "none (the in-process LRU only)",
        "off": "off (analytics disabled)",
    }
    return {"Seam": SEAMS.get(seam, seam), "Backend": "embedded", "Where": where.get(text, text)}


def backends_table(metrics: dict[str, Any]) -> pd.DataFrame:
    """Which backend each seam runs on, from the API's ``backends`` (read defensively: an
    API without the key, or without a seam in it, runs that seam embedded)."""
    backends = metrics.get("backends")
    backends = backends if isinstance(backends, dict) else {}
    seams = list(SEAMS) + [k for k in backends if k not in SEAMS]
    return pd.DataFrame([backend_row(seam, backends.get(seam)) for seam in seams])


def layer_table(counts: dict[str, Any]) -> pd.DataFrame:
    """Per worker (and in total): how many redirect lookups each layer answered, as shares."""
    rows = []
    labelled = [(w["url"], w) for w in counts["workers"]] + [("All workers", counts["total"])]
    for label, row in labelled:
        if "error" in row:
            rows.append({"Worker": label, "Lookups": None, "Note": row["error"]})
            continue
        total = max(1, row["requests"])
        rows.append(
            {
                "Worker": label,
                "Lookups": row["requests"],
                "In-process LRU": row["l1"] / total,
                "Negative cache": row["negative"] / total,
                "Redis tier": row["shared"] / total,
                "Store": row["store"] / total,
                "Tier errors": row["sharedErrors"],
            }
        )
    return pd.DataFrame(rows)


def _control(fleet: dict[str, Any], action: str) -> str:
    """Ask the fleet's supervisor to stop or start its Redis (admin token); a sentence."""
    token = load_admin_token_in(data_dir() / "servers")
    try:
        answer = httpx.post(
            f"{fleet['control']}/fleet/cache/{action}",
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        )
    except httpx.HTTPError as exc:
        return f"The fleet's control endpoint did not answer ({type(exc).__name__})."
    if answer.status_code != 200:
        return f"The fleet refused: HTTP {answer.status_code} {answer.text[:200]}"
    return "The cache tier is " + ("running again." if answer.json()["running"] else "stopped.")


def _metrics_token() -> str:
    """The API's admin token: a fleet ``lookup up`` started gives all its processes the one
    in ``<data-dir>/servers``; a single server keeps its own in the data directory."""
    servers = data_dir() / "servers" / "admin.token"
    if servers.exists():
        return load_admin_token_in(servers.parent)
    return server_admin_token(data_dir())


def click_stream_row(metrics: dict[str, Any]) -> None:
    """The click stream's health when it is a bounded Redis stream: the group's lag, the
    clicks retention trimmed before they were counted, the dead-lettered entries."""
    stream = ((metrics.get("analytics") or {}).get("log")) or {}
    if "lostToRetention" not in stream:
        return
    lag = stream.get("groupLag")
    metric_row(
        st.columns(3),
        [
            ("Clicks not yet read", f"{stream['undelivered']:,}",
             f"Clicks in the stream the aggregators' group has not been handed yet "
             f"({'?' if lag is None else f'{lag:,}'} entries, as Redis counts its lag)."),
            ("Clicks lost to retention", f"{stream['lostToRetention']:,}",
             "Clicks the stream's MAXLEN trimmed before an aggregator counted them "
             "(aggregators stopped or too slow for the retention)."),
            ("Dead-lettered entries", f"{stream.get('deadLettered', 0):,}",
             "Entries that could not be decoded or folded, kept aside in <stream>:dead."),
        ],
    )  # fmt: skip


def backends_panel() -> None:
    """Which backends the API runs on, what each layer answered on each worker, and — only
    against servers ``lookup up`` started — the cache-tier drill."""
    # Metrics count links in the store: slower than the page's 2 s default on a busy store.
    answer = call(
        "GET",
        "/v1/shortener/metrics",
        auth=False,
        timeout=10.0,
        headers={"Authorization": f"Bearer {_metrics_token()}"},  # admin only
    )
    if not answer.ok or not isinstance(answer.body, dict):
        st.warning(f"No metrics: {answer.message()}", icon=":material/warning:")
        return
    fleet = running_fleet()
    workers = [w["url"] for w in fleet["workers"]] if fleet else [api_url()]
    st.markdown(
        f"**{len(workers)} API processes** of one fleet (`lookup up --backend "
        f"{','.join(fleet['backends'])}`)." if fleet else
        "**One API process.** `make run-fleet` (`lookup up --backend postgres,redis`) runs "
        "several on PostgreSQL and Redis."
    )  # fmt: skip
    st.dataframe(
        backends_table(answer.body), hide_index=True, key="backends-table",
        column_config={"Seam": st.column_config.TextColumn("Seam", help=term_help("seam"))},
    )  # fmt: skip
    share = st.column_config.ProgressColumn(format="percent", min_value=0.0, max_value=1.0)
    st.dataframe(
        layer_table(layer_counts(workers, timeout=10.0, admin_token=_metrics_token())),
        hide_index=True, key="fleet-layers",
        column_config={c: share for c in ("In-process LRU", "Negative cache", "Redis tier",
                                          "Store")},
    )  # fmt: skip
    st.caption("Shares of redirect lookups since each process started.")
    click_stream_row(answer.body)
    redis = (fleet or {}).get("servers", {}).get("redis") or {}
    if not redis.get("started"):
        st.caption(
            "Stopping the cache tier is offered only against a Redis that `lookup up "
            "--backend redis` started here."
        )
        return
    st.markdown(
        f"**The cache tier** — `{redis['url']}` is "
        + (":green-badge[running]" if redis.get("running") else ":red-badge[stopped]")
    )
    cols = st.columns(3)
    if redis.get("running"):
        if cols[0].button("Stop the cache tier", icon=":material/stop_circle:", key="tier-stop"):
            st.session_state[FLEET_NOTICE] = _control(fleet, "stop")
            st.rerun()
    elif cols[0].button("Start the cache tier", icon=":material/play_circle:", key="tier-start"):
        st.session_state[FLEET_NOTICE] = _control(fleet, "start")
        st.rerun()
    if redis.get("running") and cols[1].button(
        "Run the outage drill", icon=":material/bolt:", key="tier-drill",
        help="Steady redirects (warm links and fresh ones), Redis stopped for 3 s, started "
             "again: watch the misses fall back to the store and return to the tier.",
    ):  # fmt: skip
        with st.spinner("Redirects for 9 s, Redis stopped for 3 of them …"):
            st.session_state[DRILL_RESULT] = outage_drill(
                workers, lambda: _control(fleet, "stop"), lambda: _control(fleet, "start"),
                before_s=2.0, outage_s=3.0, after_s=4.0, rate=15.0, admin_token=_metrics_token(),
            )  # fmt: skip
        st.rerun()
    if st.session_state.get(FLEET_NOTICE):
        st.info(st.session_state.pop(FLEET_NOTICE), icon=":material/info:")
    drill = st.session_state.get(DRILL_RESULT)
    if drill:
        statuses = pd.Series([e["status"] for e in drill["events"]])
        failed = int((statuses == 0).sum() + (statuses >= 500).sum())
        redirects = [e for e in drill["events"] if e["op"].startswith("redirect")]
        metric_row(
            st.columns(3),
            [
                ("Requests", f"{len(drill['events']):,}", None),
                ("5xx or no answer", f"{failed:,}", "Should be 0: the store answers misses."),
                ("Redirect p99", f"{pd.Series([e['ms'] for e in redirects]).quantile(0.99):.0f} ms",
                 "A circuit breaker, not a connect timeout per request."),
            ],
        )  # fmt: skip
        lat, rates = drill_figures(drill)
        left, right = st.columns(2)
        left.plotly_chart(lat, key="chart-drill-latency")
        right.plotly_chart(rates, key="chart-drill-layers")
        story = drill_story(drill)
        if story:
            st.markdown(story)


# -------------------------------------------------------------------------------- page

st.title("URL shortener")
st.markdown(
    "A short link is created once and clicked a hundred times more: the redirect is "
    "**one cache lookup**, and everything else — click analytics, the safety scanner — "
    "runs **beside it, never in it**."
)
health = show_api_status()
if not health.up:
    st.info(
        "This page needs the API: it creates links, follows clicks and reads statistics "
        f"over HTTP. Start it with `make run` (or `{LOOKUP} serve`) and reload.",
        icon=":material/cloud_off:",
    )
    st.stop()
if not ensure_token():
    st.stop()

form_col, card_col = st.columns([3, 2], gap="large")
with form_col:
    create_form()
with card_col:
    created_card()

links_tab, sim_tab = st.tabs(["My links and their clicks", "Traffic simulator"])
with links_tab:
    mine = my_links()
    if not mine:
        st.caption("No links yet: shorten one above, or run the traffic simulator.")
    else:
        links_table(mine)
        st.subheader("Clicks")
        link_panel(mine)
with sim_tab:
    simulator()

st.subheader("Backends")
backends_panel()

with st.expander("How it works", icon=":material/info:"):
    st.markdown(
        "- **Redirect**: in-process LRU (TTL 60 s) → negative cache for unknown keys (30 s) "
        "→ SQLite, with single-flight loading. `302` with "
        "`Cache-Control: max-age=0, s-maxage=60`, so every click stays visible and revocable.\n"
        "- **Analytics**: after the response is sent, the click goes into a bounded in-memory "
        "buffer (dropped and counted when full). A shipper thread parses the user agent, "
        "hashes the IP and writes batches to the click log; an aggregator (its own process "
        "under `lookup serve`) folds the log into per-minute and per-hour counts, skipping "
        "clicks it has already counted, with a HyperLogLog per link for unique visitors.\n"
        "- **Safety**: new and changed links are scanned off the request path (blocklist, "
        "threat feed, URL heuristics); popular links are rescanned hourly, all links on a "
        "rolling sweep and whenever the blocklist changes. A bad verdict disables the link and "
        "purges every cache layer, so the next click gets the warning page."
    )
