"""The dashboard's one navigation: every page, in menu order.

Adding a system's page is one line in :data:`PAGES` (its script goes in ``app/views/``;
see ``Home.py`` for why not ``app/pages/``). A page appears only when its system is
delivered — there are no placeholder pages.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import streamlit as st

APP_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class PageSpec:
    """One entry of the menu: a script under ``app/``, its title, icon and URL path."""

    script: str
    title: str
    icon: str
    url_path: str
    default: bool = False


PAGES: list[PageSpec] = [
    PageSpec("views/home.py", "Home", ":material/home:", "home", default=True),
    PageSpec("views/capacity.py", "Capacity planner", ":material/calculate:", "capacity"),
    PageSpec("views/shortener.py", "URL shortener", ":material/link:", "shortener"),
    PageSpec("views/typeahead.py", "Typeahead", ":material/keyboard:", "typeahead"),
    PageSpec("views/places.py", "Places near me", ":material/location_on:", "places"),
    PageSpec("views/crawler.py", "Web crawler", ":material/travel_explore:", "crawler"),
    PageSpec("views/search.py", "Web search", ":material/search:", "search"),
    PageSpec("views/blocks.py", "Building blocks", ":material/widgets:", "blocks"),
    PageSpec("views/study.py", "Study", ":material/school:", "study"),
]


def build_pages() -> list[st.Page]:
    """The :class:`streamlit.Page` objects for :data:`PAGES`."""
    return [
        st.Page(
            APP_DIR / spec.script,
            title=spec.title,
            icon=spec.icon,
            url_path=None if spec.default else spec.url_path,
            default=spec.default,
        )
        for spec in PAGES
    ]
