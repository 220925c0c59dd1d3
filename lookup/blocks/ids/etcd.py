"""The throw-away etcd and its client live in :mod:`lookup.kit.etcd` (the crawler fleet
leases its partitions from etcd too); this name stays for the blocks' callers."""

from lookup.kit.etcd import EtcdServer, etcd_available, etcd_client

__all__ = ["EtcdServer", "etcd_available", "etcd_client"]
