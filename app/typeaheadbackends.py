"""The typeahead page's *Backends* tab, and the build's progress on Dask.

The page is a client of the API, so everything here is read from it: ``/healthz`` (its
``systems.typeahead`` report) says where submitted searches go (the embedded CSV file or a
Redis stream every API process appends to), where the trending windows live (each
process's memory or Redis), which store builds publish snapshots to (a directory or
PostgreSQL) and where a build folds the log (this process or a Dask cluster);
``GET /v1/typeahead/snapshots/build`` says how far a build got. A build folding on Dask
reports ``dask: k/n fold tasks done, N worker(s) alive at …`` lines while it runs and
keeps the last of them as ``result.cluster`` (:mod:`lookup.typeahead.clusterfold`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd
import streamlit as st
from common import Answer, metric_row

BUILD_PATH = "/v1/typeahead/snapshots/build"
#: One progress line of a fold on Dask, as ``BuildProgress.line()`` writes it.
DASK_LINE = re.compile(
    r"^dask: (?P<done>\d+)/(?P<total>\d+) fold tasks done, "
    r"(?P<alive>\d+) worker\(s\) alive at (?P<scheduler>.+)$"
)
ENGINES = {"postgresql": "PostgreSQL", "postgres": "PostgreSQL", "redis": "Redis"}


@dataclass(frozen=True)
class DaskProgress:
    """Where a fold on Dask stands: tasks done of all, the workers the scheduler counts."""

    scheduler: str
    tasks_done: int
    tasks_total: int
    workers_alive: int

    @classmethod
    def of(cls, found: Mapping[str, Any]) -> DaskProgress:
        """From a build result's ``cluster`` (the keys of ``BuildProgress.to_dict()``)."""
        return cls(
            str(found.get("scheduler") or "?"),
            int(found.get("tasks_done") or 0),
            int(found.get("tasks_total") or 0),
            int(found.get("workers_alive") or 0),
        )

    @property
    def fraction(self) -> float:
        """Share of the fold tasks done (0 before the tasks are known)."""
        return self.tasks_done / self.tasks_total if self.tasks_total else 0.0

    def sentence(self) -> str:
        """One line a person reads."""
        workers = "worker" if self.workers_alive == 1 else "workers"
        if not self.tasks_total:
            return f"nothing new to fold, so no task was sent to {self.scheduler}"
        return (
            f"{self.tasks_done:,} of {self.tasks_total:,} fold tasks done on the Dask "
            f"cluster at {self.scheduler}, {self.workers_alive} {workers} alive"
        )


def dask_progress(job: Mapping[str, Any]) -> DaskProgress | None:
    """The fold's progress from a build job's state: its ``result.cluster`` once it
    finished, else its latest ``dask:`` progress line; None for a build that did not fold
    on Dask (the embedded default)."""
    result = job.get("result")
    cluster = result.get("cluster") if isinstance(result, Mapping) else None
    if isinstance(cluster, Mapping):
        return DaskProgress.of(cluster)
    for message in reversed(job.get("messages") or []):
        found = DASK_LINE.match(str(message))
        if found:
            return DaskProgress(
                found["scheduler"].strip(),
                int(found["done"]),
                int(found["total"]),
                int(found["alive"]),
            )
    return None


def _engine_of(url: str) -> tuple[str, str]:
    """``postgresql://host:port/db`` → ``("PostgreSQL", "host:port/db")``; anything else
    ``("", url)``."""
    scheme, sep, rest = url.partition("://")
    engine = ENGINES.get(scheme.lower()) if sep else None
    return (engine, rest) if engine else ("", url)


def _redis_where(backend: str) -> str:
    """``redis 127.0.0.1:6379/0 stream S`` → ``127.0.0.1:6379/0 stream S``."""
    return backend.split(" ", 1)[1] if " " in backend else backend


def backend_rows(system: Mapping[str, Any]) -> list[dict[str, str]]:
    """Which backend each part of the typeahead runs on, from ``/healthz``'s typeahead
    report (read defensively: an API that does not name a part runs it embedded)."""
    searches = system.get("searches")
    feed = str((searches or {}).get("backend", "file")) if isinstance(searches, Mapping) else "file"
    trending = system.get("trending")
    windows = str(trending.get("backend", "memory")) if isinstance(trending, Mapping) else "memory"
    rows = []
    if feed.startswith("redis"):
        rows.append({"Part": "Submitted searches", "Backend": "Redis stream",
                     "Where": _redis_where(feed)})  # fmt: skip
    else:
        rows.append({"Part": "Submitted searches", "Backend": "file",
                     "Where": "typeahead/searches.csv in the API's data directory"})  # fmt: skip
    if windows.startswith("redis"):
        rows.append({"Part": "Trending windows", "Backend": "Redis",
                     "Where": _redis_where(windows)})  # fmt: skip
    else:
        rows.append({"Part": "Trending windows", "Backend": "memory",
                     "Where": "each API process counts its own searches"})  # fmt: skip
    store = str(system.get("snapshotStore") or "")
    engine, where = _engine_of(store)
    if engine:
        rows.append({"Part": "Snapshot store", "Backend": engine, "Where": where})
    else:
        path = store.removeprefix("file://") or "typeahead/snapshots in the API's data directory"
        rows.append({"Part": "Snapshot store", "Backend": "directory", "Where": path})
    fold = str(system.get("buildFold") or "")
    if fold == "local":
        rows.append({"Part": "Build: the fold", "Backend": "Dask",
                     "Where": "a two-worker local cluster the build starts"})  # fmt: skip
    elif fold.startswith(("tcp://", "tls://")):
        rows.append({"Part": "Build: the fold", "Backend": "Dask", "Where": fold})
    else:
        rows.append({"Part": "Build: the fold", "Backend": "this process",
                     "Where": "the API process that runs the build"})  # fmt: skip
    return rows


