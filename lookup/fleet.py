"""``lookup up --backend postgres,redis``: the shortener as a fleet on the real engines.

What it starts, in order, each a child of this process:

* the servers a backend needs and no URL names — a durable PostgreSQL in
  ``$LOOKUP_DATA_DIR/servers/postgres`` (as the ``postgres`` user when root) and a
  ``redis-server`` in ``$LOOKUP_DATA_DIR/servers/redis``, each on a free loopback port;
  a URL given with ``--store-url`` / ``--cache-url`` / ``--limits-url`` / ``--clicks-url``
  (or its ``LOOKUP_*`` setting) is used instead and never started or stopped here;
  with ``etcd`` among the backends (and no ``LOOKUP_ETCD_URL``), a throw-away etcd for
  crawler fleets (``lookup crawl --store … --coordinator etcd://…``), named to every
  child as ``LOOKUP_ETCD_URL``;
* ``--workers`` API processes (``lookup serve``, one port each) with the backend URLs in
  their environment, one admin token and ``LOOKUP_SHORTENER_AGGREGATOR=external``; with
  PostgreSQL, the typeahead hot blocklist lives there too (``LOOKUP_TYPEAHEAD_BLOCKLIST``
  set to the store's URL unless it names another list), as the shortener's blocklist does;
* the click aggregators (``python -m lookup.shortener.analytics``): two in one consumer
  group when the clicks go to Redis Streams, one over the shared SQLite click log
  otherwise;
* the dashboard (pointed at the first worker) and the sandbox web, as ``make run`` does;
* a small control endpoint on loopback (:class:`FleetControl`) that the dashboard uses to
  stop and start the Redis this command started (admin token), so a person can watch
  redirects degrade to the store and recover.

The workers share one data directory: it holds the data sets every worker serves
read-only (places, typeahead snapshots, the search index), built once; what the fleet
must agree on (links, ids, the key secret, limits, the click stream, both blocklists)
lives in the servers when a backend is chosen. ``$LOOKUP_DATA_DIR/servers/fleet.json``
says what runs where while the fleet is up. SIGINT (Ctrl-C) and SIGTERM stop everything,
newest first.

The workers, the sandbox web and the dashboard are handed a port *number* (streamlit and
the sandbox bind their own sockets; the sandbox binds one port on many addresses), so
another process can take a port between the allocator's check and the child's bind. They
follow the launchers' rule (:mod:`lookup.kit.engines.launch`) through a small adapter:
their output goes to this terminal, not to a log the fleet could read, so a child that
exits before it answers *while another process holds its port* lost the race —
:class:`~lookup.kit.engines.launch.PortTaken` — and is started again on a fresh port
(the workers as a batch: each one's environment names worker 1); any other failure is a
:class:`FleetError` at once, and a port the caller named never moves.
"""

from __future__ import annotations

import argparse
import errno
import hmac
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import httpx

from lookup import settings
from lookup.errors import Unavailable
from lookup.kit.admin import load_admin_token_in
from lookup.kit.engines.etcdserver import EtcdServer
from lookup.kit.engines.launch import PortTaken, start_on_fresh_ports
from lookup.kit.engines.pgserver import PostgresServer
from lookup.kit.engines.ports import free_port
from lookup.kit.engines.redisserver import RedisServer
from lookup.kit.serverlock import shares_state
from lookup.searchfleet import SearchShards

__all__ = [
    "BACKENDS",
    "ServingFleet",
    "FleetControl",
    "add_arguments",
    "layer_counts",
    "outage_drill",
    "parse_backends",
    "read_state",
    "redact",
    "run_fleet",
    "state_path",
]

T = TypeVar("T")

REPO_ROOT = Path(__file__).resolve().parents[1]
DASHBOARD = REPO_ROOT / "app" / "Home.py"
BACKENDS = ("postgres", "redis", "etcd")
#: The URL settings each backend fills in, by ``--…-url`` option.
URL_OPTIONS = {
    "store_url": ("shortener_store", "LOOKUP_SHORTENER_STORE", "postgres"),
    "cache_url": ("cache_url", "LOOKUP_CACHE_URL", "redis"),
    "limits_url": ("limits_url", "LOOKUP_LIMITS_URL", "redis"),
    "clicks_url": ("clicks_url", "LOOKUP_CLICKS_URL", "redis"),
}


