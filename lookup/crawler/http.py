"""HTTP routes of the crawler: the operator's controls and per-host health, under the one API.

- ``GET /crawler/controls`` — the controls in force (folded), the command log and which
  version each crawler process has applied.
- ``POST /crawler/controls`` (admin token) — issue one command: ``block-host``,
  ``block-pattern``, ``set-delay``, ``pause-host``, ``pause-crawl``, ``recrawl`` or an
  inverse. A running crawl applies it within a second (:mod:`lookup.crawler.steering`).
- ``GET /crawler/health`` and ``GET /crawler/hosts/{host}`` — per-host health
  (:mod:`lookup.crawler.health`), with the hosts block detection flags for review
  (``flagged``) listed apart.
- ``/metrics`` gets the crawler processes' own metrics files of the crawl in view
  (``<crawl>/metrics-<worker>.prom``, :mod:`lookup.crawler.metrics`), each sample
  labelled ``worker``; a crawl whose state is in PostgreSQL has no directory here, and
  its workers' files are read where they run.

Which crawl: ``?crawl=NAME`` (a directory under ``<data-dir>/crawls``), else the
setting ``crawl_store`` (a crawl store URL), else the newest crawl under
``<data-dir>/crawls``. No crawl answers 404 ``NO_CRAWL``; a bad command 400 with its code.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from fastapi import Body, Depends, Query
from pydantic import BaseModel, Field
from starlette.requests import Request

from lookup import settings
from lookup.crawler.controls import (
    COMMANDS,
    MAX_DELAY_S,
    ControlCommand,
    ControlError,
    ControlState,
    controls_url,
    open_crawl_controls,
)
from lookup.crawler.fleetview import store_owner
from lookup.crawler.health import host_health
from lookup.crawler.session import list_crawls
from lookup.crawler.state import CrawlStateError, crawl_state_url, open_crawl_reader
from lookup.kit.admin import ADMIN_RESPONSES, admin_token_of, check_admin
from lookup.kit.engines.storeurl import parse_store_url
from lookup.kit.http import ApiError
from lookup.kit.metrics import TextfileCollector

__all__ = ["ControlBody", "mount"]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
Command = Literal[tuple(COMMANDS)]  # type: ignore[valid-type]


class ControlBody(BaseModel):
    """One operator command (``target``: a host, a URL glob or a URL, as the command needs)."""

    command: Command  # type: ignore[valid-type]
    target: str = Field(default="", max_length=4096)
    value: float | None = Field(
        default=None, ge=0, le=MAX_DELAY_S, description="set-delay: seconds; null resets"
    )
    note: str = Field(default="", max_length=500, description="why (kept in the log)")


def _store_url(data_dir: Path, crawl: str | None) -> str:
    """The store URL of the crawl a request acts on (see the module docstring)."""
    root = data_dir / "crawls"
    if crawl:
        if not _NAME.match(crawl):
            raise ApiError(400, "BAD_CRAWL", "crawl is a crawl directory's name")
        if not (root / crawl / "crawl.sqlite").is_file():
            raise ApiError(404, "NO_SUCH_CRAWL", f"no crawl named {crawl!r} in {root}")
        return crawl_state_url(root / crawl)
    configured = settings.get("crawl_store")
    if configured:
        return str(configured)
    found = list_crawls(root)
    if not found:
        raise ApiError(404, "NO_CRAWL", f"no crawl yet in {root}; start one with `lookup crawl`")
    return crawl_state_url(found[0])


def mount(mounts: Any) -> None:
    """Register the crawler's control and health routes."""
    data_dir = Path(mounts.data_dir)
    api = mounts.api
    admin_token = admin_token_of(mounts)

    def admin(request: Request) -> None:
        check_admin(request.headers.get("authorization"), admin_token(), "steering the crawl")

    def controls_of(crawl: str | None) -> tuple[str, Any]:
        store = _store_url(data_dir, crawl)
        try:
            return store, open_crawl_controls(controls_url(store))
        except ValueError as exc:
            raise ApiError(400, "BAD_CRAWL_STORE", str(exc)) from None

    def metrics_files() -> list[Path]:
        try:
            parsed = parse_store_url(_store_url(data_dir, None), ("sqlite", "postgresql"))
        except (ApiError, ValueError):
            return []  # no crawl yet, or an unusable setting: no crawler metrics
        if parsed.path is None:
            return []
        return sorted(parsed.path.parent.glob("metrics-*.prom"))

    mounts.metrics.append(TextfileCollector(metrics_files))

    crawl_q = Query(None, max_length=128, description="a crawl under <data-dir>/crawls")

    @api.get("/crawler/controls", tags=["crawler"], summary="Controls in force, log, acks")
    def get_controls(crawl: str | None = crawl_q) -> dict[str, Any]:
        store, controls = controls_of(crawl)
        try:
            log = controls.since(0)
            acks = controls.acks()
        finally:
            controls.close()
        return {
            "crawl": store,
            "state": ControlState.of(log).to_json(),
            "log": [r.to_json() for r in log[-200:]],
            "acks": [{"worker": a.worker, "version": a.version, "at": a.at} for a in acks],
        }

    @api.post(
        "/crawler/controls",
        tags=["crawler"],
        summary="Block, slow, pause, resume or recrawl (admin token)",
        dependencies=[Depends(admin)],
        responses={**ADMIN_RESPONSES, 400: {"description": "a bad target: code names it"}},
    )
    def post_control(body: ControlBody = Body(...), crawl: str | None = crawl_q) -> dict[str, Any]:
        store, controls = controls_of(crawl)
        try:
            rec = controls.issue(ControlCommand(body.command, body.target, body.value, body.note))
            state = ControlState.of(controls.since(0))
        except ControlError as exc:
            raise ApiError(400, exc.code, exc.message) from None
        finally:
            controls.close()
        return {"crawl": store, "issued": rec.to_json(), "state": state.to_json()}

    def health_rows(crawl: str | None) -> tuple[str, list[dict[str, Any]], ControlState]:
        store, controls = controls_of(crawl)
        try:
            state = ControlState.of(controls.since(0))
        finally:
            controls.close()
        try:
            with open_crawl_reader(store) as reader:
                rows = host_health(reader, state, store_owner(reader))
        except FileNotFoundError:
            raise ApiError(404, "NO_CRAWL", "that crawl has no state yet") from None
        except (CrawlStateError, ValueError) as exc:
            raise ApiError(400, "BAD_CRAWL_STORE", str(exc)) from None
        return store, [r.to_json() for r in rows], state

    @api.get("/crawler/health", tags=["crawler"], summary="Per-host health of the crawl")
    def get_health(crawl: str | None = crawl_q) -> dict[str, Any]:
        store, rows, state = health_rows(crawl)
        flagged = [
            {k: r[k] for k in ("host", "flagged", "flagged_since", "refused_share", "slowdown")}
            for r in rows
            if r["flagged"]
        ]
        return {"crawl": store, "controls": state.to_json(), "hosts": rows, "flagged": flagged}

    @api.get("/crawler/hosts/{host}", tags=["crawler"], summary="One host's health")
    def get_host(host: str, crawl: str | None = crawl_q) -> dict[str, Any]:
        _store, rows, _state = health_rows(crawl)
        for row in rows:
            if row["host"] == host.lower():
                return row
        raise ApiError(404, "NO_SUCH_HOST", f"the crawl has not met {host[:200]!r}")
