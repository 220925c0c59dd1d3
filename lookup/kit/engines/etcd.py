"""An etcd client for a URL: ``etcd3gw``, which speaks etcd's HTTP/JSON gateway (``/v3/...``)
and so needs no gRPC or protobuf of its own (Streamlit pins protobuf).

The throw-away etcd the drills start is :mod:`lookup.kit.engines.etcdserver`; the one
fenced lease keep-alive is :mod:`lookup.kit.engines.etcdlease`.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import etcd3gw

__all__ = ["etcd_client"]


def etcd_client(url: str, timeout: float = 5.0) -> etcd3gw.Etcd3Client:
    """An ``etcd3gw`` client for ``http://host:port`` (the v3 JSON gateway)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an etcd URL: {url!r}")
    return etcd3gw.Etcd3Client(
        host=parts.hostname,
        port=parts.port or 2379,
        protocol=parts.scheme,
        timeout=timeout,
        api_path="/v3/",
    )
