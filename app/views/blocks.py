"""Building blocks: the design notes' blocks built for real and measured — ids, rate limiters.

The IDs tab makes ids of every kind in the design notes' table and lays their bits out, shows
the Snowflake capacity figures, measures ids/s and index locality on the spot, and —
when etcd is installed — starts generator processes that lease worker ids, lets you
kill one and watch its lease expire. Everything it starts it stops (the "Stop" button,
and at exit).

The Rate limiters tab fires a traffic pattern (steady, burst, boundary attack, many
identities) at the real limiter of a chosen algorithm — in-process on an injected clock
(minutes in milliseconds), or on Redis in real time with a one-second window (a Redis
URL typed in, else the shared limits' ``LOOKUP_LIMITS_URL`` when it is a Redis, else a
throw-away redis-server on a free loopback port that the page starts and stops) — and
plots admitted vs refused over time with the response headers the decisions carry;
"Compare" runs every algorithm on the same stream side by side.
"""

from __future__ import annotations

import tempfile
import time
import uuid
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from common import labs, left_running
from ringquorum import render as render_kv_tab

from lookup import capacity, settings
from lookup.blocks.ids import ID_KINDS, encode_crockford
from lookup.blocks.ids.kinds import bit_fields, make_kind, timestamp_ms
from lookup.blocks.ids.locality import ratios, sqlite_locality
from lookup.blocks.limits.experiments import max_in_span, memory_url
from lookup.blocks.limits.traffic import PATTERNS, Decided, ManualClock, make_stream, replay
from lookup.kit.ratelimit import ALGORITHM_NAMES, RatePolicy, open_rate_limiter
from lookup.labs import IdLeaseLab, RedisLab, available

st.title("Building blocks")
st.markdown(
    "The blocks that appear inside almost every larger design (the design notes), each built for "
    "real and measured here. **Unique IDs**: ids unique across many machines, made without "
    "a network call per id, and — usually — sortable by time. **Rate limiters**: every "
    "algorithm of the design notes' figure, in-process and on Redis, fired at with real traffic. "
    "**Distributed cache**: eviction policies on real traces, stampedes and cold restarts on "
    "a real Redis, a Redis Cluster losing a master."
)


def _makers() -> dict[str, Any]:
    """One generator per id kind for this session (they keep their own order)."""
    if "ids-makers" not in st.session_state:
        tmp = tempfile.TemporaryDirectory(prefix="lookup-ids-page-")
        st.session_state["ids-tmp"] = tmp
        st.session_state["ids-makers"] = {k: make_kind(k, workdir=tmp.name) for k in ID_KINDS}
    return st.session_state["ids-makers"]


def _text(kind: str, key: int | bytes) -> str:
    if isinstance(key, int):
        return str(key)
    if kind == "ULID":
        return encode_crockford(int.from_bytes(key, "big"))
    return str(uuid.UUID(bytes=key))


def _generate(n: int) -> list[dict[str, Any]]:
    """``n`` ids of each kind, made round-robin with a millisecond between rounds."""
    makers = _makers()
    made: list[dict[str, Any]] = []
    for i in range(n):
        for kind, make in makers.items():
            key = make()
            made.append(
                {
                    "kind": kind,
                    "made #": i + 1,
                    "key": key,
                    "id": _text(kind, key),
                    "unix ms": timestamp_ms(kind, key),
                }
            )
        time.sleep(0.001)
    for kind in makers:
        mine = [m for m in made if m["kind"] == kind]
        order = sorted(range(len(mine)), key=lambda j: mine[j]["key"])
        for rank, j in enumerate(order):
            mine[j]["sorted #"] = rank + 1
    return made


def _seed_table(rates: dict[str, float] | None) -> pd.DataFrame:
    rows = []
    for k in ID_KINDS.values():
        row: dict[str, Any] = {
            "approach": k.name,
            "coordination": k.coordination,
            "sortable": "yes" if k.sortable else "no",
            "size": f"{k.bits}-bit",
            "weakness": k.weakness,
        }
        if rates:
            row["ids/s (measured)"] = f"{rates[k.name]:,.0f}"
        rows.append(row)
    return pd.DataFrame(rows)


def _measure_rates(n: int = 20_000) -> dict[str, float]:
    out = {}
    with tempfile.TemporaryDirectory(prefix="lookup-ids-rate-") as tmp:
        for kind in ID_KINDS:
            make = make_kind(kind, workdir=tmp)
            started = time.perf_counter()
            for _ in range(n):
                make()
            out[kind] = n / (time.perf_counter() - started)
    return out


