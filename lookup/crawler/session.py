"""Run a crawl of the sandbox web in a child process and watch it live.

What a dashboard (or a notebook) needs around :func:`lookup.crawler.engine`:

- :func:`probe_sandbox` asks a sandbox web's control address for its manifest;
  :class:`SandboxProcess` starts one (``lookup sandbox``) when none answers.
- :class:`CrawlSession` runs ``lookup crawl`` as a child process writing into a
  crawl directory, bounded by seconds and pages, and samples its progress.
- :func:`read_snapshot` reads any crawl directory — running or finished — through
  the crawl state's reader (:func:`lookup.crawler.state.open_crawl_reader`): pages,
  frontier, the crawl cycle, each host's queue, budget, soft-404 probe and the time its
  next request is allowed — the frontier's own ready time (its heap of host ready
  times), which the crawler writes into its state twice a second.
- :func:`read_request_log` and :func:`politeness_gaps` judge the crawl from the
  server's side: every request the sandbox received, and the gaps between them
  against the rule ``max(Crawl-delay, factor × fetch time, minimum)``.

A child process rather than a thread: the crawl gets its own interpreter (and its
own event loop and GIL), can be stopped with a signal like ``lookup crawl`` on a
terminal, and a reader never blocks it (the reader opens the state read-only).
"""

from __future__ import annotations

import atexit
import contextlib
import ipaddress
import json
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from lookup import settings
from lookup.crawler.sandbox.web import LoggedRequest, iter_log_json
from lookup.crawler.state import (
    ANSWER_FAILURES,
    STATE_FILE,
    CrawlStateError,
    FetchRecord,
    HostRecord,
    crawl_state_url,
    open_crawl_reader,
)
from lookup.kit.background import BackgroundTask
from lookup.kit.probe import get_json

__all__ = [
    "DEFAULT_SANDBOX_URL",
    "SANDBOX_ENV",
    "CrawlSession",
    "CrawlSettings",
    "CrawlSnapshot",
    "GapStats",
    "HostStatus",
    "ProgressSample",
    "SandboxProbe",
    "SandboxProcess",
    "fetch_sandbox_ca",
    "list_crawls",
    "loopback_get",
    "politeness_gaps",
    "probe_sandbox",
    "read_request_log",
    "read_snapshot",
    "sandbox_url",
    "stop_children",
    "too_close",
]

#: The environment variable that says where the sandbox web's control address is.
SANDBOX_ENV = settings.SETTINGS["sandbox_url"].env
DEFAULT_SANDBOX_URL = settings.SETTINGS["sandbox_url"].default
SESSION_FILE = "session.json"
PROGRESS_FILE = "progress.jsonl"
LOG_FILE = "crawl.log"
#: Fetch outcomes that are not an HTTP answer (the request failed or was refused).
FAILED_OUTCOMES = ANSWER_FAILURES


def sandbox_url() -> str:
    """The sandbox web's control address: ``$LOOKUP_SANDBOX_URL`` or the ``make run`` default."""
    return str(settings.get("sandbox_url")).rstrip("/")


def _loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


# ----------------------------------------------------------------------------- sandbox


@dataclass(frozen=True)
class SandboxProbe:
    """What a sandbox web's control address said, or why it could not be asked."""

    url: str
    up: bool
    manifest: dict[str, Any] = field(default_factory=dict)
    problem: str | None = None

    @property
    def seeds(self) -> list[str]:
        return list(self.manifest.get("seeds", []))

    @property
    def hosts(self) -> list[dict[str, str]]:
        return list(self.manifest.get("hosts", []))

    @property
    def hosts_url(self) -> str:
        return f"{self.url}/_sandbox/hosts"


