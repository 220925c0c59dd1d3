"""What every dashboard page shares: where the API and the data live, and how to ask the API.

The dashboard is a client of the HTTP API (``lookup serve``); it finds it at
``$LOOKUP_API_URL`` (default ``http://127.0.0.1:8000``) and the data at
``$LOOKUP_DATA_DIR`` (default ``./data``), so it works when started on any port.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import streamlit as st

from lookup import settings
from lookup.kit.probe import get_json
from lookup.labs import lookup_command

if TYPE_CHECKING:
    from lookup.labs import LabSupervisor

DEFAULT_API_URL = "http://127.0.0.1:8000"
DEFAULT_DATA_DIR = "data"

#: Seconds to wait for the API before saying it is down; the pages must stay snappy.
#: How to run the ``lookup`` command from a fresh shell at the repository — ``lookup`` when
#: it is on the PATH, else ``.venv/bin/lookup`` (what ``make run`` installs): the commands
#: the pages print use it, so they work when pasted.
LOOKUP = lookup_command()


def api_timeout() -> httpx.Timeout:
    """How long a call to the API may take (``LOOKUP_API_TIMEOUT``; connecting: 1 s)."""
    seconds = settings.get("api_timeout")
    return httpx.Timeout(seconds, connect=min(1.0, seconds))


#: The internal words some pages keep, each explained in plain words: where a page shows
#: one, the element carries its explanation as a help tooltip (``help=term_help(...)``).
GLOSSARY = {
    "seam": "A seam is one place where shared or durable state lives behind one interface, "
    "so the same code runs on an embedded store (SQLite, in memory) or on a shared server "
    "(PostgreSQL, Redis) — this table says which one each part uses.",
    "SIGSTOP": "SIGSTOP freezes a process without killing it — as a long garbage-collection "
    "pause or an overloaded machine would; SIGCONT lets it carry on where it stopped, "
    "unaware that time passed.",
    "R + W > N": "Each key is kept on N replicas; a write waits for W of them to store it "
    "and a read asks R of them. When R + W > N the two groups always share a replica, so "
    "every read sees the last acknowledged write.",
    "WARC": "WARC (Web ARChive) is the standard file format crawlers and web archives store "
    "fetched pages in: each answer, with its headers and fetch date, as one record.",
    "BM25": "BM25 is the standard relevance score of keyword search: a page scores higher "
    "for query words that are rare across all pages and frequent in it, and a long page "
    "counts each match a little less.",
}


def term_help(*terms: str) -> str:
    """The plain explanation of each of ``terms`` (keys of :data:`GLOSSARY`), for ``help=``."""
    return "\n\n".join(GLOSSARY[t] for t in terms)


def plural(n: int, one: str, many: str | None = None) -> str:
    """``1 copy``, ``2 copies``, ``1,200 pages``."""
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def metric_row(columns: Sequence[Any], figures: Sequence[tuple[str, str, str | None]]) -> None:
    """Bordered metrics, one a column: ``(label, value, help)`` each."""
    for column, (label, value, help_text) in zip(columns, figures, strict=True):
        column.metric(label, value, border=True, help=help_text)


def show_notice(key: str) -> None:
    """The ``(kind, text)`` a callback left under ``key`` — ``kind`` names the Streamlit
    element (``success``, ``warning``, ``error``) — shown once, then forgotten."""
    notice = st.session_state.pop(key, None)
    if notice:
        kind, text = notice
        getattr(st, kind)(text)


def api_url() -> str:
    """The base address of the HTTP API, without a trailing slash."""
    return (settings.get("api_url") or DEFAULT_API_URL).rstrip("/")


def data_dir() -> Path:
    """The directory that holds every data set and index (``$LOOKUP_DATA_DIR`` or ``./data``)."""
    return Path(settings.get("data_dir") or DEFAULT_DATA_DIR).expanduser().resolve()


def labs() -> LabSupervisor:
    """The supervisor of the labs this dashboard runs (servers, fleets, builds), over its
    data directory: pages start, find and stop them through it and own no process."""
    from lookup.labs import supervisor

    return supervisor(data_dir())


def left_running(kind: str, key: str, widget_key: str) -> bool:
    """When the lab ``(kind, key)`` is one an earlier dashboard left running (found in the
    data directory's state file: this process cannot drive it), say so with a button that
    stops it, and return True; else False (the page draws its own controls)."""
    from lookup.labs import TITLES, RecordedLab

    lab = labs().get(kind, key)
    if not isinstance(lab, RecordedLab):
        return False
    where = ", ".join(f"{name} `{url}`" for name, url in lab.addresses().items())
    st.info(
        f"A {TITLES.get(kind, kind)} left running by an earlier dashboard "
        f"(process {lab.recorded.owner})"
        + (f" at {where}" if where else "")
        + ". Stop it to start a new one from this page."
    )
    if st.button("Stop it", key=widget_key):
        labs().stop(kind, key)
        st.rerun()
    return True


def admin_headers() -> dict[str, str]:
    """``Authorization`` with the API's admin token (``$LOOKUP_ADMIN_TOKEN`` or the data dir's).

    The token file is created here when no system has made it yet: the API reads it on
    first use (a search-only server makes none at start), so both sides agree on it."""
    from lookup.kit.admin import load_admin_token

    return {"Authorization": f"Bearer {load_admin_token(data_dir())}"}


@cache
def tls_context() -> ssl.SSLContext:
    """One verifying TLS context for every client the dashboard makes: building one loads
    the system's CA bundle, 30–110 ms on this machine — paid per API call before."""
    return ssl.create_default_context()


