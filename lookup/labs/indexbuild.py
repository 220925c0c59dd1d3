"""``lookup index CRAWL_DIR`` as a lab: a build the page follows, and finds again on reload.

The build runs as a child process; a thread reads its output into :attr:`IndexBuildLab.lines`
as it comes, so any page run — the one that started it or one drawn after a reload — can
:meth:`~IndexBuildLab.follow` it from the first line, and a dashboard that exits stops it.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from lookup import settings
from lookup.labs.core import Lab

__all__ = ["INDEX_PROGRESS", "IndexBuildLab", "Progress", "progress_of"]

#: A progress line of ``lookup index``: ``  <stage>   42.0%  1,234/2,938``.
INDEX_PROGRESS = re.compile(r"^\s+(?P<stage>\S.*?)\s+(?P<pct>\d+(?:\.\d+)?)%\s+(?P<count>\S+)$")


@dataclass(frozen=True)
class Progress:
    """One progress line: the stage, its share done (0–1) and the count as printed."""

    stage: str
    fraction: float
    count: str


def progress_of(line: str) -> Progress | None:
    """The progress a line of ``lookup index`` reports, or ``None`` for any other line."""
    m = INDEX_PROGRESS.match(line.rstrip())
    if not m:
        return None
    return Progress(m.group("stage"), min(100.0, float(m.group("pct"))) / 100.0, m.group("count"))


class IndexBuildLab(Lab):
    """One ``lookup index OUT_DIR --data-dir DATA_DIR`` run (key: the crawl directory)."""

    kind = "index-build"

    def __init__(self, key: str = "", *, out_dir: Path | str, data_dir: Path | str) -> None:
        super().__init__(key)
        self.argv = [sys.executable, "-m", "lookup.cli", "index", str(out_dir)]
        self.argv += ["--data-dir", str(data_dir)]
        self.lines: list[str] = []
        self.proc: subprocess.Popen[str] | None = None
        self.returncode: int | None = None
        self.failure: str | None = None
        self._changed = threading.Condition()
        self._reader: threading.Thread | None = None

    def start(self) -> None:
        try:
            self.proc = subprocess.Popen(
                self.argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, text=True, bufsize=1, env=settings.child_environ(),
            )  # fmt: skip
        except OSError as exc:  # the page shows it as a failed build
            self.failure = f"indexing failed: {exc}"
            self.returncode = -1
            return
        self._reader = threading.Thread(target=self._read, name="index-build", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()
        code = self.proc.wait()
        with self._changed:
            self.returncode = code
            self._changed.notify_all()

    @property
    def finished(self) -> bool:
        return self.returncode is not None

    def _past(self, line: int) -> bool:
        """More than ``line`` lines are in, or the build has ended (under the condition)."""
        return len(self.lines) > line or self.finished

    def follow(self, since: int = 0) -> Iterator[str]:
        """Every output line from line ``since``, as it is written, until the build ends."""
        while True:
            with self._changed:
                self._changed.wait_for(partial(self._past, since))
                fresh, done = self.lines[since:], self.finished
            since += len(fresh)
            yield from fresh
            if done and since >= len(self.lines):
                return

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if self._reader is not None:
            self._reader.join(timeout=10)

    def pids(self) -> list[int]:
        return [self.proc.pid] if self.proc is not None and self.proc.poll() is None else []

    def alive(self) -> bool:
        return not self.finished

    def status(self) -> str:
        """``running``, ``finished``, ``failed`` or ``stopped``."""
        if self.stopped or not self.finished:
            return super().status()
        return "finished" if self.returncode == 0 else "failed"