def probe_sandbox(url: str | None = None, timeout: float = 2.0) -> SandboxProbe:
    """Ask the sandbox at ``url`` for its manifest; never raises (a dead sandbox is normal)."""
    url = (url or sandbox_url()).rstrip("/")
    if not url.startswith(("http://", "https://")):
        return SandboxProbe(url, False, problem="the address must start with http://")
    if not _loopback(url):
        return SandboxProbe(url, False, problem="the sandbox web is served on loopback only")
    answer = get_json(f"{url}/_sandbox/manifest", timeout=timeout)
    if answer.problem:
        return SandboxProbe(url, False, problem=answer.problem)
    if answer.status != 200:
        return SandboxProbe(url, False, problem=f"/_sandbox/manifest answered {answer.status}")
    if not answer.json:
        return SandboxProbe(url, False, problem="it is not a sandbox web (no JSON manifest)")
    manifest = answer.body
    if not isinstance(manifest, dict) or not manifest.get("seeds") or not manifest.get("hosts"):
        return SandboxProbe(url, False, problem="it is not a sandbox web (no seeds in manifest)")
    return SandboxProbe(url, True, manifest)


def loopback_get(url: str, what: str = "the", timeout: float = 10.0) -> httpx.Response:
    """GET ``url``, which must be on loopback; raises ``ValueError`` or ``httpx.HTTPError``."""
    if not _loopback(url):
        raise ValueError(f"{what} URL must be on loopback, not {urlsplit(url).hostname!r}")
    resp = httpx.get(url, timeout=timeout, trust_env=False)
    resp.raise_for_status()
    return resp


def fetch_sandbox_ca(control_url: str, out_dir: Path | str) -> Path | None:
    """Save the sandbox web's CA certificate as ``out_dir/sandbox-ca.pem``.

    Returns its path, or None when that sandbox serves nothing over TLS. Raises
    ``ValueError`` (not loopback), ``httpx.HTTPError`` or ``OSError``.
    """
    try:
        resp = loopback_get(f"{control_url.rstrip('/')}/_sandbox/ca.pem", "sandbox")
    except httpx.HTTPStatusError as exc:
        if exc.response.status_code == 404:
            return None
        raise
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "sandbox-ca.pem"
    path.write_bytes(resp.content)
    return path


def read_request_log(url: str, since: int = 0, timeout: float = 5.0) -> list[LoggedRequest]:
    """Every request the sandbox at ``url`` logged from sequence number ``since`` on.

    Raises ``httpx.HTTPError`` when the sandbox cannot be asked.
    """
    resp = httpx.get(
        f"{url.rstrip('/')}/_sandbox/log",
        params={"since": max(0, int(since))},
        timeout=timeout,
        trust_env=False,
    )
    resp.raise_for_status()
    return list(iter_log_json(resp.text))


_CHILDREN: list[subprocess.Popen[bytes]] = []
_CHILDREN_LOCK = threading.Lock()


def _adopt(proc: subprocess.Popen[bytes]) -> None:
    with _CHILDREN_LOCK:
        _CHILDREN.append(proc)


def _terminate(proc: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=grace)
    with _CHILDREN_LOCK:
        if proc in _CHILDREN:
            _CHILDREN.remove(proc)


@atexit.register
def stop_children() -> None:
    """Stop every sandbox and crawl process this interpreter started (runs at exit)."""
    with _CHILDREN_LOCK:
        procs = list(_CHILDREN)
    for proc in procs:
        _terminate(proc)


