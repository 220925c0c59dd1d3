"""Follow a long management job of the API (a snapshot build, a model training) on a page.

The API runs such a job in the background (:mod:`lookup.kit.jobs`): ``POST`` starts it
(``202``), ``GET`` on the same path says how far it is. :func:`follow` polls that until the
run ends, drawing a progress bar and the latest step as it goes, and returns the final
state; a page that is opened while a run is going on follows it the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import streamlit as st
from common import Answer

#: How often the page asks, and how long it follows a run before handing back.
POLL_S = 0.3
FOLLOW_S = 600.0


def follow(
    get: Callable[[], Answer],
    label: str,
    *,
    timeout: float = FOLLOW_S,
    on_state: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any] | None:
    """Poll ``get()`` (the job's ``GET``) while it says ``running``, with a progress bar
    and its latest message under ``label``; the last state (None if it could not be read).
    ``on_state`` sees every state read (a page drawing more of it, e.g. a fold on Dask)."""
    bar = st.progress(0.0, text=label)
    deadline = time.monotonic() + timeout
    state: dict[str, Any] | None = None
    while True:
        answer = get()
        if not answer.ok or not isinstance(answer.body, dict):
            bar.empty()
            st.warning(f"Could not follow the run: {answer.message()}", icon=":material/warning:")
            return None
        state = answer.body
        if on_state is not None:
            on_state(state)
        messages = state.get("messages") or []
        step = f" — {messages[-1]}" if messages else ""
        bar.progress(float(state.get("progress") or 0.0),
                     text=f"{label}{step} ({float(state.get('seconds') or 0):.0f} s)")  # fmt: skip
        if state.get("state") != "running" or time.monotonic() > deadline:
            break
        time.sleep(POLL_S)
    bar.empty()
    return state


def failure(state: dict[str, Any]) -> str:
    """Why a run failed, in one sentence."""
    error = state.get("error") or {}
    return f"{error.get('message', 'it failed')} ({error.get('error', 'FAILED')})"
