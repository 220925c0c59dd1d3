"""Old import path of the kept etcd lease, kept for one release.

Its names moved to :mod:`lookup.kit.engines.etcdlease`, with the rest of the kit's engine
plumbing (:mod:`lookup.kit.engines`); this module gives the very same objects.
"""

from __future__ import annotations

from lookup.kit.engines.etcdlease import KeptLease

__all__ = ["KeptLease"]