def _fleet() -> IdLeaseLab | None:
    """The tab's generators and their etcd while they run (a lab of the supervisor)."""
    lab = labs().get("id-leases")
    return lab if isinstance(lab, IdLeaseLab) and lab.alive() else None


def _ids_tab() -> None:
    st.subheader("The design notes' table")
    st.dataframe(_seed_table(st.session_state.get("ids-rates")), hide_index=True)
    if st.button("Measure ids/s (20,000 of each)", key="ids-rate"):
        st.session_state["ids-rates"] = _measure_rates()
        st.rerun()

    st.subheader("Make some ids")
    n = st.number_input("How many of each kind", 1, 50, 5, key="ids-count")
    if st.button("Generate", key="ids-generate", type="primary"):
        st.session_state["ids-made"] = _generate(int(n))
    made = st.session_state.get("ids-made")
    if made:
        frame = pd.DataFrame([{k: v for k, v in m.items() if k != "key"} for m in made])
        st.dataframe(frame, hide_index=True)
        in_order = {
            kind: all(m["made #"] == m["sorted #"] for m in made if m["kind"] == kind)
            for kind in ID_KINDS
        }
        st.markdown(
            "**Sorting the ids gives the order they were made in:** "
            + ", ".join(
                f"{kind} " + (":green-badge[in order]" if ok else ":red-badge[out of order]")
                for kind, ok in in_order.items()
            )
        )  # badges: no emoji font needed
        kind = st.selectbox("Lay out the bits of", list(ID_KINDS), key="ids-bits-kind")
        first = next(m for m in made if m["kind"] == kind)
        st.caption(f"{kind} `{first['id']}`")
        st.dataframe(pd.DataFrame(bit_fields(kind, first["key"])), hide_index=True)
    else:
        st.caption("Press Generate to make ids of every kind and see their bits.")

    st.subheader("Capacity of the Snowflake layout")
    plan = capacity.ids()
    cols = st.columns(4)
    cols[0].metric("Ids per ms, fleet-wide", f"{plan.ids_per_ms_fleet:,.0f}")
    cols[1].metric("Range", f"{plan.range_years:.1f} years")
    cols[2].metric("Workers", f"{plan.workers:,.0f}")
    per_worker = plan.repartition_ids_per_ms_per_worker
    cols[3].metric("Per worker with 4,096 workers", f"{per_worker:,.0f}/ms")
    st.caption(plan.driver())

    st.subheader("Why sortable ids matter: index locality")
    rows = st.number_input(
        "Rows per id kind", 1_000, 100_000, 5_000, step=1_000, key="ids-locality-rows"
    )
    if st.button("Measure index locality (SQLite B-trees)", key="ids-locality"):
        with st.spinner("inserting ..."), tempfile.TemporaryDirectory() as tmp:
            st.session_state["ids-locality-result"] = sqlite_locality(
                list(ID_KINDS), int(rows), tmp
            )
    result = st.session_state.get("ids-locality-result")
    if result:
        table = pd.DataFrame(ratios(result)).set_index("kind")
        st.dataframe(table)
        for col, name in zip(
            st.columns(3), ["insert time ×", "pages ×", "newest 100 ×"], strict=True
        ):
            col.markdown(f"**{name}**")
            col.bar_chart(table[[name]], height=260)
        st.caption(
            "× = against the sequential int measured in the same run. "
            "`benchmarks/bench_ids.py` runs this at 1M rows, and in PostgreSQL."
        )

    st.subheader("Worker ids leased from etcd")
    _leases()


def _holders_table(lab: IdLeaseLab, live: bool) -> None:
    """The worker keys and their leases; re-drawn every second (alone) while ``live``."""

    @st.fragment(run_every=1.0 if live else None)
    def table() -> None:
        if _fleet() is lab:  # not stopped meanwhile
            st.dataframe(pd.DataFrame(lab.fleet.holders()), hide_index=True)

    table()


