"""The throw-away etcd and its client live in :mod:`lookup.kit.engines.etcdserver` and
:mod:`lookup.kit.engines.etcd` (the crawler fleet leases its partitions from etcd too); this
name stays for the blocks' callers."""

from lookup.kit.engines.etcd import etcd_client
from lookup.kit.engines.etcdserver import EtcdServer, etcd_available

__all__ = ["EtcdServer", "etcd_available", "etcd_client"]
