"""Old import path of the ranking models' store, kept for one release: use
:mod:`lookup.kit.modelstore`.

``ModelStore`` here is the directory store, now
:class:`lookup.kit.modelstore.file.FileModelStore` (in :mod:`lookup.kit.modelstore`,
``ModelStore`` names the port, a Protocol); :func:`open_model_store` is the package's
factory; :class:`ModelSlot` and :class:`ActiveModel`, the serving side, are
:mod:`lookup.kit.modelstore.slot`.
"""

from __future__ import annotations

from lookup.kit.modelstore import open_model_store
from lookup.kit.modelstore.file import FileModelStore as ModelStore
from lookup.kit.modelstore.slot import ActiveModel, ModelSlot

__all__ = ["ActiveModel", "ModelSlot", "ModelStore", "open_model_store"]