def _leases() -> None:
    if left_running("id-leases", "", "ids-fleet-left"):
        return
    if not available("id-leases"):
        st.info(
            f"etcd is not installed ({settings.get('etcd_bin')} is missing): "
            "`apt-get install etcd-server` to start generators with leases here."
        )
        return
    lab = _fleet()
    if lab is None:
        st.markdown(
            "Start generator processes that each lease a worker id (TTL 3 s), kill "
            "one, and watch its lease expire while the others keep theirs."
        )
        if st.button("Start etcd and 3 generators", key="ids-fleet-start"):
            with st.spinner("starting ..."):
                labs().start("id-leases", ttl_s=3, generators=3)
            st.rerun()
        return
    fleet = lab.fleet
    live = st.toggle("Refresh every second", value=True, key="ids-fleet-live")
    _holders_table(lab, live)
    holders = fleet.holders()
    running = [h["generator"] for h in holders if h["process"] == "running"]
    cols = st.columns(4)
    victim = cols[0].selectbox("Generator", running, key="ids-fleet-victim") if running else None
    if cols[1].button("Kill it (SIGKILL)", key="ids-fleet-kill", disabled=victim is None):
        fleet.kill(int(victim))
        st.rerun()
    if cols[2].button("Add a generator", key="ids-fleet-add"):
        fleet.add()
        st.rerun()
    cols[3].button("Refresh", key="ids-fleet-refresh")
    if st.button("Stop the generators and etcd", key="ids-fleet-stop"):
        labs().stop("id-leases")
        st.rerun()
    st.caption(
        "A killed process cannot revoke its lease: etcd drops its worker key when the "
        "TTL runs out. A new generator may then take that worker id, but waits until "
        "its clock passes the dead holder's reservation, so no id repeats."
    )


# ----------------------------------------------------------------------- rate limiters

#: The simulated window in-process, and the real one on Redis (the stream plays in real time).
MEMORY_WINDOW_S = 60.0
REDIS_WINDOW_S = 1.0
WINDOWS = 3
BINS_PER_WINDOW = 20
ALGORITHM_HELP = {
    "token_bucket": "O(1) memory, bursts up to the capacity, an average rate (the default)",
    "fixed_window": "O(1) memory; up to 2× the limit across a boundary",
    "sliding_log": "exact; a timestamp per request in the window",
    "sliding_counter": "O(1) memory; blends two windows, removes the boundary burst",
    "leaky_bucket": "a queue drained at a constant rate",
}


def _configured_redis() -> str | None:
    """The shortener's shared limits (``LOOKUP_LIMITS_URL``) when they are on Redis."""
    url = str(settings.get("limits_url") or "").split("?")[0]
    return url if url.startswith("redis://") else None


def _redis_url() -> str | None:
    """The Redis the tab uses: the URL typed in, else the throw-away server it started."""
    typed = st.session_state.get("rl-redis-url", "").strip()
    if typed:
        return typed
    if _configured_redis():
        return _configured_redis()
    lab = _redis_lab()
    return lab.url if lab is not None else None


def _redis_lab() -> RedisLab | None:
    """The throw-away redis-server the tab started, while it runs."""
    lab = labs().get("redis", "limits")
    return lab if isinstance(lab, RedisLab) and lab.alive() else None


def _fire(algorithm: str, limit: int, pattern: str, backend: str) -> dict[str, Any]:
    """One run of ``pattern`` at the real limiter; what the chart and the tables need."""
    if backend == "Redis":
        window = REDIS_WINDOW_S
        url = _redis_url()
        limiter: Any = open_rate_limiter(
            f"{url}?algorithm={algorithm}&on_unavailable=closed",
            RatePolicy.per(limit, window),
            name="dashboard",
        )
        limiter.reset()
        stream = make_stream(pattern, limit, window, WINDOWS)
        decided = replay(limiter, stream, align_s=window)
        unavailable = limiter.stats().get("unavailable", 0)
        limiter.reset()
        limiter.close()
    else:
        window = MEMORY_WINDOW_S
        clock = ManualClock()
        limiter = open_rate_limiter(
            memory_url(algorithm), RatePolicy.per(limit, window), clock=clock
        )
        stream = make_stream(pattern, limit, window, WINDOWS)
        decided = replay(limiter, stream, clock)
        unavailable = 0
    return {
        "algorithm": algorithm,
        "limit": limit,
        "pattern": pattern,
        "backend": backend,
        "window": window,
        "decided": decided,
        "unavailable": unavailable,
    }


def _bins(run: dict[str, Any]) -> pd.DataFrame:
    """Admitted and refused per twentieth of a window."""
    width = run["window"] / BINS_PER_WINDOW
    span = run["window"] * WINDOWS
    rows = [{"t": i * width, "admitted": 0, "refused": 0} for i in range(int(span / width) + 1)]
    for d in run["decided"]:
        i = min(len(rows) - 1, int(d.request.t / width))
        rows[i]["admitted" if d.decision.allowed else "refused"] += 1
    return pd.DataFrame(rows)


