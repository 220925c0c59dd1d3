"""A KV storage node's port: bound by the cluster before any node reads the cluster file,
inherited by the node process, never raced for by number.

A port another process takes between the allocator's check and the cluster's bind is
drawn again (the launchers' rule); a killed node's port refuses connections at once (the
cluster keeps no copy of the socket); a restart keeps its port, taken or not.
"""

from __future__ import annotations

import socket

import httpx
import pytest

from lookup.blocks.kv.cluster import KvCluster
from lookup.kit.engines.launch import PortTaken
from tests.kit.test_engine_launch import _first_port_lost_to_another_process


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def test_a_node_whose_port_was_taken_comes_up_on_another_and_serves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with _first_port_lost_to_another_process(monkeypatch) as draw:
        with KvCluster(size=1, n=1) as cluster:
            taken, port = draw.drawn[0], _port(cluster.urls["n1"])
            assert port != taken and port in draw.drawn[1:]
            client = cluster.client()
            try:
                assert client.put("greeting", "hello", w=1).ok
                got = client.get("greeting", r=1)
                assert got.ok and got.siblings == ["hello"] and got.coordinator == "n1"
            finally:
                client.close()


def test_a_killed_node_refuses_at_once_and_a_restart_keeps_its_port() -> None:
    with KvCluster(size=1, n=1) as cluster:
        url = cluster.urls["n1"]
        client = cluster.client()
        try:
            assert client.put("kept", "on disk", w=1).ok
            cluster.kill("n1")
            with pytest.raises(httpx.ConnectError):  # no socket left behind in this process
                httpx.get(f"{url}/ping", timeout=2)
            with socket.socket() as taker:  # over the killed node's TIME_WAIT connections
                taker.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                taker.bind(("127.0.0.1", _port(url)))
                taker.listen()
                with pytest.raises(PortTaken):  # the ring names the URL: never a move
                    cluster.restart("n1")
            cluster.restart("n1")
            assert cluster.urls["n1"] == url
            assert client.get("kept", r=1).siblings == ["on disk"]
        finally:
            client.close()