def parse_backends(raw: str) -> tuple[str, ...]:
    """``"postgres,redis"`` → ``("postgres", "redis")``; ValueError for an unknown name."""
    names = tuple(dict.fromkeys(n.strip().lower() for n in raw.split(",") if n.strip()))
    unknown = [n for n in names if n not in BACKENDS]
    if unknown or not names:
        what = ", ".join(unknown) or repr(raw)
        raise ValueError(f"unknown backend {what}; choose from {', '.join(BACKENDS)}")
    return names


def redact(url: str) -> str:
    """``url`` without its password (for printing and the state file)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def state_path(data_dir: Path) -> Path:
    """Where a running fleet describes itself: ``<data_dir>/servers/fleet.json``."""
    return Path(data_dir) / "servers" / "fleet.json"


def read_state(data_dir: Path) -> dict[str, Any] | None:
    """The state of the fleet running over ``data_dir``, or ``None`` when none is up (no
    file, or its supervisor is gone)."""
    try:
        state = json.loads(state_path(data_dir).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(state, dict) or not _alive(int(state.get("pid", 0))):
        return None
    return state


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _held_elsewhere(host: str, port: int) -> bool:
    """Whether another process holds ``port`` on ``host`` now (a bind there fails with
    ``EADDRINUSE``). With ``SO_REUSEADDR``, so the ``TIME_WAIT`` connections of a child of
    ours that did bind the port and then died do not count; a listener does."""
    name = host.strip().strip("[]")
    family = socket.AF_INET6 if ":" in name else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((name, port))
        except OSError as exc:
            return exc.errno == errno.EADDRINUSE
    return False


def _on_port(named: int, attempt: Callable[[int], T], what: str) -> T:
    """``attempt(port)`` on the port the caller ``named`` (taken: an error, it never moves),
    else on one from the allocator, drawn again while another process takes it first."""
    if named:
        return attempt(named)
    return start_on_fresh_ports(lambda _n: attempt(free_port()), what)


def _wait_http(
    url: str, proc: subprocess.Popen[bytes], timeout: float, stopping: threading.Event
) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not stopping.is_set():
        if proc.poll() is not None:
            return False
        try:
            if httpx.get(url, timeout=1.0).status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    return False


def layer_counts(
    worker_urls: list[str], timeout: float = 2.0, *, admin_token: str = ""
) -> dict[str, Any]:
    """Each worker's cache-layer counters (``metrics()["cache"]``, read with the admin
    token) and their sum: what the in-process LRU, the negative cache, the shared tier
    (Redis) and the store answered. A worker that does not answer is reported with
    ``error`` and left out of the sum."""
    headers = {"Authorization": f"Bearer {admin_token}"} if admin_token else {}
    keys = ("l1", "negative", "shared", "store")
    per_worker: list[dict[str, Any]] = []
    total = dict.fromkeys(("requests", *keys, "sharedErrors"), 0)
    for url in worker_urls:
        try:
            answer = httpx.get(f"{url}/v1/shortener/metrics", headers=headers, timeout=timeout)
            cache = answer.raise_for_status().json()["cache"]
        except (httpx.HTTPError, ValueError, KeyError) as exc:
            per_worker.append({"url": url, "error": str(exc) or type(exc).__name__})
            continue
        layers = cache.get("layers") or {
            "l1": cache["l1"]["hits"],
            "negative": cache["negative"]["hits"],
            "shared": cache["shared"]["hits"] + cache["shared"].get("negativeHits", 0),
            "store": cache["store"]["reads"],
        }
        row = {"url": url, "requests": cache["requests"], **{k: layers.get(k, 0) for k in keys},
               "sharedErrors": cache["shared"].get("errors", 0),
               "tier": cache["shared"].get("tier", "none")}  # fmt: skip
        per_worker.append(row)
        for k in total:
            total[k] += row[k]
    return {"workers": per_worker, "total": total}


def outage_drill(
    worker_urls: list[str], stop: Callable[[], object], start: Callable[[], object], *,
    load: str = "redirects", before_s: float = 2.0, outage_s: float = 3.0,
    after_s: float = 4.0, rate: float = 30.0, hot_links: int = 10, timeout_s: float = 5.0,
    admin_token: str = "",
) -> dict[str, Any]:  # fmt: skip
    """A failure drill as a timeline: steady load on the workers, ``stop()`` a server after
    ``before_s``, ``start()`` it ``outage_s`` later, ``after_s`` more of load.

    Every tick (``rate`` per second, from a small thread pool, round-robin over the
    workers) sends a redirect of a warm link (an L1 hit) and — ``load="redirects"`` — makes
    a fresh link through one worker, follows it there (an L1 hit: the creating worker keeps
    it) and through the next worker (an L1 miss there: a store read that fills the shared
    tier), then asks both for a key nobody made (a typo, a scanner): the first reads the
    store and leaves its "no such link" in the tier, the second finds it there — a
    shared-tier hit while the tier is up, a store read while it is down. (With two workers
    a fresh link's only L1 miss is that store read, so the tier's share of the traffic is
    these known misses.) Or — ``load="creates"`` — makes a link. Returns ``events`` (``t``,
    ``op``, ``status`` 0 = no answer, ``ms``), the ``marks`` (``stop``, ``start``),
    ``layers`` sampled every quarter second (summed :func:`layer_counts`, with
    ``admin_token``), and for creates which acknowledged (201) links were ``lost`` after
    the restart (each followed once more through every worker).
    """
    if load not in ("redirects", "creates"):
        raise ValueError("load must be 'redirects' or 'creates'")
    from concurrent.futures import ThreadPoolExecutor

    clients = [httpx.Client(base_url=u, timeout=timeout_s) for u in worker_urls]
    n = len(clients)
    try:
        token = clients[0].post("/v1/tokens").raise_for_status().json()["token"]
        auth = {"Authorization": f"Bearer {token}"}

        def make(via: httpx.Client, name: str) -> httpx.Response:
            return via.post("/v1/links", json={"longUrl": f"https://example.org/drill/{name}"},
                            headers=auth)  # fmt: skip

        hot = [make(clients[0], f"hot-{os.getpid()}-{time.time_ns()}-{i}").json()["key"]
               for i in range(hot_links)]  # fmt: skip
        for c in clients:
            for key in hot:
                c.get(f"/{key}")
        events: list[dict[str, Any]] = []
        acknowledged: list[str] = []
        lock = threading.Lock()
        t0 = time.perf_counter()

        def timed(op: str, fn: Callable[[], httpx.Response]) -> httpx.Response | None:
            began = time.perf_counter()
            try:
                answer: httpx.Response | None = fn()
            except httpx.HTTPError:
                answer = None
            done = time.perf_counter()
            with lock:
                events.append({"t": round(began - t0, 4), "op": op,
                               "status": answer.status_code if answer is not None else 0,
                               "ms": round((done - began) * 1000, 2)})  # fmt: skip
            return answer

        def tick(i: int) -> None:
            a, b = clients[i % n], clients[(i + 1) % n]
            timed("redirect (warm)", lambda: a.get(f"/{hot[i % len(hot)]}"))
            made = timed("create", lambda: make(a, f"{os.getpid()}-{time.time_ns()}-{i}"))
            if made is None or made.status_code != 201:
                return
            key = made.json()["key"]
            if load == "creates":
                with lock:
                    acknowledged.append(key)
            else:  # the creator answers from L1; the other worker's read fills the tier
                timed("redirect (fresh)", lambda: a.get(f"/{key}"))
                timed("redirect (other worker)", lambda: b.get(f"/{key}"))
                unknown = f"nolink{os.getpid()}x{i}"  # never made: a 404 the tier remembers
                timed("unknown key", lambda: a.get(f"/{unknown}"))
                timed("unknown key (other worker)", lambda: b.get(f"/{unknown}"))

        layers: list[dict[str, Any]] = []
        sampling = threading.Event()

        def sample() -> None:
            while not sampling.wait(0.25):
                layers.append({"t": round(time.perf_counter() - t0, 3),
                               **layer_counts(worker_urls, timeout=1.0,
                                             admin_token=admin_token)["total"]})  # fmt: skip

        marks: dict[str, float] = {}
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        total = before_s + outage_s + after_s
        with ThreadPoolExecutor(max_workers=8) as pool:
            i = 0
            while (now := time.perf_counter() - t0) < total:
                if "stop" not in marks and now >= before_s:
                    marks["stop"] = round(now, 3)
                    pool.submit(stop)
                if "start" not in marks and now >= before_s + outage_s:
                    marks["start"] = round(now, 3)
                    pool.submit(start)
                pool.submit(tick, i)
                i += 1
                time.sleep(max(0.0, i / rate - (time.perf_counter() - t0)))
        sampling.set()
        sampler.join(5)
        lost = [k for k in acknowledged
                if not all(c.get(f"/{k}").status_code == 302 for c in clients)]  # fmt: skip
        return {"events": sorted(events, key=lambda e: e["t"]), "marks": marks,
                "layers": layers, "acknowledged": len(acknowledged), "lost": lost}  # fmt: skip
    finally:
        for c in clients:
            c.close()


class FleetError(RuntimeError):
    """A part of the fleet did not start."""


class ServingFleet:
    """The processes of one fleet: servers, workers, aggregators, dashboard; start and stop.

    ``urls`` maps ``store_url`` / ``cache_url`` / ``limits_url`` / ``clicks_url`` to a URL
    to use instead of starting a server (empty: start one when its backend is chosen).
    ``aggregators=False`` starts no click aggregator (a notebook that measures redirects).
    """

    def __init__(
        self, data_dir: Path, backends: tuple[str, ...], *, workers: int = 2,
        host: str = "127.0.0.1", api_port: int = 0, app_port: int = 0,
        dashboard: bool = True, sandbox_port: int | None = None, control_port: int = 0,
        urls: dict[str, str] | None = None, aggregators: bool = True, quiet: bool = False,
    ) -> None:  # fmt: skip
        if workers < 1:
            raise ValueError("--workers must be at least 1")
        self.data_dir = Path(data_dir)
        self.servers_dir = self.data_dir / "servers"
        self.backends = backends
        self.workers = workers
        self.host = host
        self.api_port = api_port
        self.app_port = app_port
        self.dashboard = dashboard
        self.sandbox_port = sandbox_port
        #: The control endpoint's port (0: a free one, printed at start and in the state).
        self.control_port = control_port
        self.urls = {k: v for k, v in (urls or {}).items() if v}
        self.aggregators = aggregators
        #: Children's output goes nowhere (a notebook), instead of to this terminal.
        self.quiet = quiet
        self.postgres: PostgresServer | None = None
        self.redis: RedisServer | None = None
        #: ``--backend …,etcd``: a local etcd for crawler fleets (their partition leases).
        self.etcd: EtcdServer | None = None
        self.redis_stopped = False
        self.procs: list[tuple[str, subprocess.Popen[bytes]]] = []
        self.worker_urls: list[str] = []
        self.app_url: str | None = None
        self.sandbox_url: str | None = None
        self.control: FleetControl | None = None
        self.admin_token = ""
        self._lock = threading.Lock()
        #: Set by a signal: start-up stops waiting for readiness at once.
        self.stopping = threading.Event()

    # -- starting --------------------------------------------------------------------

    def _start_servers(self) -> None:
        self.servers_dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.servers_dir, 0o755)  # the postgres user must reach its directory
        if "postgres" in self.backends and "store_url" not in self.urls:
            self.postgres = PostgresServer(self.servers_dir / "postgres", durable=True)
            self.postgres.start()
            self.urls["store_url"] = self.postgres.url
        if "redis" in self.backends and not all(
            k in self.urls for k in ("cache_url", "limits_url", "clicks_url")
        ):
            self.redis = RedisServer(directory=self.servers_dir / "redis").start()
            for key in ("cache_url", "limits_url", "clicks_url"):
                self.urls.setdefault(key, self.redis.url)
        if "etcd" in self.backends and not settings.get("etcd_url"):
            self.etcd = EtcdServer().start()  # a crawl fleet: --coordinator etcd://…

    def environment(self) -> dict[str, str]:
        """The environment of every child: the backend URLs, one admin token, the data."""
        env = settings.child_environ(
            LOOKUP_DATA_DIR=str(self.data_dir),
            LOOKUP_ADMIN_TOKEN=self.admin_token,
            LOOKUP_SHORTENER_AGGREGATOR="external",
        )
        for key, (_name, var, _backend) in URL_OPTIONS.items():
            env.pop(var, None)
            if key in self.urls:
                env[var] = self.urls[key]
        if "store_url" in self.urls and not settings.get("typeahead_blocklist"):
            # one typeahead hot blocklist for every worker, beside the shortener's
            env["LOOKUP_TYPEAHEAD_BLOCKLIST"] = self.urls["store_url"]
        if self.shares_data():
            # places and typeahead snapshots from the database too (lookup/fleetdata.py)
            if not settings.get("places_store_url"):
                env["LOOKUP_PLACES_STORE_URL"] = self.urls["store_url"]
            if not settings.get("typeahead_snapshot_store"):
                env["LOOKUP_TYPEAHEAD_SNAPSHOT_STORE"] = self.urls["store_url"]
        if "clicks_url" in self.urls and not settings.get("typeahead_searches_url"):
            # submitted searches on a stream and trending windows in the fleet's Redis
            clicks = urlsplit(self.urls["clicks_url"])
            env["LOOKUP_TYPEAHEAD_SEARCHES_URL"] = urlunsplit(clicks._replace(query=""))
        if self.etcd is not None:
            env["LOOKUP_ETCD_URL"] = self.etcd.url
        return env

    def _spawn(self, name: str, argv: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        out = subprocess.DEVNULL if self.quiet else None
        proc = subprocess.Popen(argv, env=env, cwd=REPO_ROOT, stdout=out, stderr=out)
        self.procs.append((name, proc))
        return proc

    def _ready(
        self, name: str, proc: subprocess.Popen[bytes], url: str, *, port: int = 0,
        host: str | None = None, batch: list[subprocess.Popen[bytes]] | None = None,
    ) -> None:  # fmt: skip
        """Wait until ``url`` answers. A child that exited while another process holds its
        ``port`` (on ``host``) lost the race for it: :class:`PortTaken`, after its ``batch``
        (default: itself) is stopped and forgotten. Any other failure: :class:`FleetError`."""
        if _wait_http(url, proc, 90, self.stopping) or self.stopping.is_set():
            return
        where = url.rsplit("/", 1)[0]
        if port and proc.poll() is not None and _held_elsewhere(host or self.host, port):
            self._discard(batch or [proc])
            raise PortTaken(f"the {name} did not start on {where}: another process holds its port")
        raise FleetError(f"the {name} did not start on {where}")

    def _discard(self, procs: list[subprocess.Popen[bytes]]) -> None:
        """Stop ``procs`` (a start that lost its port) and forget them: a new start replaces
        them, and :meth:`dead` must not report them."""
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.procs = [(n, p) for n, p in self.procs if all(p is not q for q in procs)]

    def _start_workers(self, env: dict[str, str], cli: list[str]) -> None:
        """Start the API workers and wait until each answers. Every worker's environment
        names worker 1 (``LOOKUP_API_URL``, ``LOOKUP_PUBLIC_URL`` unless set), so a worker
        that lost its drawn port starts the batch again on fresh ports (sets ``env``)."""
        public_given = "LOOKUP_PUBLIC_URL" in env

        def attempt(_n: int) -> None:
            ports = [self.api_port + i if self.api_port else free_port()
                     for i in range(self.workers)]  # fmt: skip
            self.worker_urls = [f"http://{self.host}:{p}" for p in ports]
            env["LOOKUP_API_URL"] = self.worker_urls[0]
            if not public_given:
                env["LOOKUP_PUBLIC_URL"] = self.worker_urls[0]
            started = []
            for i, port in enumerate(ports):
                argv = [*cli, "serve", "--host", self.host, "--port", str(port),
                        "--data-dir", str(self.data_dir)]  # fmt: skip
                name = f"API worker {i + 1}"
                started.append((name, self._spawn(name, argv, env), port))
            batch = [proc for _name, proc, _port in started]
            for (name, proc, port), url in zip(started, self.worker_urls, strict=True):
                self._ready(name, proc, f"{url}/healthz", port=port, batch=batch)

        if self.api_port:
            attempt(0)  # ports the caller named never move
        else:
            start_on_fresh_ports(attempt, "the API workers")

    def shares_data(self) -> bool:
        """Whether places and typeahead snapshots live in the fleet's PostgreSQL too."""
        return "postgres" in self.backends and "store_url" in self.urls

    def _share_data(self) -> None:
        """Copy the data directory's places and current snapshots into the database once
        (a database that holds them already keeps its own)."""
        from lookup.fleetdata import share_places, share_snapshots

        url = self.urls["store_url"]
        lines = [share_places(url, self.data_dir, say=lambda _m: None)]
        lines += share_snapshots(url, self.data_dir)
        if not self.quiet:
            print("\n".join(f"  {line}" for line in lines), flush=True)

    def shares_state(self) -> bool:
        """Whether the workers' state is shared (links in PostgreSQL, or a Redis cache tier
        telling every worker of every change): only then may several serve one data
        directory (``lookup serve`` holds ``server.lock``, :mod:`lookup.kit.serverlock`)."""
        postgres, redis = "postgres" in self.backends, "redis" in self.backends
        store = self.urls.get("store_url") or ("postgresql://" if postgres else "")
        cache = self.urls.get("cache_url") or ("redis://" if redis else "")
        return shares_state(store, cache)

    def start(self) -> ServingFleet:
        """Start everything (servers first), wait until each answers, write the state file."""
        if self.workers > 1 and not self.shares_state():
            raise FleetError(
                f"--backend {','.join(self.backends)} keeps the links in the data directory "
                f"with nothing to tell {self.workers} API workers of a change (they would serve "
                "stale redirects): add postgres or redis to --backend, or run --workers 1"
            )
        self._start_servers()
        if self.shares_data():
            self._share_data()
        self.admin_token = load_admin_token_in(self.servers_dir)
        env = self.environment()
        cli = [sys.executable, "-m", "lookup.cli"]
        etcd = (self.etcd.url if self.etcd else settings.get("etcd_url")) or None
        search = SearchShards.plan(self.data_dir, etcd if "etcd" in self.backends else None)
        if search is not None:  # shard servers beside the workers (lookup/searchfleet.py)
            env.update(search.environment())
        self._start_workers(env, cli)
        if search is not None:
            search.start(self._spawn, env, cli)
            search.wait_registered(stopping=self.stopping)
        on_streams = str(self.urls.get("clicks_url", "")).startswith("redis")
        for i in range((2 if on_streams else 1) if self.aggregators else 0):
            argv = [sys.executable, "-m", "lookup.shortener.analytics",
                    "--data-dir", str(self.data_dir)]  # fmt: skip
            if on_streams:  # one consumer group; a dead member's entries are claimed
                argv += ["--consumer", f"aggregator-{i + 1}"]
            self._spawn(f"click aggregator {i + 1}", argv, env)
        if self.sandbox_port is not None:

            def sandbox(port: int) -> None:
                self.sandbox_url = f"http://127.0.0.1:{port}"
                env["LOOKUP_SANDBOX_URL"] = self.sandbox_url
                proc = self._spawn("sandbox web", [*cli, "sandbox", "--port", str(port)], env)
                # it binds the port on 127.0.0.1 and on every host's own loopback address
                self._ready("sandbox web", proc, f"{self.sandbox_url}/_sandbox/hosts",
                            port=port, host="0.0.0.0")  # fmt: skip

            _on_port(self.sandbox_port, sandbox, "the sandbox web")
        if self.dashboard:

            def dashboard(port: int) -> None:
                self.app_url = f"http://{self.host}:{port}"
                argv = [sys.executable, "-m", "streamlit", "run", str(DASHBOARD),
                        "--server.address", self.host, "--server.port", str(port),
                        "--server.headless", "true",
                        "--browser.gatherUsageStats", "false"]  # fmt: skip
                proc = self._spawn("dashboard", argv, env)
                self._ready("dashboard", proc, f"{self.app_url}/_stcore/health", port=port)

            _on_port(self.app_port, dashboard, "the dashboard")
        self.control = FleetControl(self, port=self.control_port).start()
        self.write_state()
        return self

    # -- the cache tier, for the failure drill on the dashboard ----------------------------

    def stop_cache_tier(self) -> dict[str, Any]:
        """Stop the Redis this fleet started (SIGTERM; its port stays reserved for restart)."""
        if self.redis is None:
            raise LookupError("this fleet did not start a Redis")
        with self._lock:
            self.redis_stopped = True
            self.redis.stop()
            self.write_state()
        return self.describe()["servers"]["redis"]

    def start_cache_tier(self) -> dict[str, Any]:
        """Start the Redis again on the same port (empty: the tier refills from the store)."""
        if self.redis is None:
            raise LookupError("this fleet did not start a Redis")
        with self._lock:
            if self.redis.proc is None or self.redis.proc.poll() is not None:
                self.redis.start()
            self.redis_stopped = False
            self.write_state()
        return self.describe()["servers"]["redis"]

    # -- what runs where ---------------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        """The fleet as JSON: addresses, pids, which servers this command started."""
        servers: dict[str, Any] = {}
        if "postgres" in self.backends:
            servers["postgres"] = {
                "url": redact(self.urls.get("store_url", "")),
                "started": self.postgres is not None,
                "dir": str(self.postgres.root) if self.postgres else None,
            }
        if "redis" in self.backends:
            proc = self.redis.proc if self.redis else None
            servers["redis"] = {
                "url": redact(self.urls.get("cache_url", "")),
                "limitsUrl": redact(self.urls.get("limits_url", "")),
                "clicksUrl": redact(self.urls.get("clicks_url", "")),
                "started": self.redis is not None,
                "running": None if self.redis is None else (proc is not None
                                                            and proc.poll() is None),
                "pid": proc.pid if proc is not None else None,
            }  # fmt: skip
        if "etcd" in self.backends:
            servers["etcd"] = {
                "url": self.etcd.url if self.etcd else settings.get("etcd_url"),
                "started": self.etcd is not None,
            }
        return {
            "pid": os.getpid(),
            "backends": list(self.backends),
            "servers": servers,
            "workers": [
                {"url": url, "pid": proc.pid}
                for url, (_n, proc) in zip(self.worker_urls, self.procs, strict=False)
            ],
            "processes": [{"name": n, "pid": p.pid} for n, p in self.procs],
            "dashboard": self.app_url,
            "sandbox": self.sandbox_url,
            "control": self.control.url if self.control else None,
        }

    def write_state(self) -> None:
        path = state_path(self.data_dir)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.describe(), indent=2), encoding="utf-8")
        tmp.replace(path)

    def dead(self) -> str | None:
        """The name of a child that exited on its own (None while all run)."""
        for name, proc in self.procs:
            if proc.poll() is not None:
                return f"the {name} exited with {proc.returncode}"
        with self._lock:
            redis_proc = self.redis.proc if self.redis else None
            if (
                self.redis
                and not self.redis_stopped
                and (redis_proc is None or redis_proc.poll() is not None)
            ):
                return "redis-server exited"
        return None

    # -- stopping ------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop every child, newest first, then the servers; remove the state file."""
        if self.control is not None:
            self.control.stop()
            self.control = None
        for _name, proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 15
        for _name, proc in reversed(self.procs):
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self.redis is not None:
            self.redis.close()
        if self.postgres is not None:
            self.postgres.stop("fast")
        if self.etcd is not None:
            self.etcd.stop()
        state_path(self.data_dir).unlink(missing_ok=True)