def _summary(run: dict[str, Any]) -> dict[str, Any]:
    decided: list[Decided] = run["decided"]
    admitted = [d.request.t for d in decided if d.decision.allowed]
    return {
        "algorithm": run["algorithm"],
        "offered": len(decided),
        "admitted": len(admitted),
        "refused": len(decided) - len(admitted),
        "worst window ÷ limit": round(max_in_span(admitted, run["window"]) / run["limit"], 2),
        "identities": len({d.request.identity for d in decided}),
    }


def _chart(run: dict[str, Any]) -> go.Figure:
    bins = _bins(run)
    width = run["window"] / BINS_PER_WINDOW
    fig = go.Figure()
    fig.add_bar(
        x=bins["t"],
        y=bins["admitted"],
        name="admitted",
        marker_color="#2e7d32",
        width=width * 0.9,
        offset=0,
    )
    fig.add_bar(
        x=bins["t"],
        y=bins["refused"],
        name="refused",
        marker_color="#c62828",
        width=width * 0.9,
        offset=0,
    )
    for k in range(1, WINDOWS):
        fig.add_vline(x=k * run["window"], line_dash="dot", line_color="grey")
    fig.update_layout(barmode="stack", height=360, margin=dict(l=10, r=10, t=50, b=10),
                      title=f"{run['algorithm']} · {run['pattern']} · limit {run['limit']} per "
                            f"{run['window']:g} s ({run['backend']})",
                      xaxis_title="seconds (dotted: window boundaries)",
                      yaxis_title=f"requests per {width:g} s",
                      legend=dict(orientation="h", y=1.0, x=1.0, xanchor="right",
                                  yanchor="bottom"))  # fmt: skip
    return fig


def _compare_chart(runs: list[dict[str, Any]]) -> go.Figure:
    fig = go.Figure()
    for run in runs:
        bins = _bins(run)
        fig.add_scatter(
            x=bins["t"],
            y=bins["admitted"].cumsum(),
            name=run["algorithm"],
            mode="lines",
            line_shape="hv",
        )
    offered = _bins(runs[0])
    fig.add_scatter(
        x=offered["t"],
        y=(offered["admitted"] + offered["refused"]).cumsum(),
        name="offered",
        mode="lines",
        line_shape="hv",
        line=dict(dash="dash", color="grey"),
    )
    fig.update_layout(height=380, margin=dict(l=10, r=10, t=50, b=10),
                      title="Admitted so far, every algorithm on the same stream",
                      xaxis_title="seconds", yaxis_title="requests admitted (cumulative)",
                      legend=dict(orientation="h", y=1.0, x=1.0, xanchor="right",
                                  yanchor="bottom"))  # fmt: skip
    return fig


def _headers_table(run: dict[str, Any]) -> pd.DataFrame:
    """The headers of the first decision, the last admitted one and the first refusal."""
    decided: list[Decided] = run["decided"]
    picks = [
        ("first request", decided[0] if decided else None),
        ("last admitted", next((d for d in reversed(decided) if d.decision.allowed), None)),
        ("first refused", next((d for d in decided if not d.decision.allowed), None)),
    ]
    rows = []
    for what, d in picks:
        if d is None:
            continue
        headers = d.decision.headers()
        rows.append({"decision": what, "at (s)": round(d.request.t, 2),
                     "status": 200 if d.decision.allowed else 429,
                     "RateLimit-Limit": headers["RateLimit-Limit"],
                     "RateLimit-Remaining": headers["RateLimit-Remaining"],
                     "RateLimit-Reset": headers["RateLimit-Reset"],
                     "Retry-After": headers.get("Retry-After", "—")})  # fmt: skip
    return pd.DataFrame(rows)


def _stop_redis() -> None:
    labs().stop("redis", "limits")


def _redis_controls() -> bool:
    """The Redis choices; True when a Redis is there to fire at."""
    st.text_input("Redis URL (empty: a throw-away redis-server started here)",
                  key="rl-redis-url", placeholder="redis://127.0.0.1:6379/0")  # fmt: skip
    if st.session_state.get("rl-redis-url", "").strip():
        return True
    if _configured_redis():
        st.caption(
            f"The shared limits' Redis (`LOOKUP_LIMITS_URL`): `{_configured_redis()}`; "
            "this page's keys live under their own name and are removed after each run."
        )
        return True
    if left_running("redis", "limits", "rl-redis-left"):
        return False
    if _redis_lab() is not None:
        st.caption(f"Throw-away redis-server at `{_redis_url()}` (started by this page).")
        if st.button("Stop the redis-server", key="rl-redis-stop"):
            _stop_redis()
            st.rerun()
        return True
    if not available("redis"):
        st.info(
            f"redis-server is not installed ({settings.get('redis_bin')} is missing) "
            "and no URL is given: `apt-get install redis-server` to fire at Redis here."
        )
        return False
    if st.button("Start a throw-away redis-server", key="rl-redis-start"):
        with st.spinner("starting redis-server ..."):
            labs().start("redis", "limits")
        st.rerun()
    return False


