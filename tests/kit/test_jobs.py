"""``kit/jobs.py``: one long management task at a time, its progress, its end."""

from __future__ import annotations

import threading

import pytest

from lookup import errors
from lookup.kit.jobs import Job, Progress


def test_a_run_reports_progress_and_its_result() -> None:
    job = Job("test build")
    assert job.status()["state"] == "idle"
    go = threading.Event()

    def work(progress: Progress) -> dict[str, int]:
        progress("half way", 0.5)
        go.wait(10)
        return {"made": 3}

    started = job.start(work, about="building")
    assert started["state"] == "running" and started["run"] == 1
    with pytest.raises(errors.Conflict) as refused:  # one at a time
        job.start(work)
    assert refused.value.code == "JOB_RUNNING"
    go.set()
    assert job.wait(10)
    done = job.status()
    assert done["state"] == "succeeded" and done["result"] == {"made": 3}
    assert done["progress"] == 1.0 and done["messages"] == ["building", "half way"]
    assert done["error"] is None and done["seconds"] >= 0


def test_a_failed_run_keeps_the_error_code_and_the_next_run_starts_clean() -> None:
    job = Job("test build")

    def fails(progress: Progress) -> dict[str, int]:
        raise errors.NotBuilt("nothing to build from", command="lookup datasets build x")

    job.start(fails)
    job.wait(10)
    assert job.status()["state"] == "failed"
    assert job.status()["error"] == {"error": "NOT_BUILT", "message": "nothing to build from"}
    job.start(lambda progress: {"ok": 1})
    job.wait(10)
    assert job.status()["state"] == "succeeded" and job.status()["error"] is None
    assert job.status()["run"] == 2


def test_a_bug_is_reported_in_one_line() -> None:
    job = Job("test build")
    job.start(lambda progress: {"x": 1 // 0})
    job.wait(10)
    assert job.status()["error"]["error"] == "INTERNAL"
    assert "ZeroDivisionError" in job.status()["error"]["message"]


def test_stopping_ends_a_run_at_its_next_report_and_refuses_new_ones() -> None:
    job = Job("test training")
    reported = threading.Event()

    def endless(progress: Progress) -> dict[str, int]:
        while True:
            progress("still going")
            reported.set()

    job.start(endless)
    assert reported.wait(10)
    job.stop(timeout=10)
    assert job.status()["state"] == "failed"
    assert job.status()["error"]["error"] == "JOB_STOPPED"
    with pytest.raises(errors.Unavailable):
        job.start(lambda progress: {})
