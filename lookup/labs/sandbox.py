"""The crawler page's own sandbox web (``lookup sandbox``) as a lab, when none answers at
``$LOOKUP_SANDBOX_URL``: started once per dashboard, found again by a reloaded page."""

from __future__ import annotations

from pathlib import Path

from lookup.crawler.session import SandboxProcess
from lookup.labs.core import Lab

__all__ = ["SandboxLab"]


class SandboxLab(Lab):
    """A small sandbox web served by a child process (``lab.url`` once started)."""

    kind = "sandbox-web"

    def __init__(
        self, key: str = "", *, log_path: Path | str, size: str = "small",
        crawl_delay: float | None = 0.25,
    ) -> None:  # fmt: skip
        super().__init__(key)
        self.sandbox = SandboxProcess(Path(log_path), size=size, crawl_delay=crawl_delay)

    @property
    def url(self) -> str:
        return self.sandbox.url

    def start(self) -> None:
        self.sandbox.start()

    def close(self) -> None:
        self.sandbox.stop()

    def pids(self) -> list[int]:
        proc = self.sandbox.process
        return [proc.pid] if proc is not None and proc.poll() is None else []

    def alive(self) -> bool:
        return self.sandbox.running and self.sandbox.port is not None

    def addresses(self) -> dict[str, str]:
        return {"url": self.sandbox.url} if self.sandbox.port is not None else {}
