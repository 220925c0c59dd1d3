"""A throw-away etcd on free loopback ports, for drills, tests, the notebook and the dashboard.

The drills (Snowflake worker ids, the crawler fleet), the notebook and the dashboard
start their own etcd (Debian's ``etcd-server`` binary, :func:`lookup.settings.get`
``("etcd_bin")``) in a temporary directory — on ``/dev/shm`` when there is one, the
cheapest persistence there is — and stop it when done. Readiness is the client of
:mod:`lookup.kit.engines.etcd` getting a status and a lease (leases work only once a
leader is elected). A lost race for its ports is started again on fresh ones
(:mod:`lookup.kit.engines.launch`).
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

from lookup import settings
from lookup.errors import Unavailable
from lookup.kit.engines.etcd import etcd_client
from lookup.kit.engines.launch import log_since, log_size, start_failure, start_on_fresh_ports
from lookup.kit.engines.ports import free_port

__all__ = ["EtcdServer", "etcd_available"]


def etcd_available() -> bool:
    """True when the etcd binary throw-away servers are started from is installed."""
    return Path(settings.get("etcd_bin")).is_file()


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
        """Start etcd and wait until it answers; a lost port race starts it on fresh ports."""
        if not Path(self.binary).is_file():
            raise Unavailable(f"{self.binary} is missing (apt-get install etcd-server)")
        self.data_dir = Path(tempfile.mkdtemp(prefix="lookup-etcd-", dir=self._base))
        try:
            return start_on_fresh_ports(lambda _n: self._start_once(timeout_s), "etcd")
        except BaseException:
            self.stop()
            raise

    def _start_once(self, timeout_s: float) -> EtcdServer:
        """One start on two fresh ports; on failure the member's data is gone again."""
        assert self.data_dir is not None
        client_port, peer_port = free_port(), free_port()
        self.url = f"http://127.0.0.1:{client_port}"
        peer = f"http://127.0.0.1:{peer_port}"
        log_path = self.data_dir / "etcd.log"
        offset = log_size(log_path)
        log = open(log_path, "ab")  # noqa: SIM115 - the child owns it
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
        self._kill()
        shutil.rmtree(self.data_dir / "member", ignore_errors=True)
        tail = log_since(log_path, offset, limit=2000)
        raise start_failure(f"etcd did not start: {tail}", tail)

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