def _limits_tab() -> None:
    st.markdown(
        "Every algorithm of the design notes' figure, one interface: `check(identity, cost)` → "
        "allowed, with `RateLimit-Limit`, `-Remaining`, `-Reset` and, when refused, "
        "`Retry-After`. Pick one, a limit and a traffic pattern, and fire it at the real "
        "limiter."
    )
    cols = st.columns(4)
    algorithm = cols[0].selectbox(
        "Algorithm",
        ALGORITHM_NAMES,
        key="rl-algorithm",
        help="; ".join(f"{k}: {v}" for k, v in ALGORITHM_HELP.items()),
    )
    limit = int(cols[1].number_input("Limit per window", 1, 500, 100, key="rl-limit"))
    pattern = cols[2].selectbox("Traffic", list(PATTERNS), index=2, key="rl-pattern")
    backend = cols[3].radio("Where", ["in-process", "Redis"], key="rl-backend",
                            horizontal=True)  # fmt: skip
    st.caption(
        f"{algorithm}: {ALGORITHM_HELP[algorithm]}. In-process the window is "
        f"{MEMORY_WINDOW_S:g} s on an injected clock; on Redis {REDIS_WINDOW_S:g} s in "
        "real time (Redis takes the time itself)."
    )
    ready = backend == "in-process" or _redis_controls()
    buttons = st.columns(2)
    if buttons[0].button("Fire", key="rl-fire", type="primary", disabled=not ready):
        with st.spinner("firing ..."):
            st.session_state["rl-run"] = _fire(algorithm, limit, pattern, backend)
        st.session_state.pop("rl-compare", None)
    if buttons[1].button(
        "Compare all algorithms on this stream", key="rl-compare-go", disabled=not ready
    ):
        with st.spinner("firing at every algorithm ..."):
            st.session_state["rl-compare"] = [
                _fire(a, limit, pattern, backend) for a in ALGORITHM_NAMES
            ]
    run = st.session_state.get("rl-run")
    if run:
        summary = _summary(run)
        metrics = st.columns(4)
        metrics[0].metric("Offered", f"{summary['offered']:,}")
        metrics[1].metric("Admitted", f"{summary['admitted']:,}")
        metrics[2].metric("Refused", f"{summary['refused']:,}")
        metrics[3].metric("Worst window ÷ limit", f"{summary['worst window ÷ limit']:.2f}×")
        st.plotly_chart(_chart(run), key="rl-chart")
        st.markdown("**Response headers** (what a client is told)")
        st.dataframe(_headers_table(run), hide_index=True, key="rl-headers")
        if run["unavailable"]:
            st.warning(
                f"Redis did not answer {run['unavailable']} times: those were refused "
                "(on_unavailable=closed)."
            )
    compare = st.session_state.get("rl-compare")
    if compare:
        st.subheader("Side by side: every algorithm on the same stream")
        st.plotly_chart(_compare_chart(compare), key="rl-compare-chart")
        st.dataframe(
            pd.DataFrame([_summary(r) for r in compare]), hide_index=True, key="rl-compare-table"
        )
        st.caption(
            "Worst window ÷ limit: the most admitted in any span of one window. The "
            "fixed window lets ~2× through across a boundary; the sliding log is exact."
        )


ids_tab, limits_tab, kv_tab, cache_tab = st.tabs(
    ["Unique IDs", "Rate limiters", "Hash ring & quorum", "Distributed cache"],
    key="blocks-tab",
    on_change="rerun",
)
with ids_tab:
    _ids_tab()
with limits_tab:
    _limits_tab()
with kv_tab:
    if kv_tab.open:  # rendered only when chosen: it hashes 20,000 keys and may run nodes
        render_kv_tab()
with cache_tab:
    if cache_tab.open:  # rendered only when chosen: it may start servers
        import cachelab  # the Distributed cache tab (issue 16)

        cachelab.render()
