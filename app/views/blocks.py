"""Building blocks: seed 004's blocks built for real and measured — unique ids.

The IDs tab makes ids of every kind in the seed's table and lays their bits out, shows
the Snowflake capacity figures, measures ids/s and index locality on the spot, and —
when etcd is installed — starts generator processes that lease worker ids, lets you
kill one and watch its lease expire. Everything it starts it stops (the "Stop" button,
and at exit).
"""

from __future__ import annotations

import atexit
import tempfile
import time
import uuid
from typing import Any

import pandas as pd
import streamlit as st

from lookup import capacity, settings
from lookup.blocks.ids import ID_KINDS, encode_crockford
from lookup.blocks.ids.etcd import etcd_available
from lookup.blocks.ids.fleet import LeaseFleet
from lookup.blocks.ids.kinds import bit_fields, make_kind, timestamp_ms
from lookup.blocks.ids.locality import ratios, sqlite_locality

st.title("Building blocks")
st.markdown(
    "The blocks that appear inside almost every larger design (seed 004), each built for "
    "real and measured here. **Unique IDs**: ids unique across many machines, made without "
    "a network call per id, and — usually — sortable by time."
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
            made.append({"kind": kind, "made #": i + 1, "key": key, "id": _text(kind, key),
                         "unix ms": timestamp_ms(kind, key)})
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
        row: dict[str, Any] = {"approach": k.name, "coordination": k.coordination,
                               "sortable": "yes" if k.sortable else "no",
                               "size": f"{k.bits}-bit", "weakness": k.weakness}
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


def _fleet() -> LeaseFleet | None:
    return st.session_state.get("ids-fleet")


def _ids_tab() -> None:
    st.subheader("The seed's table")
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
        in_order = {kind: all(m["made #"] == m["sorted #"] for m in made if m["kind"] == kind)
                    for kind in ID_KINDS}
        st.markdown("**Sorting the ids gives the order they were made in:** " + ", ".join(
            f"{kind} {'✅' if ok else '❌'}" for kind, ok in in_order.items()))
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
    rows = st.number_input("Rows per id kind", 1_000, 100_000, 5_000, step=1_000,
                           key="ids-locality-rows")
    if st.button("Measure index locality (SQLite B-trees)", key="ids-locality"):
        with st.spinner("inserting ..."), tempfile.TemporaryDirectory() as tmp:
            st.session_state["ids-locality-result"] = sqlite_locality(list(ID_KINDS), int(rows),
                                                                      tmp)
    result = st.session_state.get("ids-locality-result")
    if result:
        table = pd.DataFrame(ratios(result)).set_index("kind")
        st.dataframe(table)
        for col, name in zip(st.columns(3), ["insert time ×", "pages ×", "newest 100 ×"],
                             strict=True):
            col.markdown(f"**{name}**")
            col.bar_chart(table[[name]], height=260)
        st.caption("× = against the sequential int measured in the same run. "
                   "`benchmarks/bench_ids.py` runs this at 1M rows, and in PostgreSQL.")

    st.subheader("Worker ids leased from etcd")
    _leases()


def _holders_table(fleet: LeaseFleet, live: bool) -> None:
    """The worker keys and their leases; re-drawn every second (alone) while ``live``."""

    @st.fragment(run_every=1.0 if live else None)
    def table() -> None:
        if _fleet() is fleet:  # not stopped meanwhile
            st.dataframe(pd.DataFrame(fleet.holders()), hide_index=True)

    table()


def _leases() -> None:
    if not (etcd_available() or settings.get("etcd_url")):
        st.info(f"etcd is not installed ({settings.get('etcd_bin')} is missing): "
                "`apt-get install etcd-server` to start generators with leases here.")
        return
    fleet = _fleet()
    if fleet is None:
        st.markdown("Start generator processes that each lease a worker id (TTL 3 s), kill "
                    "one, and watch its lease expire while the others keep theirs.")
        if st.button("Start etcd and 3 generators", key="ids-fleet-start"):
            with st.spinner("starting ..."):
                fleet = LeaseFleet(ttl_s=3).start(3)
            st.session_state["ids-fleet"] = fleet
            atexit.register(fleet.stop)
            st.rerun()
        return
    live = st.toggle("Refresh every second", value=True, key="ids-fleet-live")
    _holders_table(fleet, live)
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
        fleet.stop()
        del st.session_state["ids-fleet"]
        st.rerun()
    st.caption("A killed process cannot revoke its lease: etcd drops its worker key when the "
               "TTL runs out. A new generator may then take that worker id, but waits until "
               "its clock passes the dead holder's reservation, so no id repeats.")


(ids_tab,) = st.tabs(["Unique IDs"])
with ids_tab:
    _ids_tab()
