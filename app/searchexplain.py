"""Why a search result ranks where it does: each term's BM25 part (idf, tf, length
normalisation), the in-link and freshness boosts, a learned model's feature contributions —
and the score composition of a whole page of results, one stacked bar per result.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from common import plural, term_help

TERM_COLORS = ["#1f6feb", "#54aeff", "#0969da", "#80ccff", "#218bff", "#b6e3ff"]
LINK_COLOR = "#bf8700"
FRESH_COLOR = "#1a7f37"


def explain_panel(ex: dict[str, Any], key: str) -> None:
    """Each term's idf, tf, length normalisation and contribution; each signal's boost."""
    score = float(ex.get("score", 0.0))
    with st.expander(f"Why this rank — score {score:.3f}", icon=":material/calculate:"):
        terms = ex.get("terms") or []
        rows = [
            {
                "term": t["term"],
                "pages with it (df)": int(t["df"]),
                "idf": round(float(t["idf"]), 4),
                "tf here": int(t["tf"]),
                "length norm": round(float(t["lengthNorm"]), 4),
                "BM25 part": round(float(t["score"]), 4),
            }
            for t in terms
        ]
        st.dataframe(
            pd.DataFrame(rows), hide_index=True, key=f"{key}-terms",
            column_config={"BM25 part": st.column_config.NumberColumn(
                "BM25 part", help=term_help("BM25"))},
        )  # fmt: skip
        k1, b = float(ex.get("k1", 1.2)), float(ex.get("b", 0.75))
        dl, avg = float(ex.get("docLength", 0)), float(ex.get("avgDocLength", 1))
        norm = terms[0]["lengthNorm"] if terms else k1 * (1 - b + b * dl / avg)
        st.caption(
            f"BM25 (Lucene): idf = ln(1 + (N − df + 0.5) / (df + 0.5)) over N = "
            f"{plural(int(ex.get('docs', 0)), 'page')}; length norm = k1·(1 − b + b·|d|/avgdl) = "
            f"{k1:g}·(1 − {b:g} + {b:g}·{dl:.0f}/{avg:.1f}) = {float(norm):.3f} — this page is "
            f"{'longer' if dl > avg else 'shorter'} than average, so each match counts "
            f"{'less' if dl > avg else 'more'}; part = idf · tf / (tf + norm). Terms are the "
            "index's Snowball stems, so “values” and “value” both count as “valu”.",
            help=term_help("BM25"),
        )
        sig = ex.get("signals") or {}
        bm25 = float(ex.get("bm25", 0.0))
        link = float(sig.get("linkBoost", 0.0))
        fresh = float(sig.get("freshBoost", 0.0))
        inlinks = int(float(sig.get("inLinks", 0)))
        verb = "links" if inlinks == 1 else "link"
        learned = ex.get("learned")
        hand = float(learned["handScore"]) if learned else score
        st.markdown(
            f"**BM25 {bm25:.3f}** + in-links {link:+.3f} "
            f"({plural(inlinks, 'page')} of the crawl {verb} here) + freshness "
            f"{fresh:+.3f} (fetched {float(sig.get('ageDays', 0.0)):.0f} days ago) "
            f"= **{hand:.3f}**" + (" (hand-set)" if learned else ""),
            help=term_help("BM25"),
        )
        if learned:
            learned_panel(learned, key)


def learned_panel(learned: dict[str, Any], key: str) -> None:
    """The learned model's score: each ranking feature's contribution (weight × value)."""
    parts = learned.get("contributions") or {}
    st.dataframe(
        pd.DataFrame(
            [{"feature": f, "contribution": round(float(c), 4)} for f, c in parts.items()]
        ),
        hide_index=True,
        key=f"{key}-learned",
    )
    st.caption(
        f"Learned model {learned.get('model')}: the contributions add up to "
        f"{float(learned.get('score', 0.0)):.3f}; the hand-set blend ranked this page "
        f"#{int(learned.get('handRank', 0))}. Train another with `lookup search train`."
    )


def composition_chart(results: list[dict[str, Any]], page: int, limit: int) -> None:
    """One stacked bar per result: what each term and each signal added to its score."""
    rows = [r for r in results if r.get("explain")]
    if not rows:
        return
    with st.expander("Score composition of this page of results", icon=":material/bar_chart:"):
        labels = [
            f"#{(page - 1) * limit + i + 1} {str(r.get('title') or r['url'])[:38]}"
            for i, r in enumerate(rows)
        ]
        fig = go.Figure()
        learned = rows[0]["explain"].get("learned")
        if learned:  # the learned model ordered them: stack its feature contributions
            for feature in learned.get("contributions") or {}:
                fig.add_bar(
                    y=labels,
                    x=[float(r["explain"]["learned"]["contributions"][feature]) for r in rows],
                    name=feature,
                    orientation="h",
                )
            fig.update_layout(
                barmode="relative",
                height=90 + 28 * len(rows),
                margin=dict(l=10, r=10, t=10, b=10),
                yaxis=dict(autorange="reversed"),
                xaxis_title=f"learned score (model {learned.get('model')}): weight × feature",
                legend=dict(orientation="h", y=-0.25),
            )
            st.plotly_chart(fig, key="search-composition")
            return
        terms = [t["term"] for t in rows[0]["explain"].get("terms", [])]
        for j, term in enumerate(terms):
            fig.add_bar(
                y=labels,
                x=[float(r["explain"]["terms"][j]["score"]) for r in rows],
                name=f"“{term}”",
                orientation="h",
                marker_color=TERM_COLORS[j % len(TERM_COLORS)],
            )
        for name, field, color in (
            ("in-links", "linkBoost", LINK_COLOR),
            ("freshness", "freshBoost", FRESH_COLOR),
        ):
            fig.add_bar(
                y=labels,
                x=[float(r["explain"].get("signals", {}).get(field, 0.0)) for r in rows],
                name=name,
                orientation="h",
                marker_color=color,
            )
        fig.update_layout(
            barmode="stack",
            height=90 + 28 * len(rows),
            margin=dict(l=10, r=10, t=10, b=10),
            yaxis=dict(autorange="reversed"),
            xaxis_title="score",
            legend=dict(orientation="h", y=-0.25),
        )
        st.plotly_chart(fig, key="search-composition")
