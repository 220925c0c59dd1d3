"""A throw-away etcd on free loopback ports, and an etcd client for a URL.

The drills (Snowflake worker ids, the crawler fleet), the notebook and the dashboard
start their own etcd (Debian's ``etcd-server`` binary, :func:`lookup.settings.get`
``("etcd_bin")``) in a temporary directory — on ``/dev/shm`` when there is one, the
cheapest persistence there is — and stop it when done. The client is ``etcd3gw``, which
speaks etcd's HTTP/JSON gateway (``/v3/...``) and so needs no gRPC or protobuf of its
own (Streamlit pins protobuf).
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from urllib.parse import urlsplit

import etcd3gw

from lookup import settings
from lookup.errors import Unavailable
from lookup.kit.ports import free_port

__all__ = ["EtcdServer", "etcd_available", "etcd_client"]


def etcd_available() -> bool:
    """True when the etcd binary throw-away servers are started from is installed."""
    return Path(settings.get("etcd_bin")).is_file()


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


class EtcdServer:
    """One etcd member on 127.0.0.1 (free client and peer ports) in a temporary dir."""

    def __init__(self, binary: str | None = None, base_dir: str | None = None) -> None:
        self.binary = binary or settings.get("etcd_bin")
        shm = Path("/dev/shm")
        self._base = base_dir or (str(shm) if shm.is_dir() else None)
        self.proc: subprocess.Popen[bytes] | None = None
        self.data_dir: Path | None = None
        self.url = ""

    def start(self, timeout_s: float = 30.0) -> EtcdServer:
        """Start etcd and wait until it answers; a lost port race is retried."""
        if not Path(self.binary).is_file():
            raise Unavailable(f"{self.binary} is missing (apt-get install etcd-server)")
        self.data_dir = Path(tempfile.mkdtemp(prefix="lookup-etcd-", dir=self._base))
        last = ""
        for _ in range(3):
            client_port, peer_port = free_port(), free_port()
            self.url = f"http://127.0.0.1:{client_port}"
            peer = f"http://127.0.0.1:{peer_port}"
            log = open(self.data_dir / "etcd.log", "ab")  # noqa: SIM115 - the child owns it
            self.proc = subprocess.Popen(
                [
                    self.binary,
                    "--name",
                    "drill",
                    "--data-dir",
                    str(self.data_dir / "member"),
                    "--listen-client-urls",
                    self.url,
                    "--advertise-client-urls",
                    self.url,
                    "--listen-peer-urls",
                    peer,
                    "--initial-advertise-peer-urls",
                    peer,
                    "--initial-cluster",
                    f"drill={peer}",
                    "--initial-cluster-state",
                    "new",
                    "--logger",
                    "zap",
                    "--log-level",
                    "error",
                    "--snapshot-count",
                    "1000000",
                    "--heartbeat-interval",
                    "100",
                    "--election-timeout",
                    "1000",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
            log.close()
            if self._wait_ready(timeout_s):
                return self
            last = (self.data_dir / "etcd.log").read_text(errors="replace")[-2000:]
            self._kill()
            shutil.rmtree(self.data_dir / "member", ignore_errors=True)
        self.stop()
        raise Unavailable(f"etcd did not start: {last}")

    def _wait_ready(self, timeout_s: float) -> bool:
        assert self.proc is not None
        client = etcd_client(self.url, timeout=2.0)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                client.status()
                client.lease(5).revoke()  # leases work only once a leader is elected
                return True
            except Exception:  # noqa: BLE001 - not up yet, whatever the client raises
                time.sleep(0.1)
        return False

    def pause(self) -> None:
        """Freeze the server (SIGSTOP): requests hang, leases can be neither renewed nor read."""
        if self.proc is not None:
            self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """Thaw a paused server (SIGCONT)."""
        if self.proc is not None:
            self.proc.send_signal(signal.SIGCONT)

    def _kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.proc = None

    def stop(self) -> None:
        """Stop the server and delete its data directory."""
        self._kill()
        if self.data_dir is not None:
            shutil.rmtree(self.data_dir, ignore_errors=True)
            self.data_dir = None

    def __enter__(self) -> EtcdServer:
        return self.start() if self.proc is None else self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
