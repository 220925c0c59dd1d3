"""Ranking models as versioned snapshots: one current model per name, atomic swaps.

The learned rankers of web search and of places are small JSON documents (a
:class:`~lookup.kit.ltr.LinearRanker`). A trainer **publishes** each as a new version
of its name (``search``, ``places``) — made current only when its held-out gain says it
beats the hand-set weights, else kept aside as **rejected** with the figures — and an
operator **activates** a stored version or **rolls back** the last swap. The serving
side polls a cheap token and re-reads the model when it changes
(:class:`~lookup.kit.modelstore.slot.ModelSlot`).

This package is the seam. Its ``__init__`` is the port and imports no backend:

* :class:`ModelStore`, a :class:`~lookup.kit.snapshots.SnapshotStore` whose snapshots
  are parsed JSON documents, plus what trainers and servers need beyond it
  (:meth:`~ModelStore.current_token`, :meth:`~ModelStore.next_version`,
  :meth:`~ModelStore.publish_model`);
* :data:`BACKENDS`, the registry ``scheme → "module:Class"``, and
  :func:`open_model_store`, which imports the backend a URL names when it is called.

The backend: :mod:`.file` (``file:///path`` or a plain directory path: one JSON file
per version, ``DATA_DIR/models`` by default). :mod:`.slot` holds the serving side
(:class:`~.slot.ModelSlot`, :class:`~.slot.ActiveModel`), which reads any
:class:`ModelStore`.

Adding a backend is one file with a class that has ``from_url`` plus one line in
:data:`BACKENDS`; the model half of ``tests/contracts/test_snapshot_store_contract.py``
then runs against it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, cast, runtime_checkable
from urllib.parse import urlsplit

from lookup.kit.engines.storeurl import StoreUrl, spellings
from lookup.kit.registry import Backend as SeamBackend
from lookup.kit.registry import load_backend
from lookup.kit.snapshots import SnapshotStore

if TYPE_CHECKING:
    from lookup.kit.ltr import LinearRanker

__all__ = ["BACKENDS", "Backend", "ModelStore", "backend", "open_model_store"]

#: Each URL scheme and the class that serves it, imported when a URL names the scheme; a
#: plain directory path counts as ``file``.
BACKENDS: dict[str, str] = {
    "file": "lookup.kit.modelstore.file:FileModelStore",
}


@runtime_checkable
class ModelStore(SnapshotStore[dict[str, Any]], Protocol):
    """Model versions per name, one current: a snapshot store of parsed JSON documents
    (``open`` raises ``ValueError`` for one that does not parse), and what training and
    serving ask of it beyond that."""

    def current_token(self, name: str, /) -> tuple[str, int] | None:
        """``(current version, stamp)``, which changes whenever the served model changes
        (cheap to poll); None before the first publish."""
        ...

    def next_version(self, name: str, /) -> str:
        """A fresh version after every stored or rejected one (``v000003``)."""
        ...

    def publish_model(
        self,
        name: str,
        ranker: LinearRanker,
        figures: Mapping[str, Any],
        require_gain: bool = True,
    ) -> tuple[str, bool]:
        """Store a trained model as the next version: current when its held-out NDCG gain
        interval (``figures["gainNdcg"]``: mean, low, high) lies above zero (or
        ``require_gain`` is False), else rejected with the figures as the reason.
        Returns (version, made current)."""
        ...


#: What :data:`BACKENDS` names: a class whose ``from_url(url)`` opens a :class:`ModelStore`.
Backend: TypeAlias = SeamBackend[ModelStore]


def backend(scheme: str) -> Backend:
    """The class registered for ``scheme`` in :data:`BACKENDS`, imported now (ValueError
    naming the registered schemes for another)."""
    return cast(Backend, load_backend(BACKENDS, scheme))


def open_model_store(url: str | os.PathLike[str]) -> ModelStore:
    """The model store a URL names: ``file:///path`` or a plain directory path.

    An unknown scheme raises ValueError naming the registered ones.
    """
    text = os.fspath(url).strip()
    is_path = "://" not in text and ":" not in text.split("/")[0]
    scheme = "file" if is_path else urlsplit(text).scheme.lower()
    if scheme not in BACKENDS:
        expected = " or ".join([spellings(tuple(BACKENDS)), "a plain directory path"])
        raise ValueError(f"unsupported model store URL {text!r}; expected {expected}")
    return cast(ModelStore, backend(scheme).from_url(StoreUrl(scheme, text)))