def feed_figures(system: Mapping[str, Any]) -> list[tuple[str, str, str | None]]:
    """The Redis feed's counts of this API process (none for the embedded file)."""
    feed = system.get("searches")
    if not isinstance(feed, Mapping) or "copied" not in feed:
        return []
    return [
        ("Searches appended", f"{int(feed.get('appended') or 0):,}",
         "Searches this API process added to the Redis stream."),
        ("Copied for the build", f"{int(feed.get('copied') or 0):,}",
         "Stream entries this process's copier wrote to searches.csv (the build's input) "
         "and acknowledged to the consumer group."),
        ("Taken over", f"{int(feed.get('claimed') or 0):,}",
         "Entries another process took but never copied (it died): claimed and copied here."),
        ("Lost to trimming", f"{int(feed.get('lostToTrimming') or 0):,}",
         "Entries the stream's length cap dropped before any copier reached them."),
    ]  # fmt: skip


def dask_live(slot: Any) -> Callable[[Mapping[str, Any]], None]:
    """A callback for :func:`jobwatch.follow` that draws, in ``slot`` (an ``st.empty()``),
    the fold's tasks and workers while a build runs on Dask."""

    def show(job: Mapping[str, Any]) -> None:
        found = dask_progress(job)
        if found is None:
            return
        with slot.container():
            dask_metrics(found)

    return show


def dask_metrics(found: DaskProgress) -> None:
    """The fold's tasks done / total and the workers alive, as metrics and a bar."""
    metric_row(
        st.columns(3),
        [
            ("Fold tasks done", f"{found.tasks_done:,} / {found.tasks_total:,}",
             "Dask tasks of the fold that answered: per market one for the hour traffic, "
             "one per query partition and one per user partition."),
            ("Workers alive", f"{found.workers_alive}",
             "Workers the scheduler counts now; a killed worker's tasks run again elsewhere."),
            ("Scheduler", found.scheduler, "Where the build sent the fold."),
        ],
    )  # fmt: skip
    st.progress(found.fraction, text=found.sentence())


def backends_panel(system: Mapping[str, Any], call: Callable[..., Answer]) -> None:
    """Which backend serves each part of the typeahead, the Redis feed's counts, and the
    latest build's fold on Dask (following it while it runs)."""
    st.markdown(
        "Where the typeahead keeps what is shared. On one machine everything is embedded: "
        "searches go to a CSV file, each API process counts trending searches in memory and "
        "snapshots sit in a directory. In a fleet (`lookup up --backend postgres,redis`) "
        "every API process appends searches to one Redis stream, counts trending windows "
        "in Redis (so a spike split across workers trends as on one server) and serves "
        "snapshots published to PostgreSQL; a build can fold the log on a Dask cluster."
    )
    st.dataframe(pd.DataFrame(backend_rows(system)), hide_index=True, width="stretch")
    figures = feed_figures(system)
    if figures:
        metric_row(st.columns(len(figures)), figures)
    trending = system.get("trending")
    if isinstance(trending, Mapping) and "recorded" in trending:
        st.caption(
            f"Trending here: {int(trending.get('recorded') or 0):,} searches recorded by this "
            f"process, {int(trending.get('refreshes') or 0):,} reads of the fleet's windows, "
            f"{int(trending.get('errors') or 0):,} failed calls."
        )
    job = call("GET", BUILD_PATH)
    if not job.ok or not isinstance(job.body, dict):
        st.caption(f"The build's state is unavailable: {job.message()}")
        return
    state = job.body.get("state")
    found = dask_progress(job.body)
    if found is None:
        st.caption(
            "No build on Dask yet: the latest build folded the log in the API's own process."
            if state not in (None, "idle")
            else "No build has run since the API started."
        )
        return
    st.markdown(
        "**The build on Dask** — running now:"
        if state == "running"
        else f"**The latest build on Dask** ({state}):"
    )
    dask_metrics(found)


__all__ = [
    "BUILD_PATH",
    "DaskProgress",
    "backend_rows",
    "backends_panel",
    "dask_live",
    "dask_metrics",
    "dask_progress",
    "feed_figures",
]
