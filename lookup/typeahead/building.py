"""Build a typeahead snapshot from the management API, as ``lookup typeahead build`` does.

``POST /v1/typeahead/snapshots/build`` (admin token) runs the offline pipeline in the
server, in the background: fold what is new (the searches submitted since the last build;
the whole query log on the first build), filter, build each market's trie, validate it
against the current snapshot and publish it. ``GET`` on the same path shows the run's
progress and, per market, the version published or the checks that refused it. The
server's poller deploys a published version within a second, so the page that started
the build sees a new current snapshot and the old one as its rollback target.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from lookup import errors
from lookup.kit.admin import ADMIN_RESPONSES, require_admin
from lookup.kit.jobs import Job, Progress
from lookup.typeahead import querylog
from lookup.typeahead.aggregate import LogError
from lookup.typeahead.clusterfold import ClusterFoldError
from lookup.typeahead.pipeline import run, state_path
from lookup.typeahead.snapshot import SnapshotError

TAGS: list[str | Enum] = ["typeahead"]  # FastAPI's type for route tags


def build_snapshots(data_dir: str | os.PathLike[str], progress: Progress) -> dict[str, Any]:
    """One pipeline run over ``data_dir``: what ``lookup typeahead build`` prints, as JSON.

    The first build folds the generated query log; later ones fold only what is new (the
    scores are saved between builds), as the command does by default."""
    data = Path(data_dir)
    log: Path | None = None
    if not state_path(data).exists():
        if not querylog.is_built(data):
            raise errors.NotBuilt(
                "no query log to build from; run: lookup datasets build typeahead",
                command="lookup datasets build typeahead",
            )
        log = querylog.log_path(data)
    markets = max(1, len(querylog.MARKETS))
    done = 0

    def say(message: str) -> None:
        nonlocal done
        if "→ published" in message or "→ REFUSED" in message:
            done += 1
            progress(message, 0.1 + 0.9 * min(done / markets, 1.0))
        else:
            progress(message, 0.1 if message.startswith("read ") else None)

    try:
        result = run(data, log, progress=say)
    except (LogError, SnapshotError, ValueError) as exc:
        raise errors.Unprocessable(str(exc), code="BUILD_FAILED") from None
    except ClusterFoldError as exc:  # the Dask cluster (setting typeahead_dask_scheduler)
        raise errors.Unavailable(str(exc), code="CLUSTER_FAILED") from None
    return result.to_dict()


def mount_build(mounts: Any, admin_token: Callable[[], str]) -> Job:
    """``POST``/``GET /v1/typeahead/snapshots/build`` on ``mounts.api`` over
    ``mounts.data_dir`` (the POST with the token). A run in progress stops with the server."""
    api: FastAPI = mounts.api
    data_dir = mounts.data_dir
    job = Job("typeahead snapshot build")
    job.stop_with(mounts)

    @api.post(
        "/v1/typeahead/snapshots/build",
        tags=TAGS,
        status_code=202,
        responses=ADMIN_RESPONSES,
        summary="Build and publish a new snapshot per market in the background, as "
        "`lookup typeahead build` does (admin token); GET the same path for its progress",
    )
    def start(request: Request) -> JSONResponse:
        require_admin(request.headers.get("authorization"), admin_token())
        state = job.start(lambda progress: build_snapshots(data_dir, progress),
                          about="building a snapshot per market")  # fmt: skip
        return JSONResponse(state, status_code=202)

    @api.get("/v1/typeahead/snapshots/build", tags=TAGS,
             summary="The latest snapshot build: state, progress, what was published")  # fmt: skip
    def status() -> dict[str, Any]:
        return job.status()

    return job


__all__ = ["build_snapshots", "mount_build"]
