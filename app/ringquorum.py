"""Building blocks → Hash ring & quorum: the consistent hashing ring and the Dynamo-style store.

The ring part is in-process: add or remove a node and see how many of 20,000 keys change
node (against ``hash mod N``) and how evenly they spread for the chosen vnodes. The store
part starts its own storage-node processes on loopback through the dashboard's lab
supervisor (:mod:`lookup.labs`: stopped by the Stop button, and at exit), lets you
kill -9, SIGSTOP, restart or partition nodes, and runs a recorded workload at the
chosen N/R/W; the history checker counts stale reads, siblings, and the
nodes' counters show hints and repairs as they happen.
"""

from __future__ import annotations

import random
from typing import Any

import pandas as pd
import streamlit as st
from common import labs, left_running, term_help

from lookup.blocks.kv.checker import History, summary
from lookup.blocks.kv.experiments import mod_node, run_workload, shopping_cart
from lookup.kit.ring import HashRing
from lookup.labs import KvClusterLab

__all__ = ["render"]

_SAMPLE = [f"key:{i}" for i in range(20_000)]
_COUNTERS = (
    "hints stored",
    "hints handed to a fallback",
    "hints delivered",
    "read repairs",
    "anti-entropy keys repaired",
    "merkle hashes compared",
    "dropped by partition",
    "writes refused (no quorum)",
    "reads refused (no quorum)",
)


def _ring_part() -> None:
    st.subheader("The ring")
    state = st.session_state
    state.setdefault("kv-ring-nodes", [f"node-{i}" for i in range(10)])
    state.setdefault("kv-ring-last", None)
    vnodes = st.select_slider(
        "Virtual nodes per node", [1, 2, 5, 10, 20, 50, 100, 160, 500], value=160, key="kv-vnodes"
    )
    nodes: list[str] = state["kv-ring-nodes"]
    cols = st.columns(3)
    change = None
    if cols[0].button("Add a node", key="kv-ring-add"):
        change = (
            "add",
            f"node-{max(int(n.split('-')[1]) for n in nodes) + 1}" if nodes else "node-0",
        )
    if cols[1].button("Remove the last node", key="kv-ring-remove", disabled=len(nodes) <= 1):
        change = ("remove", nodes[-1])
    if change is not None:
        before_ring = HashRing(nodes, vnodes=vnodes)
        before = [before_ring.node_for(k) for k in _SAMPLE]
        mod_before = [mod_node(k, nodes) for k in _SAMPLE]
        nodes = nodes + [change[1]] if change[0] == "add" else nodes[:-1]
        state["kv-ring-nodes"] = nodes
        after_ring = HashRing(nodes, vnodes=vnodes)
        moved = sum(a != after_ring.node_for(k) for a, k in zip(before, _SAMPLE, strict=True))
        mod_moved = sum(a != mod_node(k, nodes) for a, k in zip(mod_before, _SAMPLE, strict=True))
        state["kv-ring-last"] = {
            "change": f"{change[0]} {change[1]}",
            "ring": moved,
            "mod": mod_moved,
            "nodes": len(nodes),
        }
    ring = HashRing(nodes, vnodes=vnodes)
    counts = (
        pd.Series([ring.node_for(k) for k in _SAMPLE]).value_counts().reindex(nodes, fill_value=0)
    )
    last = state["kv-ring-last"]
    metrics = st.columns(3)
    metrics[0].metric("Nodes", len(nodes))
    metrics[1].metric("Load max/mean", f"{counts.max() / counts.mean():.2f}")
    if last:
        metrics[2].metric(
            f"Keys moved by '{last['change']}'",
            f"{last['ring'] / len(_SAMPLE):.1%}",
            f"hash mod N would move {last['mod'] / len(_SAMPLE):.1%}",
            delta_color="off",
        )
    # a table with bars, not a chart: the page's other tabs count their own charts
    load = pd.DataFrame(
        {
            "node": counts.index,
            "keys": counts.values,
            "÷ mean": (counts.values / counts.mean()).round(2),
        }
    )
    st.dataframe(
        load,
        hide_index=True,
        key="kv-ring-load",
        height=220,
        column_config={
            "keys": st.column_config.ProgressColumn(
                "keys", format="%d", min_value=0, max_value=int(counts.max())
            )
        },
    )
    st.caption(
        f"{len(_SAMPLE):,} keys on {len(nodes)} nodes with {vnodes} vnodes each. "
        "Ideal share moved by one join: 1/(N+1)."
    )


def _lab() -> KvClusterLab | None:
    """The tab's storage nodes while its lab is there — also when every node was killed
    from the page: they can be restarted."""
    lab = labs().get("kv-cluster")
    return lab if isinstance(lab, KvClusterLab) and lab.cluster is not None else None


def _node_table(lab: KvClusterLab) -> pd.DataFrame:
    assert lab.cluster is not None
    rows = []
    for name, s in lab.cluster.stats().items():
        row: dict[str, Any] = {
            "node": name,
            "process": s.get("process"),
            "keys": s.get("keys"),
            "sees down": ", ".join(s.get("down (as seen here)", [])),
            "partitioned from": ", ".join(s.get("partitioned from", [])),
            "hints pending": sum(s.get("hints pending", {}).values()),
        }
        row.update({c: s.get(c, 0) for c in _COUNTERS})
        rows.append(row)
    return pd.DataFrame(rows)


