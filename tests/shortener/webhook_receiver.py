"""A real loopback HTTP receiver for webhook tests: records every POST, answers per path.

Paths: ``/ok`` answers 204; ``/flaky/N`` answers 500 to its first N requests, then 200;
``/fail`` always 500; ``/redirect`` answers 302 to ``/trap`` (which counts a hit if a
sender ever followed it); ``/slow-once`` sleeps ``slow_s`` on its first request, then
answers 200 at once. The signature is checked by the tests, from the raw body kept here.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float

    @property
    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Receiver:
    url: str
    slow_s: float = 3.0
    requests: list[Received] = field(default_factory=list)
    hits: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def on(self, path: str) -> list[Received]:
        with self.lock:
            return [r for r in self.requests if r.path == path]

    def wait(self, predicate: Any, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(0.05)
        raise AssertionError(f"the receiver did not see what was expected in {timeout} s")


def signed_correctly(secret: str, r: Received, now: float | None = None) -> bool:
    """The oracle: HMAC-SHA256 of the raw body (GitHub's ``sha256=`` form) and a signed,
    recent stamp — computed here with :mod:`hmac` directly, not with the code under test."""
    expected = "sha256=" + hmac.new(secret.encode(), r.body, hashlib.sha256).hexdigest()
    stamp = int(r.headers["x-lookup-timestamp"])
    fresh = abs((now or time.time()) - stamp) <= 300
    return hmac.compare_digest(expected, r.headers["x-lookup-signature"]) and (
        r.json["timestamp"] == stamp and fresh
    )


@contextmanager
def webhook_receiver(slow_s: float = 3.0) -> Iterator[Receiver]:
    """A threaded HTTP server on 127.0.0.1 (a free port), stopped on exit."""
    state: dict[str, Receiver] = {}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            return None

        def do_POST(self) -> None:  # noqa: N802 (the stdlib's name)
            rec = state["r"]
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length)
            path = self.path
            with rec.lock:
                rec.requests.append(
                    Received(
                        path, {k.lower(): v for k, v in self.headers.items()}, body, time.time()
                    )
                )
                rec.hits[path] = rec.hits.get(path, 0) + 1
                n = rec.hits[path]
            status, headers = 204, {}
            if path.startswith("/flaky/"):
                status = 500 if n <= int(path.rsplit("/", 1)[1]) else 200
            elif path == "/fail":
                status = 500
            elif path == "/redirect":
                status, headers = 302, {"Location": rec.url + "/trap"}
            elif path == "/slow-once" and n == 1:
                time.sleep(rec.slow_s)
                status = 200
            try:
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", "0")
                self.end_headers()
            except OSError:
                pass  # the sender went away (killed mid-delivery)

        do_GET = do_POST  # noqa: N815 (a followed redirect would arrive as GET)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    port = server.server_address[1]
    state["r"] = Receiver(f"http://127.0.0.1:{port}", slow_s=slow_s)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state["r"]
    finally:
        server.shutdown()
        server.server_close()
