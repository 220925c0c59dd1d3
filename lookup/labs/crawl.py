"""A crawl started from the crawler page (``lookup crawl`` over a sandbox web) as a lab.

:class:`CrawlLab` wraps :class:`~lookup.crawler.session.CrawlSession` (key: the crawl's
directory). A crawl that has ended stays this dashboard's lab — the page still reads its
exit and its sampled progress — until the dashboard exits; its directory is never removed:
what it found stays inspectable (``CrawlSession.open``)."""

from __future__ import annotations

from pathlib import Path

from lookup.crawler.session import CrawlSession, CrawlSettings, SandboxProbe
from lookup.labs.core import Lab

__all__ = ["CrawlLab"]


class CrawlLab(Lab):
    """One crawl into ``out_dir`` (``lab.session`` once started)."""

    kind = "crawl"

    def __init__(
        self, key: str = "", *, out_dir: Path | str, probe: SandboxProbe,
        settings: CrawlSettings | None = None,
    ) -> None:  # fmt: skip
        super().__init__(key or str(out_dir))
        self.out_dir = Path(out_dir)
        self.probe = probe
        self.settings = settings
        self.session: CrawlSession | None = None

    def start(self) -> None:
        self.session = CrawlSession.start(self.out_dir, self.probe, self.settings)

    def close(self) -> None:
        if self.session is not None:
            self.session.kill()

    def pids(self) -> list[int]:
        proc = self.session.process if self.session is not None else None
        return [proc.pid] if proc is not None and proc.poll() is None else []

    def alive(self) -> bool:
        return self.session is not None and self.session.running

    def status(self) -> str:
        """``running``, ``finished`` (it stopped at its limits, or was asked to), ``failed``
        or ``stopped``."""
        if self.stopped or self.alive() or self.session is None:
            return super().status()
        return "failed" if self.session.failed() else "finished"

    def addresses(self) -> dict[str, str]:
        return {"sandbox": self.probe.url}
