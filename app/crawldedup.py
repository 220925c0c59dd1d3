"""The crawler page's *Duplicates* and *Soft 404s* tabs: which pages the crawler found to say
the same thing, and which said "not found" with 200 OK — each pair of texts compared word
by word, as the crawler compares them.
"""

from __future__ import annotations

import html

import pandas as pd
import streamlit as st
from common import metric_row, plural, term_help
from crawlruns import COPY_COLUMN, SANDBOX_ONLY, copy_link, short_url, stored_copy_url
from crawltimeline import short_host

from lookup.crawler.inspector import (
    DiffSegment,
    DuplicateCluster,
    compare_texts,
    duplicate_clusters,
    fetched_pages,
    host_probes,
    page_text,
    soft_404_pages,
)
from lookup.crawler.session import CrawlSession, CrawlSnapshot
from lookup.crawler.soft404 import masked_words

KIND_BADGE = {
    "exact": ":blue-badge[exact]",
    "simhash": ":violet-badge[SimHash]",
    "minhash": ":orange-badge[MinHash]",
    "original": ":green-badge[original]",
}


# ------------------------------------------------------------------------- dedup tab


def diff_html(segments: list[DiffSegment]) -> str:
    style = {
        "delete": "background:#ffebe9;color:#82071e;text-decoration:line-through;",
        "insert": "background:#dafbe1;color:#055d20;",
        "replace": "background:#fff8c5;color:#633c01;",
    }
    parts = []
    for seg in segments:
        if seg.collapsed:
            parts.append(
                "<span style='color:#57606a;background:#eaeef2;border-radius:8px;"
                f"padding:0 6px;font-size:0.85em'>… {len(seg.words):,} identical words …</span>"
            )
        elif seg.op == "equal":
            parts.append(html.escape(seg.text))
        else:
            parts.append(
                f"<span style='{style[seg.op]}border-radius:3px;padding:0 2px'>"
                f"{html.escape(seg.text)}</span>"
            )
    body = " ".join(parts)
    return (
        "<div style='max-height:340px;overflow-y:auto;border:1px solid #d0d7de;border-radius:8px;"
        f"padding:10px 12px;line-height:1.6;font-size:0.92em'>{body}</div>"
    )


def cluster_label(c: DuplicateCluster) -> str:
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(c.kinds.items()))
    copies = plural(len(c.duplicates), "copy", "copies")
    return f"{short_url(c.original.url, 70)} — {copies} ({kinds})"


def compare_pair(session: CrawlSession, left: str, right: str, verdict: str | None) -> None:
    try:
        a = page_text(session.out_dir, left)
        b = page_text(session.out_dir, right)
    except (KeyError, OSError, ValueError) as exc:
        st.warning(f"These pages cannot be read back from the crawl's WARC files: {exc}")
        return
    r = compare_texts(a.text, b.text, context=30)
    metrics = (
        (
            "SimHash distance",
            f"{r.hamming} of 64 bits",
            "Hamming distance between the two 64-bit SimHash fingerprints of the word "
            "3-shingles; the crawler calls ≤ 3 a near-duplicate.",
        ),
        (
            "Shingle Jaccard",
            f"{r.jaccard:.3f}",
            "Shared distinct word 3-shingles ÷ all distinct shingles of the two pages (exact).",
        ),
        (
            "MinHash estimate",
            f"{r.minhash_jaccard:.3f}",
            "datasketch's estimate of that Jaccard from 128 permutations; the crawler's LSH "
            "calls ≥ 0.8 a near-duplicate.",
        ),
        (
            "Words that differ",
            f"{r.words_changed_left} / {r.words_changed_right}",
            "Words only on the left / only on the right, aligned with difflib.",
        ),
        (
            "Same text (SHA-256)",
            "yes" if r.identical else "no",
            "An exact duplicate has the same hash of its whitespace-normalised main text.",
        ),
    )
    metric_row(st.columns(len(metrics)), metrics)
    if verdict:
        st.caption(f"The crawler's verdict: {verdict}")
    lcol, rcol = st.columns(2)
    for col, page, segs in ((lcol, a, r.left), (rcol, b, r.right)):
        with col:
            st.markdown(f"**{html.escape(page.title) or 'untitled'}**")
            note = (
                f" · stored as a revisit of {short_url(page.stored_as)}" if page.stored_as else ""
            )
            st.caption(
                f"`{page.url}` · {plural(page.words, 'word')}{note} · "
                + copy_link(session, page.url, "open the stored copy ↗")
            )
            st.markdown(diff_html(segs), unsafe_allow_html=True)
    st.caption(
        ":red-background[struck out]: only on the left · :green-background[green]: only on "
        "the right · :orange-background[yellow]: replaced. Long identical stretches are folded."
    )


