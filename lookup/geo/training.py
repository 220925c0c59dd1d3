"""Train the learned places ranking from the management API, as ``lookup places train`` does.

``POST /v1/places/model/train`` (admin token) starts a run in the server — simulate
sessions over the live index, fit the model, compare it with the hand-set constants on
held-out sessions, publish it to ``DATA_DIR/models/places`` when it wins — and
``GET /v1/places/model/train`` shows its progress and figures. The served model swaps
within a second of publishing (:class:`~lookup.kit.modelstore.slot.ModelSlot`), so
``ranking=learned`` works as soon as the run has succeeded.
"""

from __future__ import annotations

import re
from typing import Any

from fastapi import Body, FastAPI
from fastapi.responses import JSONResponse

from lookup import errors
from lookup.geo.service import PlacesService
from lookup.kit.admin import ADMIN_RESPONSES
from lookup.kit.jobs import Job, Progress

#: What a run may ask for: (default, low, high) — the command line's defaults.
LIMITS = {"sessions": (1200, 10, 20_000), "seeds": (3, 1, 10), "clicks": (10, 1, 50),
          "seed": (0, 0, 2**31 - 1)}  # fmt: skip
#: Share of a run spent simulating and searching sessions (the rest fits per seed).
SEARCH_SHARE = 0.8
_SEARCHED = re.compile(r"searched ([\d,]+)/([\d,]+) sessions")
_SEED = re.compile(r"^seed \d+: ")


def training_options(body: dict[str, Any]) -> dict[str, int]:
    """The run's options from a request body, each within :data:`LIMITS` (else 400)."""
    unknown = sorted(set(body) - set(LIMITS))
    if unknown:
        raise errors.InvalidInput(
            f"unknown option(s) {', '.join(unknown)}; send any of {', '.join(LIMITS)}",
            code="INVALID_PARAMETER",
        )
    out: dict[str, int] = {}
    for name, (default, low, high) in LIMITS.items():
        value = body.get(name, default)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise errors.InvalidInput(
                f"{name} must be a whole number from {low} to {high:,}", code="INVALID_PARAMETER"
            )
        out[name] = value
    return out


def train_places_model(
    service: PlacesService, progress: Progress, *, sessions: int, seeds: int, clicks: int,
    seed: int,
) -> dict[str, Any]:  # fmt: skip
    """One training run over ``service``'s live index; its figures and whether it serves."""
    from lookup.geo.learned import publish, train
    from lookup.kit.modelstore.file import FileModelStore

    service.require()  # NotBuilt (503 in the job's error) without a places data set
    fitted = 0

    def say(message: str) -> None:
        nonlocal fitted
        searched = _SEARCHED.search(message)
        if searched:
            done, total = (int(g.replace(",", "")) for g in searched.groups())
            progress(message, SEARCH_SHARE * done / max(total, 1))
        elif _SEED.match(message):
            fitted += 1
            progress(message, SEARCH_SHARE + (1 - SEARCH_SHARE) * fitted / seeds)
        else:
            progress(message)

    try:
        report = train(service.searcher(), n_sessions=sessions, seed=seed, seeds=seeds,
                       per_session=clicks, progress=say)  # fmt: skip
    except ValueError as exc:  # too few sessions found a relevant place
        raise errors.Unprocessable(str(exc), code="TRAINING_FAILED") from None
    store = FileModelStore(service.data_dir / "models")
    version, live = publish(store, report)
    service.models.get(max_age=0.0)  # serve it now, not within the second
    f = report.figures
    progress(
        f"model {version} " + ("now ranks places" if live else
                               "did not beat the hand-set constants: kept aside")
    )  # fmt: skip
    return {
        "version": version,
        "live": live,
        "figures": f,
        "weights": dict(zip(report.ranker.features, report.ranker.weights, strict=True)),
    }


def mount_training(mounts: Any, service: PlacesService, guarded: list[Any]) -> Job:
    """``POST``/``GET /v1/places/model/train`` on ``mounts.api``; ``guarded``: the admin
    check (``[Depends(...)]``). A run in progress stops with the server."""
    api: FastAPI = mounts.api
    job = Job("places model training")
    job.stop_with(mounts)

    @api.post(
        "/v1/places/model/train",
        tags=["places"],
        status_code=202,
        summary="Train the learned ranking from simulated sessions, in the background "
        "(admin token); GET the same path for its progress",
        dependencies=guarded,
        responses=ADMIN_RESPONSES,
    )
    def start(body: dict[str, Any] | None = Body(None)) -> JSONResponse:
        options = training_options(body or {})
        service.require()
        state = job.start(
            lambda progress: train_places_model(service, progress, **options),
            about=f"training on {options['sessions']:,} simulated sessions, "
            f"{options['seeds']} click logs",
        )
        return JSONResponse(state, status_code=202)

    @api.get("/v1/places/model/train", tags=["places"],
             summary="The latest training run: state, progress, figures")  # fmt: skip
    def status() -> dict[str, Any]:
        return {**job.status(), "model": service.models.status()}

    return job


__all__ = ["LIMITS", "mount_training", "train_places_model", "training_options"]