class FleetControl:
    """A loopback HTTP endpoint of the supervisor: ``GET /fleet`` (what runs where) and
    ``POST /fleet/cache/stop`` / ``POST /fleet/cache/start`` (admin token) for the Redis
    this fleet started. Errors are JSON ``{"error", "message"}`` with a 4xx status."""

    def __init__(self, fleet: ServingFleet, host: str = "127.0.0.1", port: int = 0) -> None:
        self.fleet = fleet
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args: object) -> None:
                return

            def _send(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                if self.path.rstrip("/") == "/fleet":
                    self._send(200, outer.fleet.describe())
                else:
                    self._send(404, {"error": "NOT_FOUND", "message": "try GET /fleet"})

            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                actions = {"/fleet/cache/stop": outer.fleet.stop_cache_tier,
                           "/fleet/cache/start": outer.fleet.start_cache_tier}  # fmt: skip
                action = actions.get(self.path.rstrip("/"))
                if action is None:
                    self._send(
                        404,
                        {
                            "error": "NOT_FOUND",
                            "message": "POST /fleet/cache/stop or /fleet/cache/start",
                        },
                    )
                    return
                header = self.headers.get("Authorization", "")
                if not header.startswith("Bearer "):
                    self._send(
                        401,
                        {
                            "error": "UNAUTHORIZED",
                            "message": "send Authorization: Bearer <admin token>",
                        },
                    )
                    return
                if not hmac.compare_digest(header[7:].strip().encode(),
                                           outer.fleet.admin_token.encode()):  # fmt: skip
                    self._send(403, {"error": "FORBIDDEN", "message": "not the admin token"})
                    return
                try:
                    self._send(200, action())
                except LookupError as exc:
                    self._send(409, {"error": "NOT_STARTED_HERE", "message": str(exc)})

        self.server = ThreadingHTTPServer((host, port), Handler)
        self.server.daemon_threads = True
        self.url = f"http://{host}:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, name="fleet-control",
                                        daemon=True)  # fmt: skip

    def start(self) -> FleetControl:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _urls_from(args: argparse.Namespace, backends: tuple[str, ...]) -> dict[str, str]:
    urls = {}
    for key, (name, _var, backend) in URL_OPTIONS.items():
        given = getattr(args, key, None) or settings.get(name)
        if given and backend in backends:
            urls[key] = given
    return urls


