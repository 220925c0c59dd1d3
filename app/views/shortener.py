"""URL shortener: shorten a link, click it, watch its clicks, push traffic through the caches.

Everything here goes over HTTP to the API at ``$LOOKUP_API_URL`` (the same calls any
client makes); the page keeps an owner token, minted with ``POST /v1/tokens``, in its
session so "my links" are the links made from this browser tab.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import httpx
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
import streamlit as st
from common import Answer, api_url, data_dir, show_api_status
from common import call as api_call

from lookup.kit.admin import server_admin_token
from lookup.shortener.simulate import TrafficPlan, simulate_traffic

TOKEN = "shortener.token"
CREATED = "shortener.created"
PROBE = "shortener.probe"
SIM_RESULT = "shortener.sim_result"
SIM_KEYS = "shortener.sim_keys"
NOTICE = "shortener.notice"
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
    """Mint this session's owner token once; False (with a message) if that fails."""
    if st.session_state.get(TOKEN):
        return True
    answer = call("POST", "/v1/tokens", auth=False)
    if not answer.ok or not isinstance(answer.body, dict):
        st.error(f"Could not get an owner token: {answer.message()}", icon=":material/key_off:")
        return False
    st.session_state[TOKEN] = answer.body["token"]
    return True


# ------------------------------------------------------------------------------ create


def create_form() -> None:
    """The form that shortens a link, with the optional extras."""
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
        st.session_state.pop(PROBE, None)
    else:
        st.session_state.pop(CREATED, None)
        st.error(f"Not shortened: {answer.message()}", icon=":material/error:")


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
            qr.image(answer.content, caption="Scan to open", width=170)
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
        with st.spinner(f"Sending {requests:,} requests to {api_url()} …"):
            try:
                result = simulate_traffic(
                    api_url(),
                    plan,
                    token=st.session_state[TOKEN],
                    admin_token=server_admin_token(data_dir()),  # the metrics need it
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
        "over HTTP. Start it with `lookup serve` (or `make run`) and reload.",
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
