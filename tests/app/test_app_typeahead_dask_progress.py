"""The build's progress on Dask as the Typeahead page reads it (issue 26, "Starting it").

No server here (the inner loop): the words the build writes are ``BuildProgress``'s own
(the oracle), read back by the page's panel (``app/typeaheadbackends.py``) and drawn as the
Snapshots tab draws them on every poll of a running build. The page against real APIs is in
``test_app_typeahead_backends.py``.
"""

from __future__ import annotations

from dashboard_testing import RUN_TIMEOUT
from hypothesis import given
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from lookup.typeahead.clusterfold import BuildProgress


@given(
    done=st.integers(0, 10_000),
    extra=st.integers(0, 10_000),
    alive=st.integers(0, 64),
    port=st.integers(1, 65535),
)
def test_a_progress_line_reads_back_as_the_build_wrote_it(
    done: int, extra: int, alive: int, port: int
) -> None:
    from typeaheadbackends import dask_progress

    wrote = BuildProgress(f"tcp://127.0.0.1:{port}", done, done + extra, alive)
    job = {"state": "running", "messages": ["read 10 events", wrote.line(), "folding"]}
    found = dask_progress(job)
    assert found is not None
    assert (found.scheduler, found.tasks_done, found.tasks_total, found.workers_alive) == (
        wrote.scheduler, wrote.tasks_done, wrote.tasks_total, wrote.workers_alive,
    )  # fmt: skip
    # once the build finished, its result's ``cluster`` is what counts
    final = BuildProgress(wrote.scheduler, done + extra, done + extra, alive)
    over = dask_progress({**job, "state": "succeeded", "result": {"cluster": final.to_dict()}})
    assert over is not None and over.tasks_done == over.tasks_total == done + extra
    assert 0.0 <= found.fraction <= 1.0


def test_a_build_without_dask_has_no_fold_progress() -> None:
    from typeaheadbackends import dask_progress

    assert dask_progress({"state": "idle", "messages": [], "result": None}) is None
    job = {"messages": ["read 4,000 events", "en-IN → published"], "result": {"cluster": None}}
    assert dask_progress(job) is None


def test_the_live_panel_draws_the_tasks_and_workers_of_a_running_fold() -> None:
    """What the Snapshots tab draws on every poll of a running build (``follow``'s
    ``on_state``): the latest ``dask:`` line as metrics."""

    def script() -> None:
        import streamlit as st
        from typeaheadbackends import dask_live

        from lookup.typeahead.clusterfold import BuildProgress

        line = BuildProgress("tcp://10.0.0.5:8786", 3, 9, 1).line()
        dask_live(st.empty())({"state": "running", "messages": ["read", line]})

    at = AppTest.from_function(script, default_timeout=RUN_TIMEOUT).run()
    assert not at.exception
    shown = {m.label: str(m.value) for m in at.metric}
    assert shown["Fold tasks done"] == "3 / 9" and shown["Workers alive"] == "1"
    assert shown["Scheduler"] == "tcp://10.0.0.5:8786"


def test_a_build_with_nothing_new_says_so() -> None:
    from typeaheadbackends import dask_progress

    job = {"state": "succeeded", "result": {"cluster": BuildProgress("local cluster").to_dict()}}
    found = dask_progress(job)
    assert found is not None and found.fraction == 0.0
    assert found.sentence() == "nothing new to fold, so no task was sent to local cluster"
