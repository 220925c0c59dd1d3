"""The sandbox web's server: many hosts on many loopback addresses, one port, one log.

Every host has a name (``docs.sandbox.test``) and a loopback address (127.0.0.2,
127.0.0.3, ...; Linux routes all of 127/8 to loopback). Some names share an
address, as on shared hosting. There is no DNS for ``.sandbox.test``: the name →
address table is served at ``http://127.0.0.1:PORT/_sandbox/hosts`` in
``/etc/hosts`` format, and the crawler's resolver reads it.

One uvicorn server listens on one socket per address. A request is routed by its
``Host`` header, and a name requested on the wrong address gets ``421 Misdirected
Request``, as a real virtual-hosting server would answer. Hosts that also speak
TLS get a second socket on their address (the TLS port), served by a second
uvicorn server with the sandbox's throwaway certificate; a name that has no
certificate gets ``421`` there too. Every request is logged (name, address,
scheme, port, path, status, start and end on the monotonic clock), so tests can
judge the crawler's politeness from the server's side.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, cast
from urllib.parse import parse_qsl

import uvicorn

__all__ = ["LoggedRequest", "Request", "RequestLog", "Response", "SandboxServer"]


@dataclass(frozen=True)
class Request:
    """What a site handler sees of one HTTP request."""

    host: str  # the name from the Host header, without port
    address: str  # the local address the request arrived on
    method: str
    path: str
    query: str
    headers: dict[str, str]  # lower-case names

    @property
    def target(self) -> str:
        return self.path + ("?" + self.query if self.query else "")

    def params(self) -> dict[str, str]:
        return dict(parse_qsl(self.query, keep_blank_values=True))


@dataclass
class Response:
    """A site handler's answer. ``delay`` waits before answering (cut short on disconnect).

    ``stream`` is an alternative body: ``(chunk, count)`` sends ``chunk`` ``count``
    times, for pages too large to build in memory.
    """

    status: int = 200
    body: bytes | str = b""
    content_type: str | None = "text/html; charset=utf-8"
    headers: list[tuple[str, str]] = field(default_factory=list)
    delay: float = 0.0
    stream: tuple[bytes, int] | None = None
    chunked: bool = False  # stream without Content-Length (the size is learnt by reading)
    soft_404: bool = False  # ground truth for the log: "not found" served as 200 OK


@dataclass(frozen=True)
class LoggedRequest:
    """One request as the server saw it; times are ``time.monotonic()`` seconds."""

    seq: int
    host: str
    address: str
    method: str
    target: str
    status: int
    start: float
    end: float
    wall: float
    bytes_sent: int
    user_agent: str
    aborted: bool
    scheme: str = "http"
    port: int = 0
    soft_404: bool = False  # the answer was a planted soft 404 (never sent to the client)

    @property
    def path(self) -> str:
        return self.target.split("?", 1)[0]


class RequestLog:
    """An append-only, thread-safe list of every request the sandbox received."""

    def __init__(self) -> None:
        self._entries: list[LoggedRequest] = []
        self._lock = threading.Lock()

    def append(self, **fields: Any) -> LoggedRequest:
        with self._lock:
            entry = LoggedRequest(seq=len(self._entries), **fields)
            self._entries.append(entry)
            return entry

    def entries(self, since: int = 0) -> list[LoggedRequest]:
        """A snapshot of the entries from sequence number ``since`` on."""
        with self._lock:
            return list(self._entries[since:])

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


Handler = Callable[[Request], Response]


def _fast_loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop when installed (what ``uvicorn.run`` would pick), else asyncio's."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


class SandboxServer:
    """An ASGI app plus the uvicorn servers that bind it on every address.

    ``vhosts`` maps a host name to ``(address, handler)``; ``control`` handles the
    ``/_sandbox/...`` endpoints on the control address. ``tls_names`` are the
    names also served over TLS (on ``tls_port`` of their address) with the
    server-side ``tls_context``.
    """

    def __init__(
        self,
        vhosts: dict[str, tuple[str, Handler]],
        control: Handler,
        control_address: str,
        port: int,
        *,
        tls_names: frozenset[str] = frozenset(),
        tls_context: ssl.SSLContext | None = None,
        tls_port: int = 0,
    ) -> None:
        if tls_names and tls_context is None:
            raise ValueError("TLS names need a TLS context")
        self.vhosts = vhosts
        self.control = control
        self.control_address = control_address
        self.port = port
        self.tls_names = tls_names
        self.tls_context = tls_context
        self.tls_port = tls_port
        self.log = RequestLog()
        self._server: uvicorn.Server | None = None
        self._tls_server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._sockets: list[socket.socket] = []
        self._tls_sockets: list[socket.socket] = []

    # -- binding -----------------------------------------------------------------
    def addresses(self) -> list[str]:
        return sorted({addr for addr, _ in self.vhosts.values()} | {self.control_address})

    def tls_addresses(self) -> list[str]:
        return sorted({self.vhosts[name][0] for name in self.tls_names})

    def bind(self) -> int:
        """Bind one socket per address (and the TLS ones); port 0 picks a free port."""
        if self._sockets:
            return self.port
        self.port, self._sockets = _bind_all(self.addresses(), self.port)
        if self.tls_names:
            try:
                self.tls_port, self._tls_sockets = _bind_all(self.tls_addresses(), self.tls_port)
            except OSError:
                for s in self._sockets:
                    s.close()
                self._sockets = []
                raise
        return self.port

    # -- running -----------------------------------------------------------------
    def _config(self, tls: bool = False) -> uvicorn.Config:
        # only TLS names open TLS sockets, and __init__ refuses them without a context
        context = cast(ssl.SSLContext, self.tls_context)
        return uvicorn.Config(
            self.app,
            interface="asgi3",
            lifespan="off",
            log_level="warning",
            access_log=False,
            timeout_keep_alive=30,
            backlog=1024,
            ssl_context_factory=(lambda _config, _default: context) if tls else None,
        )

    async def _serve_all(self, started: threading.Event | None = None) -> None:
        """Run the plain server and the TLS one until either is told to exit."""
        self._server = uvicorn.Server(self._config())
        servers = [(self._server, self._sockets)]
        if self._tls_sockets:
            self._tls_server = uvicorn.Server(self._config(tls=True))
            servers.append((self._tls_server, self._tls_sockets))
        tasks = [asyncio.create_task(srv.serve(sockets=socks)) for srv, socks in servers]
        while not all(srv.started for srv, _ in servers) and not any(t.done() for t in tasks):
            await asyncio.sleep(0.01)
        if started is not None:
            started.set()
        # One server stopping (Ctrl-C, stop()) stops the other.
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for srv, _ in servers:
            srv.should_exit = True
        await asyncio.gather(*tasks, return_exceptions=True)

    def start_in_thread(self, timeout: float = 20.0) -> None:
        """Serve from a background thread; returns once the sockets accept."""
        if not self._sockets:
            self.bind()
        started = threading.Event()
        self._thread = threading.Thread(
            target=lambda: asyncio.run(self._serve_all(started)), name="sandbox-web", daemon=True
        )
        self._thread.start()
        if not started.wait(timeout):
            raise TimeoutError("the sandbox server did not start")

    def serve_forever(self) -> None:
        """Serve in the calling thread until interrupted (Ctrl-C)."""
        if not self._sockets:
            self.bind()
        with asyncio.Runner(loop_factory=_fast_loop_factory()) as runner:
            runner.run(self._serve_all())

    def stop(self, timeout: float = 10.0) -> None:
        for server in (self._server, self._tls_server):
            if server is not None:
                server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        for s in self._sockets + self._tls_sockets:
            with contextlib.suppress(OSError):
                s.close()
        self._sockets = []
        self._tls_sockets = []

    # -- the ASGI app ------------------------------------------------------------
    async def app(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            return
        start = time.monotonic()
        wall = time.time()
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        address, port = (scope.get("server") or ("", 0))[:2]
        scheme = scope.get("scheme", "http")
        name = headers.get("host", "").rsplit(":", 1)[0].lower().rstrip(".")
        req = Request(
            host=name,
            address=address,
            method=scope["method"],
            path=scope["path"],
            query=scope.get("query_string", b"").decode("latin-1"),
            headers=headers,
        )
        try:
            if scheme == "https" and name not in self.tls_names:
                resp = Response(421, f"{name} has no certificate here", "text/plain")
            else:
                resp = self._route(req)
        except Exception as exc:  # noqa: BLE001 - a handler bug must still be logged
            resp = Response(500, f"sandbox handler error: {exc!r}", "text/plain")
        logged = False

        def record(end: float, sent: int, aborted: bool) -> None:
            nonlocal logged
            logged = True
            self.log.append(
                host=name,
                address=address,
                method=req.method,
                target=req.target,
                status=resp.status,
                start=start,
                end=end,
                wall=wall,
                bytes_sent=sent,
                user_agent=headers.get("user-agent", ""),
                aborted=aborted,
                scheme=scheme,
                port=int(port or 0),
                soft_404=resp.soft_404,
            )

        aborted = False
        sent = 0
        end = [0.0]
        if resp.delay > 0:
            aborted = await self._wait_or_disconnect(resp.delay, receive)
        if aborted:
            end[0] = time.monotonic()
        else:
            sent, aborted = await self._send(resp, req.method, send, end, receive, record)
        if not logged:
            record(end[0], sent, aborted)

    def _route(self, req: Request) -> Response:
        if req.address == self.control_address and req.host not in self.vhosts:
            return self.control(req)
        entry = self.vhosts.get(req.host)
        if entry is None:
            return Response(404, f"no such host here: {req.host!r}", "text/plain")
        addr, handler = entry
        if addr != req.address:
            return Response(421, f"{req.host} is not served on {req.address}", "text/plain")
        return handler(req)

    @staticmethod
    async def _wait_or_disconnect(delay: float, receive: Callable) -> bool:
        """Sleep ``delay`` seconds; True if the client went away first."""

        watcher = asyncio.ensure_future(_until_disconnect(receive))
        try:
            await asyncio.wait_for(asyncio.shield(watcher), timeout=delay)
            return True
        except TimeoutError:
            return False
        finally:
            watcher.cancel()

    @staticmethod
    async def _send(
        resp: Response,
        method: str,
        send: Callable,
        end: list[float],
        receive: Callable,
        record: Callable[[float, int, bool], None],
    ) -> tuple[int, bool]:
        """Send ``resp``; ``end[0]`` is a lower bound of the moment the client has it all.

        A whole (not streamed) answer is stamped and logged before its headers go out: a
        client may hold it complete on the headers alone (``Content-Length: 0`` on a
        redirect, a type it will not read), so a stamp taken after them could land later
        than the client's next request and overstate a gap's shortness (seen under load:
        a 7.6 ms "gap" on a 10 ms rule). A streamed answer is stamped before its last
        chunk, which the client must read. Either way "next start − end" never overstates
        how polite a client was, and a client that has the answer finds it in the log.
        """
        body = resp.body.encode("utf-8") if isinstance(resp.body, str) else resp.body
        headers = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in resp.headers]
        if resp.content_type is not None:
            headers.append((b"content-type", resp.content_type.encode("latin-1")))
        length = len(body) if resp.stream is None else len(resp.stream[0]) * resp.stream[1]
        if resp.status not in (204, 304) and not (resp.chunked and resp.stream is not None):
            headers.append((b"content-length", str(length).encode()))
        start = {"type": "http.response.start", "status": resp.status, "headers": headers}
        if method == "HEAD" or resp.status in (204, 304) or resp.stream is None:
            whole = b"" if method == "HEAD" or resp.status in (204, 304) else body
            end[0] = time.monotonic()
            record(end[0], len(whole), False)
            await send(start)
            await send({"type": "http.response.body", "body": whole})
            return len(whole), False
        await send(start)
        chunk, count = resp.stream
        watcher = asyncio.ensure_future(_until_disconnect(receive))
        sent = 0
        try:
            for i in range(count):
                if watcher.done():  # the client stopped reading (a size cap): its right
                    end[0] = time.monotonic()
                    return sent, True
                if i == count - 1:
                    end[0] = time.monotonic()
                await send(
                    {"type": "http.response.body", "body": chunk, "more_body": i < count - 1}
                )
                sent += len(chunk)
                await asyncio.sleep(0)
        except OSError:
            end[0] = time.monotonic()
            return sent, True
        finally:
            watcher.cancel()
        return sent, False


async def _until_disconnect(receive: Callable) -> None:
    """Read ASGI messages until the client disconnects (a watcher task's body)."""
    while (await receive())["type"] != "http.disconnect":
        pass


def _bind_all(addresses: list[str], port: int) -> tuple[int, list[socket.socket]]:
    """One listening socket per address on one port (port 0: one free on all of them)."""
    for _attempt in range(20):
        chosen = port
        socks: list[socket.socket] = []
        try:
            for addr in addresses:
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind((addr, chosen))
                if chosen == 0:
                    chosen = s.getsockname()[1]
                s.listen(1024)
                s.setblocking(False)
                socks.append(s)
        except OSError:
            for s in socks:
                s.close()
            if port != 0:
                raise
            continue
        return chosen, socks
    raise OSError("no port is free on every sandbox address")


def log_as_json(entries: list[LoggedRequest]) -> str:
    """The log as JSON lines (one request per line)."""
    return "".join(json.dumps(asdict(e)) + "\n" for e in entries)


def iter_log_json(text: str) -> Iterator[LoggedRequest]:
    """Parse ``log_as_json`` output back into entries."""
    for line in text.splitlines():
        if line.strip():
            yield LoggedRequest(**json.loads(line))
