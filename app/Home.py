"""The dashboard's entry point: ``streamlit run app/Home.py``.

It sets the page up and hands over to the one navigation in :mod:`navigation`;
the Home page's content lives in ``views/home.py``. The page scripts live in
``views/``, not ``pages/``: a ``pages/`` folder beside this file switches Streamlit
into its old folder-based mode until the first visit to Home, so a visitor who
opened ``/capacity`` first on a fresh server would get a second, stale menu.
"""

from __future__ import annotations

import streamlit as st
from fonts import ensure_static_fonts
from navigation import build_pages
from warmup import start_warmup

st.set_page_config(
    page_title="Lookup Workbench",
    page_icon="🔎",  # an emoji: a material icon favicon would be fetched from the internet
    layout="wide",
)

ensure_static_fonts()  # before any page can show Hindi text
start_warmup()  # the other pages' libraries, imported in the background
st.navigation(build_pages(), position="top").run()