def dedup_tab(session: CrawlSession, snap: CrawlSnapshot) -> None:
    st.markdown(
        "Each page's **main text** (its `<main>` without navigation, header and footer) is "
        "checked three ways, cheapest first: **exact** (SHA-256 of the text), **SimHash** "
        "(64-bit fingerprint, ≤ 3 bits apart, found with 4 × 16-bit block tables) and "
        "**MinHash LSH** (estimated shingle Jaccard ≥ 0.8). A duplicate is stored as a "
        "pointer to its original and never reaches the search index."
    )
    try:
        clusters = duplicate_clusters(session.out_dir)
    except Exception as exc:  # noqa: BLE001 - a damaged crawl file is a message
        st.error(f"The duplicates of this crawl cannot be read: {exc}")
        return
    cols = st.columns(4)
    d = snap.duplicates
    cols[0].metric("Exact duplicates", f"{d.get('exact', 0):,}", border=True)
    cols[1].metric("Near, by SimHash", f"{d.get('simhash', 0):,}", border=True)
    cols[2].metric("Near, by MinHash", f"{d.get('minhash', 0):,}", border=True)
    cols[3].metric("Clusters", f"{len(clusters):,}", border=True)
    if not clusters:
        st.caption("No duplicate found (yet).")
        return
    near = [c for c in clusters if not c.exact_only]
    exact = [c for c in clusters if c.exact_only]
    choice = st.segmented_control(
        "Show",
        ["near-duplicates", "exact duplicates", "any two pages"],
        default="near-duplicates",
        key="dedup-mode",
        help=f"{len(near)} clusters hold a near-duplicate; {len(exact)} hold exact copies only.",
    )
    choice = choice or "near-duplicates"
    if choice.startswith("any"):
        pages = fetched_pages(session.out_dir)
        if len(pages) < 2:
            st.caption("Fewer than two pages are stored.")
            return
        lcol, rcol = st.columns(2)
        left = lcol.selectbox("Left page", pages, index=0, format_func=short_url, key="any-left")
        right = rcol.selectbox("Right page", pages, index=1, format_func=short_url, key="any-right")
        compare_pair(session, left, right, None)
        return
    shown = exact if choice.startswith("exact") else near
    if not shown:
        kind = "exact-only" if choice.startswith("exact") else "near-duplicate"
        st.caption(f"No {kind} cluster (yet).")
        return
    table = pd.DataFrame(
        [
            {
                "Original": short_url(c.original.url),
                "Copies": len(c.duplicates),
                "Caught by": ", ".join(f"{k} {n}" for k, n in sorted(c.kinds.items())),
            }
            for c in shown
        ]
    )
    st.dataframe(
        table, hide_index=True, key="clusters-table", height=min(250, 35 * len(table) + 38)
    )
    by_original = {c.original.url: c for c in shown}
    picked = st.selectbox(
        "Cluster",
        list(by_original),
        format_func=lambda u: cluster_label(by_original[u]),
        key="cluster-exact" if choice.startswith("exact") else "cluster-near",
    )
    if picked is None:
        return
    cluster = by_original[picked]
    st.markdown(
        " ".join(
            f"{KIND_BADGE.get(m.kind, m.kind)} {copy_link(session, m.url, short_url(m.url, 60))}"
            for m in cluster.members
        )
    )
    st.caption(SANDBOX_ONLY, help=term_help("WARC"))
    members = [m.url for m in cluster.members]
    lcol, rcol = st.columns(2)
    left = lcol.selectbox("Left page", members, index=0, format_func=short_url, key="pair-left")
    right = rcol.selectbox("Right page", members, index=1, format_func=short_url, key="pair-right")
    by_url = {m.url: m for m in cluster.members}
    verdict = None
    for one, other in ((by_url[right], left), (by_url[left], right)):
        if one.kind != "original" and other == cluster.original.url:
            score = (
                f", Hamming distance {one.score:g}" if one.kind == "simhash" else
                f", estimated Jaccard {one.score:.3f}" if one.kind == "minhash" else ""
            )  # fmt: skip
            verdict = f"{short_url(one.url)} duplicates the original, caught by {one.kind}{score}."
    compare_pair(session, left, right, verdict)


# ------------------------------------------------------------------------- soft 404s


