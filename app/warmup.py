"""Import the pages' heavy libraries in the background, once per dashboard server.

A page's first visit on a fresh server paid for importing pandas, Plotly, folium and
numpy (seconds each on a busy two-core machine) before drawing anything. The first script
run of any page starts this thread, so whichever page a visitor opens next finds them
imported; the page being drawn imports what it needs itself, in parallel.
"""

from __future__ import annotations

import importlib
import logging
import threading

import streamlit as st

log = logging.getLogger(__name__)

#: What the pages import, heaviest first. Never a module that declares a Streamlit
#: component (``streamlit_folium``, ``app/searchbox.py``): declared outside a script run,
#: the component is not registered and its frame answers 404.
HEAVY = (
    "pandas",
    "plotly.graph_objects",
    "plotly.express",
    "numpy",
    "folium",
    "lookup.capacity",
)


def _import_all() -> None:
    for name in HEAVY:
        try:
            importlib.import_module(name)
        except Exception:  # a missing optional library: the page that needs it says so
            log.debug("warm-up could not import %s", name, exc_info=True)


@st.cache_resource(show_spinner=False)
def start_warmup() -> threading.Thread:
    """Start the background imports (once per server); returns the thread."""
    thread = threading.Thread(target=_import_all, name="dashboard-warmup", daemon=True)
    thread.start()
    return thread