class SandboxProcess:
    """A sandbox web served by a child process (``lookup sandbox``), stopped at exit."""

    def __init__(
        self,
        log_path: Path,
        *,
        port: int = 0,
        size: str = "small",
        crawl_delay: float | None = 0.25,
    ) -> None:
        if size not in ("small", "default", "large"):
            raise ValueError(f"size must be small, default or large, not {size!r}")
        self.log_path = Path(log_path)
        self.argv = [sys.executable, "-m", "lookup.cli", "sandbox", "--port", str(port)]
        self.argv += ["--size", size]
        if crawl_delay is not None:
            self.argv += ["--crawl-delay", f"{crawl_delay:g}"]
        self.process: subprocess.Popen[bytes] | None = None
        self.port: int | None = None

    @property
    def url(self) -> str:
        if self.port is None:
            raise RuntimeError("the sandbox has not started")
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> SandboxProcess:
        """Start it and wait until its control address answers; raises if it cannot."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                self.argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        _adopt(self.process)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"the sandbox exited with {self.process.returncode}: {self.log_tail()}"
                )
            if self.port is None:
                m = re.search(r"sandbox web on port (\d+)", self._log_text())
                if m:
                    self.port = int(m.group(1))
            if self.port is not None and probe_sandbox(self.url, timeout=1.0).up:
                return self
            time.sleep(0.2)
        self.stop()
        raise TimeoutError(f"the sandbox did not answer within {timeout:.0f} s")

    def _log_text(self) -> str:
        try:
            return self.log_path.read_text("utf-8", errors="replace")
        except OSError:
            return ""

    def log_tail(self, lines: int = 5) -> str:
        return " / ".join(self._log_text().strip().splitlines()[-lines:]) or "(no output)"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self) -> None:
        if self.process is not None:
            _terminate(self.process)


# ------------------------------------------------------------------------------ crawl


@dataclass(frozen=True)
class CrawlSettings:
    """The bounds and politeness of one crawl started from the dashboard."""

    max_seconds: float = 30.0
    max_pages: int = 500
    min_delay: float = 0.25
    delay_factor: float = 10.0
    concurrency: int = 32
    timeout: float = 5.0
    host_budget: int = 200
    render_budget: int = 0  # pages rendered in a browser (0: the cheap fetch only)

    #: The largest crawl a dashboard may start (the machine is shared).
    LIMITS = {
        "max_seconds": (1.0, 600.0),
        "max_pages": (1, 20_000),
        "min_delay": (0.0, 30.0),
        "delay_factor": (0.0, 100.0),
        "concurrency": (1, 256),
        "timeout": (0.5, 60.0),
        "host_budget": (1, 100_000),
        "render_budget": (0, 200),
    }

    def __post_init__(self) -> None:
        for name, (low, high) in self.LIMITS.items():
            value = getattr(self, name)
            if not isinstance(value, int | float) or value != value or not low <= value <= high:
                raise ValueError(f"{name} must be between {low:g} and {high:g}, got {value!r}")

    def argv(self) -> list[str]:
        """These settings as ``lookup crawl`` options."""
        return [
            "--max-seconds", f"{self.max_seconds:g}",
            "--max-pages", str(int(self.max_pages)),
            "--min-delay", f"{self.min_delay:g}",
            "--delay-factor", f"{self.delay_factor:g}",
            "--concurrency", str(int(self.concurrency)),
            "--timeout", f"{self.timeout:g}",
            "--host-budget", str(int(self.host_budget)),
            "--render-budget", str(int(self.render_budget)),
        ]  # fmt: skip


@dataclass(frozen=True)
class ProgressSample:
    """One reading of a running crawl, taken by the session's sampler."""

    t: float  # seconds since the crawl started
    pages: int
    requests: int
    frontier: int
    in_flight: int
    duplicates: int
    traps_cut: int


@dataclass(frozen=True)
class HostStatus:
    """One host as the crawl state has it: its queue and when it may be asked again.

    ``next_allowed_at`` is the frontier's own ready time for the host (written by the
    crawler as it runs), not a reconstruction from the fetch log.
    """

    host: str
    address: str
    robots_state: str | None  # rules | allow-all | disallow-all | None (not read yet)
    robots_status: int | None
    robots_reason: str
    crawl_delay: float | None
    queued: int
    in_flight: int
    fetched: int
    errors: int
    backoffs: int
    last_request_at: float | None  # wall clock
    last_delay: float | None  # the pause chosen after the last request
    next_allowed_at: float | None  # wall clock: the frontier's ready time for the host
    scheme: str = "http"
    budget_used: int = 0  # pages admitted in the current crawl cycle
    probe_url: str | None = None  # the URL that cannot exist, asked once
    probe_status: int | None = None  # its answer (0: no answer; None: not asked yet)
    frontier_at: float | None = None  # when the frontier's state was last written
    waiting_robots: bool = False

    @property
    def label(self) -> str:
        """``name`` (``name (https)`` for a host crawled over TLS), without the port."""
        name = self.host.split(":", 1)[0]
        return f"{name} (https)" if self.scheme == "https" else name

    def wait(self, now: float) -> float | None:
        """Seconds until this host may be asked again (0 = now); None if never asked."""
        if self.next_allowed_at is None:
            return None
        return max(0.0, self.next_allowed_at - now)