def _store_part() -> None:
    st.subheader("The quorum store")
    if left_running("kv-cluster", "", "kv-left"):
        return
    lab = _lab()
    cluster = lab.cluster if lab is not None else None
    if lab is None or cluster is None:
        st.info(
            "Starts 4 storage-node processes on loopback (N=3 replicas per key), each "
            "with its own SQLite file; they are stopped by the Stop button and at exit."
        )
        if st.button("Start 4 nodes", key="kv-start", type="primary"):
            with st.spinner("Starting node processes..."):
                labs().start("kv-cluster", size=4, n=3)
            st.session_state["kv-seqs"], st.session_state["kv-contexts"] = {}, {}
            st.rerun()
        return
    # a page reloaded while the nodes run starts its own workload sequence
    st.session_state.setdefault("kv-seqs", {})
    st.session_state.setdefault("kv-contexts", {})
    cols = st.columns(4)
    victim = cols[0].selectbox("Node", cluster.names, key="kv-victim")
    other = cols[1].selectbox(
        "Partition from", [n for n in cluster.names if n != victim], key="kv-other"
    )
    running = cluster.running(victim)
    actions = st.columns(6)
    act = None
    if actions[0].button("Kill -9", key="kv-kill", disabled=not running):
        act = lambda: cluster.kill(victim)  # noqa: E731
    if actions[1].button("Restart", key="kv-restart", disabled=running):
        act = lambda: cluster.restart(victim)  # noqa: E731
    if actions[2].button(
        "SIGSTOP",
        key="kv-freeze",
        help=term_help("SIGSTOP"),
        disabled=not running or victim in cluster.frozen,
    ):
        act = lambda: cluster.freeze(victim)  # noqa: E731
    if actions[3].button("SIGCONT", key="kv-thaw", disabled=victim not in cluster.frozen):
        act = lambda: cluster.thaw(victim)  # noqa: E731
    if actions[4].button("Partition", key="kv-partition", disabled=not running):
        act = lambda: cluster.partition(victim, other)  # noqa: E731
    if actions[5].button("Heal", key="kv-heal"):
        act = cluster.heal
    if act is not None:
        act()
        st.rerun()  # redraw the buttons and the table with the new state

    q = st.columns(4)
    w = q[0].selectbox("W", [1, 2, 3], index=1, key="kv-w")
    r = q[1].selectbox("R", [1, 2, 3], index=1, key="kv-r")
    ops = q[2].number_input("Operations", 10, 2000, 200, step=10, key="kv-ops")
    nkeys = q[3].number_input("Keys", 1, 500, 20, key="kv-keys")
    st.caption(
        f"N=3, R={r}, W={w}: R + W {'>' if r + w > 3 else '<='} N — "
        + (
            "every read overlaps the last acknowledged write."
            if r + w > 3
            else "reads may be stale."
        ),
        help=term_help("R + W > N"),
    )
    go = st.columns(3)
    if go[0].button("Run workload", key="kv-run", type="primary"):
        coordinators = [n for n in cluster.names if cluster.running(n) and n not in cluster.frozen]
        if not coordinators:
            st.warning("Every node is killed or stopped: restart or SIGCONT one first.")
        else:
            history = History()
            with st.spinner(f"{ops} operations..."):
                run_workload(
                    cluster.client(),
                    history,
                    [f"demo:{i}" for i in range(nkeys)],
                    int(ops),
                    r=int(r),
                    w=int(w),
                    coordinators=coordinators,
                    rng=random.Random(),
                    seqs=st.session_state["kv-seqs"],
                    contexts=st.session_state["kv-contexts"],
                )
            st.session_state["kv-last"] = {"R": r, "W": w, **summary(history.ops)}
    if go[1].button("Shopping cart (siblings)", key="kv-cart"):
        st.session_state["kv-cart-result"] = shopping_cart(cluster=cluster)
    go[2].button("Refresh", key="kv-refresh")
    if "kv-last" in st.session_state:
        st.markdown("**Last workload, as the history checker judged it**")
        st.dataframe(pd.DataFrame([st.session_state["kv-last"]]), hide_index=True)
    if "kv-cart-result" in st.session_state:
        cart = st.session_state["kv-cart-result"]
        st.markdown(
            f"Two clients added to one cart from the same read: siblings "
            f"`{cart['siblings']}`; merged by the client into `{cart['merged']}`."
        )
    st.markdown("**Nodes** (their own counters)")
    st.dataframe(_node_table(lab), hide_index=True)
    if cluster.events:
        st.caption("Done: " + "; ".join(what for _, what in cluster.events[-8:]))
    if st.button("Stop the nodes", key="kv-stop"):
        labs().stop("kv-cluster")
        for key in ("kv-last", "kv-cart-result"):
            st.session_state.pop(key, None)
        st.rerun()


def render() -> None:
    """The "Hash ring & quorum" tab."""
    st.markdown(
        "Consistent hashing moves about 1/N of the keys when a node joins or leaves; "
        "virtual nodes even out the load. On top of it, a Dynamo-style store: per-operation "
        "N/R/W, vector clocks with siblings, hinted handoff, read repair and Merkle-tree "
        "anti-entropy — broken here for real."
    )
    _ring_part()
    _store_part()
