"""The Places page's learned ranking: which model ranks, and training one from the page.

``POST /v1/places/model/train`` (admin token) trains in the API, in the background, as
``lookup places train`` does (:mod:`lookup.geo.training`): simulated people near real
places click the hand-set ranking with position bias, a model is fitted to their clicks
and compared with the hand-set constants on held-out sessions, and it serves when it wins.
The panel follows the run with a progress bar; the ranking switch's "Learned" answers as
soon as it has succeeded.
"""

from __future__ import annotations

from typing import Any

import streamlit as st
from common import LOOKUP, admin_headers, call
from jobwatch import failure, follow

TRAIN_PATH = "/v1/places/model/train"
#: The run's options (session, click and random-start counts: ``lookup places train
#: --help``); empty: the API's defaults.
OPTIONS: dict[str, int] = {}
#: Kept between reruns: what the last run from this page said.
TRAINED = "places.trained"


def _figures_line(figures: dict[str, Any]) -> str:
    hand, learned = figures.get("handNdcg") or [0], figures.get("learnedNdcg") or [0]
    return (
        f"NDCG@10 on {figures.get('heldOutSessions', 0):,} held-out sessions: hand-set "
        f"{hand[0]:.3f}, learned {learned[0]:.3f}"
    )


def training_panel(highlight: bool = False) -> None:
    """The model that ranks "Learned", and a button that trains one (``highlight``: the
    person asked for the learned ranking and there is none)."""
    state = call("GET", TRAIN_PATH)
    if not state.ok or not isinstance(state.body, dict):
        st.caption(f"Learned ranking: unknown ({state.message()}).")
        return
    body = state.body
    model = body.get("model") or {}
    if model.get("ranking") == "learned":
        st.caption(f"Learned ranking: model `{model.get('version')}` serves it.")
    else:
        st.caption(
            f"Learned ranking: no model yet — train one here (or with `{LOOKUP} places train`)."
        )
    running = body.get("state") == "running"
    label = "Train the learned ranking" if model.get("ranking") != "learned" else "Train again"
    clicked = st.button(
        label, key="places.train", icon=":material/model_training:", disabled=running,
        type="primary" if highlight else "secondary", width="stretch",
        help="Simulates 1,200 people near real places clicking today's ranking, fits a "
             "model to their clicks and serves it if it ranks held-out sessions better. "
             "About half a minute.",
    )  # fmt: skip
    if clicked:
        started = call("POST", TRAIN_PATH, json=OPTIONS, headers=admin_headers())
        if not started.ok:
            st.session_state[TRAINED] = ("error", f"Training did not start: {started.message()}")
            st.rerun()
        running = True
    if running:
        done = follow(lambda: call("GET", TRAIN_PATH), "Training")
        if done is not None and done.get("state") != "running":
            st.session_state[TRAINED] = _outcome(done)
            st.rerun()  # the whole page: "Learned" now ranks by the new model
    outcome = st.session_state.get(TRAINED)
    if outcome:
        kind, text = outcome
        show = {"success": st.success, "warning": st.warning}.get(kind, st.error)
        show(text, icon=":material/model_training:")


def _outcome(done: dict[str, Any]) -> tuple[str, str]:
    """What a finished run means, as (kind, sentence)."""
    if done.get("state") != "succeeded":
        return "error", f"Training failed: {failure(done)}"
    result = done.get("result") or {}
    figures = result.get("figures") or {}
    if result.get("live"):
        return "success", (f"Model `{result.get('version')}` now ranks “Learned”. "
                           f"{_figures_line(figures)}.")  # fmt: skip
    return "warning", (f"Model `{result.get('version')}` did not beat the hand-set constants "
                       f"and was kept aside. {_figures_line(figures)}.")  # fmt: skip
