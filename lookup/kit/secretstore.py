"""Old import path of the secret store, kept for one release: use :mod:`lookup.kit.secrets`.

The port (:class:`SecretStore`, :func:`open_secret_store`, :func:`random_bytes`,
:func:`check_name`) is :mod:`lookup.kit.secrets`; the file backend is
:class:`lookup.kit.secrets.file.FileSecretStore`.
"""

from __future__ import annotations

from lookup.kit.secrets import SecretStore, check_name, open_secret_store, random_bytes
from lookup.kit.secrets.file import FileSecretStore

__all__ = ["FileSecretStore", "SecretStore", "check_name", "open_secret_store", "random_bytes"]