def http_client(
    base_url: str = "", timeout: float | httpx.Timeout | None = None, **kwargs: Any
) -> httpx.Client:
    """An :class:`httpx.Client` sharing :func:`tls_context` (cheap to make, still verifying);
    ``timeout`` defaults to :func:`api_timeout`."""
    timeout = api_timeout() if timeout is None else timeout
    return httpx.Client(base_url=base_url, timeout=timeout, verify=tls_context(), **kwargs)


def api_client(base_url: str | None = None) -> httpx.Client:
    """A short-timeout HTTP client bound to the API; use it as a context manager."""
    return http_client(base_url or api_url())


@dataclass(frozen=True)
class Answer:
    """One API response, or why there is none: the page shows it, never an exception."""

    status: int
    body: Any = None
    content: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)
    problem: str | None = None
    ms: float = 0.0

    @property
    def ok(self) -> bool:
        return self.problem is None and 200 <= self.status < 300

    @property
    def error(self) -> str | None:
        """The API's error code (``NOT_BUILT``, ``INVALID_PARAMETER``, …), if it sent one."""
        if isinstance(self.body, dict) and isinstance(self.body.get("error"), str):
            return str(self.body["error"])
        return None

    def message(self) -> str:
        """A sentence for the person looking at the page."""
        if self.problem:
            return self.problem
        if isinstance(self.body, dict) and "message" in self.body:
            return f"{self.body['message']} ({self.body.get('error', self.status)})"
        return f"the API answered HTTP {self.status}"


def call(
    method: str,
    path: str,
    *,
    client: httpx.Client | None = None,
    timeout: float | httpx.Timeout | None = None,
    **kwargs: Any,
) -> Answer:
    """One API call; a network failure or a non-JSON body becomes an :class:`Answer`.

    ``client`` reuses a pooled connection (the typeahead page keeps one alive, as a
    browser would); ``timeout`` overrides the short default for slow calls.
    """
    if timeout is not None:
        kwargs["timeout"] = timeout
    started = time.perf_counter()
    try:
        if client is not None:
            response = client.request(method, path, **kwargs)
        else:
            with api_client() as own:
                response = own.request(method, path, **kwargs)
    except httpx.TimeoutException:
        return Answer(0, problem=f"the API at {api_url()} did not answer in time")
    except httpx.HTTPError as exc:
        return Answer(0, problem=f"the API at {api_url()} cannot be reached ({type(exc).__name__})")
    ms = (time.perf_counter() - started) * 1000.0
    body: Any = None
    if response.headers.get("content-type", "").startswith("application/json"):
        try:
            body = response.json()
        except ValueError:
            body = None
    return Answer(response.status_code, body, response.content, response.headers, ms=ms)


@dataclass(frozen=True)
class ApiHealth:
    """What ``GET /healthz`` said, or why it could not be asked."""

    url: str
    up: bool
    version: str | None = None
    systems: dict[str, Any] | None = None
    problem: str | None = None


def probe_health(base_url: str | None = None) -> ApiHealth:
    """Ask the API whether it is up; never raises — a dead API is a normal state to show."""
    url = base_url or api_url()
    with api_client(url) as client:
        answer = get_json("/healthz", timeout=client.timeout, client=client)
    if answer.problem:
        return ApiHealth(url, False, problem=answer.problem)
    if answer.status != 200:
        return ApiHealth(url, False, problem=f"/healthz answered HTTP {answer.status}")
    if not answer.json:
        return ApiHealth(url, False, problem="/healthz did not answer JSON")
    body = answer.body
    if not isinstance(body, dict) or body.get("status") != "ok":
        return ApiHealth(url, False, problem="/healthz did not report status ok")
    systems = body.get("systems")
    return ApiHealth(
        url,
        True,
        version=str(body.get("version")) if body.get("version") is not None else None,
        systems=systems if isinstance(systems, dict) else {},
    )


#: How the dashboard names a system's health status that needs a person (``/healthz``).
PROBLEM_LABELS = {
    "DAMAGED": "damaged",
    "NOT_WRITABLE": "cannot write its data",
    "START_FAILED": "failed to start",
}


def system_problems(health: ApiHealth) -> dict[str, dict[str, Any]]:
    """The systems ``/healthz`` reports as damaged, unwritable or failed (with a remedy)."""
    return {
        name: report
        for name, report in (health.systems or {}).items()
        if isinstance(report, dict) and report.get("remedy")
    }


def problem_text(name: str, report: Mapping[str, Any]) -> str:
    """One paragraph for a damaged system: what is wrong, which file, and what to do."""
    label = PROBLEM_LABELS.get(str(report.get("status")), "not working")
    file = f" File: `{report['file']}`." if report.get("file") else ""
    return (
        f"**{name.capitalize()} {label}** — {report.get('message', '')}.{file} "
        f"**What to do:** {report['remedy']}."
    )


@st.cache_data(ttl=5, show_spinner=False)
def cached_health(base_url: str) -> ApiHealth:
    """:func:`probe_health`, remembered for a few seconds so reruns do not hammer the API."""
    return probe_health(base_url)


def show_api_status() -> ApiHealth:
    """One small status line saying whether the API answers ``/healthz``, and the fix if not."""
    health = cached_health(api_url())
    with st.container(key="api-status"):
        if health.up:
            version = f" · version {health.version}" if health.version else ""
            st.markdown(
                f":green-badge[:material/check_circle: API up] answering at "
                f"[{health.url}]({health.url.rstrip('/')}/docs){version}"
            )
            for name, report in system_problems(health).items():  # the others still serve
                st.error(problem_text(name, report), icon=":material/report:")
        else:
            st.markdown(
                f":orange-badge[:material/cloud_off: API down] Not reachable at {health.url} "
                f"({health.problem}). Start it with `make run` (or `{LOOKUP} serve`), or point "
                "`LOOKUP_API_URL` at it; the capacity planner works without it."
            )
    return health