@dataclass(frozen=True)
class CrawlSnapshot:
    """A crawl directory's state at one moment (a running crawl or a finished one)."""

    out_dir: Path
    at: float  # wall clock
    started_at: float | None
    elapsed: float
    pages: int
    requests: int
    robots_fetches: int
    pages_per_second: float
    recent_pages_per_second: float
    frontier: int
    in_flight: int
    events: int
    duplicates: dict[str, int]
    traps: dict[str, int]
    blocked: int
    states: dict[str, int]
    outcomes: dict[str, int]
    hosts: list[HostStatus]
    finished: bool
    stop_reason: str | None
    cycle: int = 1
    cycle_started_at: float | None = None
    cycles: int = 1
    host_budget: int | None = None
    soft_404s: int = 0

    @property
    def duplicates_total(self) -> int:
        return sum(self.duplicates.values())

    @property
    def traps_total(self) -> int:
        return sum(self.traps.values())


#: Seconds over which the "recent" page rate is measured.
RECENT_WINDOW = 5.0


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def read_snapshot(out_dir: Path | str, now: float | None = None) -> CrawlSnapshot:
    """Read the state of the crawl in ``out_dir`` (its crawl state and ``report.json``).

    Raises ``FileNotFoundError`` when there is no crawl state there, and
    :class:`~lookup.crawler.state.CrawlStateError` when it is not a crawl's state.
    """
    out = Path(out_dir)
    if not (out / STATE_FILE).is_file():
        raise FileNotFoundError(f"{out} holds no crawl (no {STATE_FILE})")
    now = time.time() if now is None else now
    report = _read_json(out / "report.json")
    with open_crawl_reader(crawl_state_url(out)) as reader:
        meta = reader.meta()
        # Until the crawler has opened its state, the crawl has not started.
        started_at = meta.get("started_at")
        pages = reader.count_pages()
        recent = reader.count_pages(since=now - RECENT_WINDOW)
        requests, robots = reader.count_requests()
        states = reader.count_states()
        outcomes = reader.count_outcomes()
        dups = reader.count_duplicate_kinds()
        traps = reader.count_cuts()
        cycle = int(meta.get("cycle", 1))
        budget = reader.budget_used(cycle)
        cycles = reader.count_cycles()
        per_host = reader.host_queues()
        last = reader.last_fetches()
        hosts = [
            _host_status(h, per_host.get(h.host, {}), last.get(h.host), budget.get(h.host, 0))
            for h in reader.hosts()
        ]
    finished = report is not None
    if finished and report is not None:
        elapsed = float(report.get("elapsed", 0.0))
    elif started_at:
        elapsed = max(0.0, now - float(started_at))
    else:
        elapsed = 0.0
    queued = states.get("queued", 0)
    leased = states.get("leased", 0)
    return CrawlSnapshot(
        out_dir=out,
        at=now,
        started_at=float(started_at) if started_at else None,
        elapsed=elapsed,
        pages=pages,
        requests=requests,
        robots_fetches=int(robots),
        pages_per_second=pages / elapsed if elapsed > 0 else 0.0,
        recent_pages_per_second=0.0 if finished else recent / RECENT_WINDOW,
        frontier=queued + leased,
        in_flight=0 if finished else leased,
        events=outcomes.get("ok", 0),
        duplicates=dups,
        traps=traps,
        blocked=states.get("blocked", 0),
        states=states,
        outcomes=outcomes,
        hosts=hosts,
        finished=finished,
        stop_reason=str(report.get("stop_reason")) if report else None,
        cycle=cycle,
        cycle_started_at=meta.get("cycle_started_at"),
        cycles=int(cycles),
        host_budget=meta.get("host_budget"),
        soft_404s=outcomes.get("soft-404", 0),
    )


