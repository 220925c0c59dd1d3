"""Old import path of the secret-file helper, kept for one release: use
:mod:`lookup.kit.secrets.file` (:func:`~lookup.kit.secrets.file.read_or_create_secret`,
and :func:`~lookup.kit.secrets.file.create_once` for bytes).
"""

from __future__ import annotations

from lookup.kit.secrets.file import read_or_create_secret

__all__ = ["read_or_create_secret"]
