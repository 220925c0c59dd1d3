"""Old import path of the throw-away etcd and its client, kept for one release.

Its names moved to :mod:`lookup.kit.engines.etcdserver` and :mod:`lookup.kit.engines.etcd`,
with the rest of the kit's engine plumbing (:mod:`lookup.kit.engines`); this module gives
the very same objects.
"""

from __future__ import annotations

from lookup.kit.engines.etcd import etcd_client
from lookup.kit.engines.etcdserver import EtcdServer, etcd_available

__all__ = ["EtcdServer", "etcd_available", "etcd_client"]