def _host_status(
    h: HostRecord, queues: dict[str, int], last: FetchRecord | None, budget_used: int
) -> HostStatus:
    """One host of the crawl state as the session view shows it."""
    return HostStatus(
        host=h.host,
        address=h.address or "",
        robots_state=h.robots_state,
        robots_status=h.robots_status,
        robots_reason=h.robots_reason or "",
        crawl_delay=h.crawl_delay,
        queued=queues.get("queued", 0),
        in_flight=queues.get("leased", 0),
        fetched=h.fetched,
        errors=h.errors,
        backoffs=h.backoffs,
        last_request_at=last.started if last is not None else None,
        last_delay=last.delay if last is not None else None,
        next_allowed_at=h.ready_at if last is not None else None,
        scheme=h.scheme or "http",
        budget_used=budget_used,
        probe_url=h.probe_url,
        probe_status=h.probe_status,
        frontier_at=h.state_at,
        waiting_robots=bool(h.waiting_robots),
    )


class CrawlSession:
    """A crawl of a sandbox web in a child process (``lookup crawl``), bounded and watched.

    ``start`` writes ``session.json`` (where the sandbox is, where its request log
    stood when the crawl began, the settings), starts the crawler with its output
    in ``crawl.log`` and a sampler thread that appends a :class:`ProgressSample` to
    ``progress.jsonl`` twice a second while it runs. ``open`` reads a crawl
    directory back (running or not) so a finished crawl can still be inspected.
    """

    def __init__(self, out_dir: Path | str, info: dict[str, Any]) -> None:
        self.out_dir = Path(out_dir)
        self.info = info
        self.process: subprocess.Popen[bytes] | None = None
        self._sampler: BackgroundTask | None = None
        self._sampled_last = False
        self._sample_lock = threading.Lock()

    # -- starting and stopping -----------------------------------------------------
    @classmethod
    def start(
        cls,
        out_dir: Path | str,
        sandbox: SandboxProbe,
        settings: CrawlSettings | None = None,
        *,
        sample_every: float = 0.5,
    ) -> CrawlSession:
        """Start crawling ``sandbox`` into ``out_dir`` (which must hold no crawl yet)."""
        settings = settings or CrawlSettings()
        out = Path(out_dir)
        if not sandbox.up:
            raise RuntimeError(f"no sandbox web answers at {sandbox.url}: {sandbox.problem}")
        if (out / STATE_FILE).exists():
            raise FileExistsError(f"{out} already holds a crawl")
        out.mkdir(parents=True, exist_ok=True)
        try:
            since = len(read_request_log(sandbox.url, since=0))
        except httpx.HTTPError as exc:
            raise RuntimeError(f"cannot read the sandbox's request log: {exc}") from exc
        try:
            tls = sandbox.manifest.get("tls") or {}
            ca = fetch_sandbox_ca(sandbox.url, out) if tls.get("ca") else None
        except (ValueError, httpx.HTTPError) as exc:
            raise RuntimeError(f"cannot read the sandbox's CA certificate: {exc}") from exc
        info = {
            "sandbox_url": sandbox.url,
            "log_since": since,
            "started_at": time.time(),
            "seeds": sandbox.seeds,
            "settings": asdict(settings),
            "ca_bundle": str(ca) if ca else None,
        }
        (out / SESSION_FILE).write_text(json.dumps(info, indent=1))
        session = cls(out, info)
        argv = [sys.executable, "-m", "lookup.cli", "crawl", *sandbox.seeds]
        argv += ["--hosts", sandbox.hosts_url, "--out", str(out), "--quiet", *settings.argv()]
        if ca is not None:
            argv += ["--ca-bundle", str(ca)]
        with (out / LOG_FILE).open("wb") as log:
            session.process = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        _adopt(session.process)
        session._sampler = BackgroundTask("crawl-sampler", session._sample, sample_every)
        session._sampler.start()
        return session

    @classmethod
    def open(cls, out_dir: Path | str) -> CrawlSession:
        """A crawl directory read back from disk (no process attached)."""
        out = Path(out_dir)
        if not (out / STATE_FILE).is_file() and not (out / SESSION_FILE).is_file():
            raise FileNotFoundError(f"{out} holds no crawl")
        return cls(out, _read_json(out / SESSION_FILE) or {})

    @property
    def running(self) -> bool:
        """Whether the crawler process is still going."""
        return self.process is not None and self.process.poll() is None

    @property
    def returncode(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def stop(self) -> None:
        """Ask the crawler to stop (SIGTERM: it finishes fetches in flight, writes its report)."""
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(signal.SIGTERM)

    def wait(self, timeout: float | None = None) -> int | None:
        """Wait for the crawler to exit; its exit code (None if still running at timeout)."""
        if self.process is None:
            return None
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        self._stop_sampler()
        return code

    def kill(self) -> None:
        """Stop the crawler for good (SIGTERM, then SIGKILL after a grace period)."""
        if self.process is not None:
            _terminate(self.process)
        self._stop_sampler()

    # -- what it did -------------------------------------------------------------------
    @property
    def sandbox_url(self) -> str | None:
        return self.info.get("sandbox_url")

    @property
    def settings(self) -> dict[str, Any]:
        return dict(self.info.get("settings", {}))

    def output(self, lines: int = 20) -> str:
        """The last lines the crawler printed (its final report, or its error)."""
        try:
            text = (self.out_dir / LOG_FILE).read_text("utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.strip().splitlines()[-lines:])

    def failed(self) -> str | None:
        """Why the crawler exited without a report, if it did."""
        code = self.returncode
        if code is None or code == 0:
            return None
        return self.output(5) or f"the crawler exited with {code}"

    def snapshot(self, now: float | None = None) -> CrawlSnapshot:
        return read_snapshot(self.out_dir, now)

    def history(self) -> list[ProgressSample]:
        """Every progress sample taken while the crawl ran (oldest first)."""
        path = self.out_dir / PROGRESS_FILE
        out = []
        try:
            lines = path.read_text("utf-8").splitlines()
        except OSError:
            return []
        for line in lines:
            try:
                out.append(ProgressSample(**json.loads(line)))
            except (ValueError, TypeError):
                continue  # a line torn by a kill
        return out

    def request_log(self) -> list[LoggedRequest]:
        """The requests this crawl made, as the sandbox logged them.

        Raises ``httpx.HTTPError`` when the sandbox cannot be asked any more.
        """
        url = self.sandbox_url
        if not url:
            return []
        entries = read_request_log(url, since=int(self.info.get("log_since", 0)))
        start = float(self.info.get("started_at", 0.0)) - 1.0
        try:  # a later crawl by the same agent is not this one's
            until = (self.out_dir / "report.json").stat().st_mtime + 1.0
        except OSError:
            until = float("inf")
        agent = self._agent()
        return [
            e
            for e in entries
            if start <= e.wall <= until and (agent is None or e.user_agent == agent)
        ]

    def _agent(self) -> str | None:
        try:
            with open_crawl_reader(crawl_state_url(self.out_dir)) as reader:
                return reader.meta().get("agent")
        except (FileNotFoundError, CrawlStateError):
            return None

    # -- the sampler ---------------------------------------------------------------------
    def _sample(self) -> None:
        """Append one progress sample; once the crawler has exited, the last one, and stop."""
        with self._sample_lock:
            if self._sampled_last:
                return
            alive = self.running
            try:
                with contextlib.suppress(FileNotFoundError, CrawlStateError):
                    s = read_snapshot(self.out_dir)
                    sample = ProgressSample(
                        t=round(time.time() - float(self.info["started_at"]), 3),
                        pages=s.pages,
                        requests=s.requests,
                        frontier=s.frontier,
                        in_flight=s.in_flight,
                        duplicates=s.duplicates_total,
                        traps_cut=s.traps_total,
                    )
                    with (self.out_dir / PROGRESS_FILE).open("a", encoding="utf-8") as f:
                        f.write(json.dumps(asdict(sample)) + "\n")
            finally:
                if not alive:
                    self._sampled_last = True
                    if self._sampler is not None:
                        self._sampler.stop()

    def _stop_sampler(self) -> None:
        """Stop the sampler, after the last sample of a crawler that has exited."""
        if self._sampler is None:
            return
        self._sampler.stop(timeout=5.0)
        if not self.running:
            self._sample()


def list_crawls(root: Path | str) -> list[Path]:
    """Crawl directories under ``root`` (each holding its crawl state), newest first."""
    base = Path(root)
    if not base.is_dir():
        return []
    found = [p for p in base.iterdir() if p.is_dir() and (p / STATE_FILE).is_file()]
    return sorted(found, key=lambda p: (p / STATE_FILE).stat().st_mtime, reverse=True)


# ------------------------------------------------------------------------ politeness


@dataclass(frozen=True)
class GapStats:
    """The pauses one host (or address) saw between consecutive requests, server side.

    ``gap`` is the time from the end of one answer to the start of the next request;
    ``required`` is the pause the rule asked for after that answer:
    ``max(Crawl-delay, delay_factor × answer time, min_delay)`` (no Crawl-delay after
    the robots.txt request itself). A violation is a gap shorter than required.
    """

    key: str
    requests: int
    min_gap: float | None
    median_gap: float | None
    min_slack: float | None  # min(gap − required)
    violations: int


def _judged_pairs(
    entries: Iterable[LoggedRequest],
    *,
    min_delay: float,
    delay_factor: float,
    crawl_delays: dict[str, float] | None,
    by: str,
) -> Iterator[tuple[str, list[LoggedRequest], list[tuple[LoggedRequest, float, float]]]]:
    """Per host (or address), in key order: its requests by start, and each judged
    request with its gap and the pause the rule required before it."""
    if by not in ("host", "address"):
        raise ValueError(f"by must be 'host' or 'address', not {by!r}")
    delays = crawl_delays or {}
    groups: dict[str, list[LoggedRequest]] = defaultdict(list)
    for e in entries:
        groups[getattr(e, by)].append(e)
    for key, items in sorted(groups.items()):
        items.sort(key=lambda e: e.start)
        judged = []
        for prev, nxt in zip(items, items[1:], strict=False):
            if prev.aborted:
                continue
            crawl_delay = delays.get(prev.host, 0.0) if prev.path != "/robots.txt" else 0.0
            required = max(min_delay, delay_factor * (prev.end - prev.start), crawl_delay or 0.0)
            judged.append((nxt, nxt.start - prev.end, required))
        yield key, items, judged


def politeness_gaps(
    entries: Iterable[LoggedRequest],
    *,
    min_delay: float,
    delay_factor: float,
    crawl_delays: dict[str, float] | None = None,
    by: str = "host",
) -> list[GapStats]:
    """Gaps between consecutive requests per host (or per address), judged against the rule.

    Requests after an aborted answer (the crawler cut a too-large page off) are
    skipped: the server cannot tell when the crawler let go.
    """
    out = []
    for key, items, judged in _judged_pairs(
        entries, min_delay=min_delay, delay_factor=delay_factor, crawl_delays=crawl_delays, by=by
    ):
        gaps = [gap for _, gap, _ in judged]
        slacks = [gap - required for _, gap, required in judged]
        out.append(
            GapStats(
                key=key,
                requests=len(items),
                min_gap=min(gaps) if gaps else None,
                median_gap=statistics.median(gaps) if gaps else None,
                min_slack=min(slacks) if slacks else None,
                violations=sum(1 for s in slacks if s < 0),
            )
        )
    return out


def too_close(
    entries: Iterable[LoggedRequest],
    *,
    min_delay: float,
    delay_factor: float,
    crawl_delays: dict[str, float] | None = None,
    by: str = "host",
) -> set[int]:
    """The ``seq`` of every request that came sooner after the one before on its host (or
    address) than the rule allows — the violations :func:`politeness_gaps` counts."""
    return {
        req.seq
        for _, _, judged in _judged_pairs(
            entries,
            min_delay=min_delay,
            delay_factor=delay_factor,
            crawl_delays=crawl_delays,
            by=by,
        )
        for req, gap, required in judged
        if gap - required < 0
    }