def soft404_tab(session: CrawlSession, snap: CrawlSnapshot) -> None:
    st.markdown(
        "A **soft 404** answers `200 OK` with a page that means *not found*. Right after "
        "robots.txt the crawler asks each host once for a URL that cannot exist (a random "
        'token): a host that answers it `404` says "not found" properly; a host that '
        'answers `200` shows what its "not found" looks like, and every page whose main '
        "text matches that answer (the URL's own words masked out; same text, shingle "
        "Jaccard ≥ 0.7 or SimHash ≤ 3 bits) is a soft 404. A short page whose title, "
        "heading or first words say *not found* is one too. Soft 404s are never indexed "
        "and their links are not followed."
    )
    try:
        pages = soft_404_pages(session.out_dir)
        probes = host_probes(session.out_dir)
    except Exception as exc:  # noqa: BLE001 - a damaged crawl file is a message
        st.error(f"This crawl's soft 404s cannot be read: {exc}")
        return
    labels = {h.host: h.label for h in snap.hosts}
    cols = st.columns(2)
    cols[0].metric(
        "Caught by the probe", f"{sum(p.method == 'probe' for p in pages):,}", border=True
    )
    cols[1].metric(
        "Caught by the wording", f"{sum(p.method == 'wording' for p in pages):,}", border=True
    )
    st.markdown("**Each host's answer to a URL that cannot exist**")
    if probes:
        st.dataframe(
            pd.DataFrame(
                [
                    {
                        "Host": labels.get(p.host, short_host(p.host)),
                        "Probe": "/" + p.url.split("://", 1)[-1].partition("/")[2],
                        "Answer": "no answer" if p.status is None else f"HTTP {p.status}",
                        "Meaning": (
                            "answers every unknown URL with a page: compare pages with it"
                            if p.soft
                            else "says “not found” properly"
                            if p.status in (404, 410)
                            else "no soft-404 page to compare with"
                        ),
                    }
                    for p in probes.values()
                ]
            ),
            hide_index=True,
            key="probes-table",
        )
    else:
        st.caption("No host probed yet.")
    st.markdown(f"**Pages that said “not found” with 200 OK ({len(pages):,})**")
    if not pages:
        st.caption("None (yet).")
        return
    st.dataframe(
        pd.DataFrame(
            [
                {
                    "URL": p.url,
                    "How it was caught": p.reason,
                    "Stored copy": stored_copy_url(session, p.url),
                }
                for p in pages
            ]
        ),
        hide_index=True,
        key="soft404-table",
        column_config={"Stored copy": COPY_COLUMN},
    )
    by_url = {p.url: p for p in pages}
    picked = st.selectbox("Look at one", list(by_url), format_func=short_url, key="soft404-page")
    if picked is None:
        return
    page = by_url[picked]
    try:
        text = page_text(session.out_dir, page.url)
    except (KeyError, OSError, ValueError) as exc:
        st.warning(f"This page cannot be read back from the crawl's WARC files: {exc}")
        return
    st.markdown(copy_link(session, page.url, "Open this page's stored copy ↗"))
    probe = probes.get(page.host)
    if probe is not None and probe.soft:
        # Compared as the crawler compares them: each without its own URL's words.
        r = compare_texts(
            " ".join(masked_words(probe.text, probe.url)),
            " ".join(masked_words(text.text, page.url)),
            context=30,
        )
        c = st.columns(3)
        c[0].metric("Jaccard with the probe", f"{r.jaccard:.3f}", border=True)
        c[1].metric("Bits apart from the probe (SimHash)", f"{r.hamming} of 64", border=True)
        c[2].metric("Words not in the probe's page", f"{r.words_changed_right}", border=True)
        st.caption(
            f"The crawler's verdict: {page.reason}. Both texts are shown lower-cased and "
            "without the words of their own URL, as the crawler compares them."
        )
        lcol, rcol = st.columns(2)
        with lcol:
            st.markdown(f"**The probe's answer** · {html.escape(probe.title) or 'untitled'}")
            st.markdown(diff_html(r.left), unsafe_allow_html=True)
        with rcol:
            st.markdown(f"**This page** · {html.escape(text.title) or 'untitled'}")
            st.markdown(diff_html(r.right), unsafe_allow_html=True)
    else:
        st.caption(f"The crawler's verdict: {page.reason}.")
        st.markdown(f"**{html.escape(text.title) or 'untitled'}**")
        st.markdown(diff_html([DiffSegment("equal", tuple(text.text.split()))]),
                    unsafe_allow_html=True)  # fmt: skip