def _build_missing(data_dir: Path) -> int:
    env = settings.child_environ(LOOKUP_DATA_DIR=str(data_dir))
    for what in (["datasets", "build", "all"], ["typeahead", "build"]):
        argv = [sys.executable, "-m", "lookup.cli", *what, "--missing", "--data-dir", str(data_dir)]
        done = subprocess.run(argv, env=env, cwd=REPO_ROOT)
        if done.returncode != 0:
            print(f"error: `lookup {' '.join(what)}` failed (see above)", file=sys.stderr)
            return done.returncode
    return 0


def run_fleet(args: argparse.Namespace) -> int:
    """``lookup up --backend …``: start the fleet, print every address, supervise it until
    SIGINT/SIGTERM (or a child dies), then stop everything."""
    from lookup.kit.mounts import resolve_data_dir

    try:
        backends = parse_backends(args.backend)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    data_dir = resolve_data_dir(args.data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    if not args.skip_datasets and (code := _build_missing(data_dir)) != 0:
        return code
    fleet = ServingFleet(
        data_dir, backends, workers=args.workers, host=args.host, api_port=args.api_port,
        app_port=args.app_port, dashboard=not args.no_dashboard,
        sandbox_port=None if args.no_sandbox else args.sandbox_port,
        control_port=args.control_port, urls=_urls_from(args, backends),
    )  # fmt: skip
    stopping = fleet.stopping
    old = {s: signal.signal(s, lambda *_: stopping.set()) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        try:
            fleet.start()
        except (FleetError, Unavailable, OSError, RuntimeError, ValueError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        if stopping.is_set():
            return 0
        _print_addresses(fleet)
        while not stopping.wait(0.5):
            problem = fleet.dead()
            if problem and not stopping.wait(0.3):
                print(f"error: {problem}; stopping", file=sys.stderr)
                return 1
        print("\nstopping the fleet ...", flush=True)
        return 0
    finally:
        fleet.stop()
        for signum, handler in old.items():
            signal.signal(signum, handler)


def _print_addresses(fleet: ServingFleet) -> None:
    state = fleet.describe()
    lines = ["", f"  Lookup Workbench fleet is up ({', '.join(fleet.backends)})"]
    for name, server in state["servers"].items():
        origin = "started here" if server["started"] else "given"
        lines.append(f"    {name:<12} {server['url']}   ({origin})")
    for i, url in enumerate(fleet.worker_urls, 1):
        lines.append(f"    API worker {i} {url}")
    if fleet.app_url:
        lines.append(f"    Dashboard    {fleet.app_url}")
    if fleet.sandbox_url:
        lines.append(f"    Sandbox web  {fleet.sandbox_url}")
    lines.append(f"    Control      {state['control']}   (GET /fleet)")
    lines.append(f"    Data         {fleet.data_dir}")
    lines.append("  Press Ctrl-C to stop everything.\n")
    print("\n".join(lines), flush=True)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The fleet's options on ``lookup up``."""
    p.add_argument("--backend", default=None, metavar="NAMES",
                   help="run a fleet on real engines: postgres, redis or postgres,redis "
                        "(servers are started under $LOOKUP_DATA_DIR/servers/ unless a URL "
                        "is given), plus etcd for crawler fleets; without it, the embedded "
                        "single process")  # fmt: skip
    p.add_argument("--workers", type=int, default=2,
                   help="API processes of the fleet (default 2; --backend only)")  # fmt: skip
    p.add_argument("--no-dashboard", action="store_true",
                   help="do not start the dashboard (--backend only)")  # fmt: skip
    p.add_argument("--control-port", type=int, default=0,
                   help="port of the fleet's loopback control endpoint, GET /fleet (default "
                        "0: a free port, printed at start; --backend only)")  # fmt: skip
    for key, (_name, var, backend) in URL_OPTIONS.items():
        p.add_argument(f"--{key.replace('_', '-')}", default=None, metavar="URL",
                       help=f"use this {backend} instead of starting one (or ${var})")  # fmt: skip
