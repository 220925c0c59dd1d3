"""The plainest lab: one command run as a child process, its output kept in a log file."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from lookup import settings
from lookup.labs.core import Lab

__all__ = ["ProcessLab"]


class ProcessLab(Lab):
    """``argv`` as a child of the dashboard (stdout and stderr in ``<work>/output.log``)."""

    kind = "process"

    def __init__(self, key: str = "", *, argv: Sequence[str], address: str = "") -> None:
        super().__init__(key)
        if not argv:
            raise ValueError("a process lab needs a command")
        self.argv = [str(a) for a in argv]
        self.address = address
        self.work = Path(tempfile.mkdtemp(prefix="lookup-lab-"))
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def log_path(self) -> Path:
        return self.work / "output.log"

    def start(self) -> None:
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                self.argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=settings.child_environ(),
            )

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        shutil.rmtree(self.work, ignore_errors=True)

    def pids(self) -> list[int]:
        return [self.proc.pid] if self.proc is not None and self.proc.poll() is None else []

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def addresses(self) -> dict[str, str]:
        return {"address": self.address} if self.address else {}

    def paths(self) -> list[str]:
        return [str(self.work)]
