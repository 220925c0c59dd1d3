"""The serving side of the model store: the current model of one name, re-read when the
store swaps it, and the hand-set weights (with the reason) while there is none usable."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lookup.kit.ltr import LinearRanker
from lookup.kit.modelstore import ModelStore

log = logging.getLogger("lookup.models")

__all__ = ["ActiveModel", "ModelSlot"]


@dataclass(frozen=True)
class ActiveModel:
    """The model being served, with its version (shown in explanations)."""

    ranker: LinearRanker
    version: str


class ModelSlot:
    """The current model of one name in a store, re-read when the store swaps it; None
    (with the reason in :attr:`fallback`) means: serve the hand-set weights."""

    def __init__(self, store: ModelStore | None, name: str, features: Sequence[str]) -> None:
        self.store = store
        self.name = name
        self.features = tuple(features)
        self.active: ActiveModel | None = None
        self.fallback: str = "no model store configured" if store is None else "not loaded yet"
        self._token: object = object()  # never equal to a store token (None included)
        self._checked = 0.0
        self._lock = threading.Lock()

    def get(self, max_age: float = 1.0) -> ActiveModel | None:
        """The model to serve, or None for the hand-set weights (checked ≤ once a second)."""
        if self.store is not None and time.monotonic() - self._checked > max_age:
            with self._lock:
                self._refresh()
        return self.active

    def _refresh(self) -> None:
        assert self.store is not None
        self._checked = time.monotonic()
        token = self.store.current_token(self.name)
        if token == self._token:
            return
        self._token = token
        if token is None:
            self.active, self.fallback = None, "no trained model: hand-set weights"
            return
        version = token[0]
        try:
            data = self.store.open(self.name, version)
            ranker = LinearRanker.from_json(data, expected=self.features)
        except (OSError, LookupError, ValueError) as exc:
            self.active = None
            self.fallback = f"model {version} unusable ({exc}): hand-set weights"
            log.warning(
                "%s model %s unusable, serving hand-set weights: %s", self.name, version, exc
            )
            return
        self.active, self.fallback = ActiveModel(ranker, version), ""

    def status(self) -> dict[str, Any]:
        """Which ranking is served and, when hand-set, why."""
        active = self.get()
        if active is None:
            return {"ranking": "hand", "reason": self.fallback}
        return self.describe(active)

    @staticmethod
    def describe(active: ActiveModel) -> dict[str, Any]:
        """How a request that ranked by ``active`` reports it (never a second read of the
        store: the model could swap between ranking and reporting)."""
        return {"ranking": "learned", "version": active.version, "digest": active.ranker.digest()}
