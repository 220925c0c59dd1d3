"""The search page's refinements: facet lists that filter when clicked, the filters in force,
the sort order, and each crowded site's "more from this site".

The API counts the whole match set by site, language, crawl month and media type
(``facets=true``); a click on a value sends it back as a filter parameter (``site=``,
``lang=``, ``month=``, ``type=``), shown above the results with a button that removes it.
Results are collapsed by site (two per site); "more from this site" filters by that
site, where collapsing is switched off (every result is from one site then).
"""

from __future__ import annotations

from typing import Any

import streamlit as st
from common import plural
from searchresults import PAGE

FILTERS = "search.filters"
SORT = "search.sort"
#: Facets in the order the panel shows them, with their headings.
FACETS = {"site": "Site", "lang": "Language", "month": "Crawled in", "type": "Media type"}
#: Names of the languages a crawl of the sandbox web holds (others show their code).
LANGUAGES = {
    "en": "English",
    "ja": "Japanese",
    "hi": "Hindi",
    "de": "German",
    "fr": "French",
    "es": "Spanish",
    "zh": "Chinese",
    "und": "undetermined",
}


def active_filters() -> dict[str, str]:
    """The filters in force (facet → value)."""
    filters = st.session_state.get(FILTERS)
    return dict(filters) if isinstance(filters, dict) else {}


def search_params() -> dict[str, str]:
    """The query parameters the refinements add to ``GET /search``."""
    params = {"facets": "true", **active_filters()}
    if "site" in params:
        params["collapse"] = "0"  # one site: collapsing would hide its own results
    if st.session_state.get(SORT) == "date":
        params["sort"] = "date"
    return params


def value_label(facet: str, value: str) -> str:
    """How a facet value reads on the page (a language by its name)."""
    if facet == "lang":
        name = LANGUAGES.get(value)
        return f"{name} ({value})" if name else value
    return value


def _pick(facet: str, value: str) -> None:
    st.session_state[FILTERS] = {**active_filters(), facet: value}
    st.session_state[PAGE] = 1


def _drop(facet: str) -> None:
    filters = active_filters()
    filters.pop(facet, None)
    st.session_state[FILTERS] = filters
    st.session_state[PAGE] = 1


def clear_filters() -> None:
    """Forget the filters (a new query starts unfiltered)."""
    st.session_state[FILTERS] = {}


def filter_bar() -> None:
    """The filters in force, each a button that removes it, and the sort order, in one row."""
    with st.container(horizontal=True, vertical_alignment="center", key="search-filter-bar"):
        for facet, value in active_filters().items():
            st.button(
                f"{FACETS.get(facet, facet)}: {value_label(facet, value)}",
                key=f"search-unfilter-{facet}", on_click=_drop, args=(facet,),
                icon=":material/close:", help="Remove this filter",
            )  # fmt: skip
        st.segmented_control(
            "Sort", ["score", "date"], key=SORT, default="score",
            format_func=lambda v: "Best match" if v == "score" else "Newest",
            label_visibility="collapsed",
        )  # fmt: skip


def facet_panel(body: dict[str, Any]) -> None:
    """Each facet's commonest values with their counts; a click filters by one."""
    facets = body.get("facets")
    if not isinstance(facets, dict):
        return
    bound = facets.get("relation") == "gte"
    filters = active_filters()
    with st.container(border=True, key="search-facets"):
        st.markdown("**Refine** by site, language, crawl month or media type")
        cols = st.columns(len(FACETS))
        for col, (facet, heading) in zip(cols, FACETS.items(), strict=True):
            data = facets.get(facet) or {}
            buckets = data.get("buckets") or []
            col.markdown(f"**{heading}**")
            if not buckets:
                col.caption("none")
            for i, bucket in enumerate(buckets):
                value, count = str(bucket.get("value", "")), int(bucket.get("count", 0))
                col.button(
                    f"{value_label(facet, value)} · {'≥' if bound else ''}{count:,}",
                    key=f"search-facet-{facet}-{i}", on_click=_pick, args=(facet, value),
                    type="tertiary", disabled=filters.get(facet) == value,
                )  # fmt: skip
            if int(data.get("other") or 0):
                col.caption(f"and {plural(int(data['other']), 'more match', 'more matches')}")
        if bound:
            st.caption(
                "Counts are lower bounds: past the total-hits threshold the shards scored "
                "only their best matches (or a shard missed its deadline)."
            )


def more_from_site(item: dict[str, Any], rank: int) -> None:
    """Under a crowded site's last shown result: a button showing all of that site's."""
    more = item.get("moreFromSite")
    if not isinstance(more, dict) or not more.get("site"):
        return
    site = str(more["site"])
    st.button(
        f"More from {site} ({int(more.get('hidden', 0)):,}+ not shown)",
        key=f"search-more-{rank}", on_click=_pick, args=("site", site), type="tertiary",
        icon=":material/unfold_more:",
    )  # fmt: skip
