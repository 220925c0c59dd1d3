"""The real front end (``lookup serve``: uvicorn over the whole API) against an attacker:
forged ``X-Forwarded-For``, huge JSON integers, oversized and slow-drip headers, bodies
that are not JSON, an IPv6 loopback bind, and the app factory on a public address.

Every test talks to a ``lookup serve`` (or ``uvicorn``) process over a real socket (issue 24,
items 1-4); nothing here uses an in-process client.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import ROOT, free_port, lookup_serve, wait_http

ADMIN = "hardening-admin-token"
#: Short enough for a test, long enough that a loaded machine does not trip them by accident.
HEADER_TIMEOUT_S = 1.0
BODY_TIMEOUT_S = 1.0
MAX_HEADER_BYTES = 16 * 1024


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOKUP_")}
    env.update(
        LOOKUP_ADMIN_TOKEN=ADMIN,
        LOOKUP_HTTP_HEADER_TIMEOUT=str(HEADER_TIMEOUT_S),
        LOOKUP_HTTP_BODY_TIMEOUT=str(BODY_TIMEOUT_S),
        LOOKUP_HTTP_MAX_HEADER_BYTES=str(MAX_HEADER_BYTES),
    )
    env.update(extra)
    return env


def _serve(data_dir: Path, **extra: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    port = free_port()
    data_dir.mkdir(parents=True, exist_ok=True)
    log = (data_dir.parent / "serve.log").open("wb")  # the server's stderr, read by tests
    proc = lookup_serve(data_dir, port, env=_env(**extra), stderr=log)
    proc.log_path = Path(log.name)  # type: ignore[attr-defined]
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{url}/healthz", proc)
        yield url, proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """One ``lookup serve`` with the defaults (no proxy trusted), short read timeouts."""
    yield from _serve(tmp_path_factory.mktemp("hardening") / "data")


@pytest.fixture(scope="module")
def api(served: tuple[str, subprocess.Popen[bytes]]) -> str:
    return served[0]


def _rotating(url: str, path: str, body: dict, n: int, **headers: str) -> list[int]:
    statuses = []
    with httpx.Client(timeout=10) as client:
        for i in range(n):
            forged = {"X-Forwarded-For": f"203.0.{i // 250}.{i % 250 + 1}", **headers}
            statuses.append(client.post(f"{url}{path}", json=body, headers=forged).status_code)
    return statuses


# -- 1. X-Forwarded-For decides nothing unless the one setting says so --------------------


def test_rotating_forwarded_for_does_not_escape_the_search_limit(api: str) -> None:
    statuses = _rotating(api, "/v1/searches", {"q": "ind vs pak", "market": "en-IN"}, 45)
    assert 429 in statuses, statuses  # 30 per 60 s per client: the header changes nothing


def test_rotating_forwarded_for_does_not_escape_the_anonymous_create_limit(api: str) -> None:
    body = {"longUrl": "https://example.com/forged"}
    statuses = _rotating(api, "/v1/links", body, 30)
    assert 429 in statuses, statuses  # 20 per 60 s per address


def test_a_proxy_not_named_in_the_setting_is_not_trusted(tmp_path: Path) -> None:
    for url, _ in _serve(tmp_path / "data", LOOKUP_TRUST_FORWARDED_FOR="192.0.2.10"):
        statuses = _rotating(url, "/v1/searches", {"q": "ind vs pak"}, 40)
        assert 429 in statuses, statuses


def test_with_the_setting_on_the_header_is_honoured(tmp_path: Path) -> None:
    for url, _ in _serve(tmp_path / "data", LOOKUP_TRUST_FORWARDED_FOR="127.0.0.1,::1"):
        searches = _rotating(url, "/v1/searches", {"q": "ind vs pak"}, 40)
        creates = _rotating(url, "/v1/links", {"longUrl": "https://example.com/p"}, 25)
        assert 429 not in searches and 429 not in creates, (searches, creates)
        # and one forged client is still one client
        same = [
            httpx.post(
                f"{url}/v1/searches", json={"q": "x"}, headers={"X-Forwarded-For": "198.51.100.7"}
            ).status_code
            for _ in range(35)
        ]
        assert 429 in same


# -- 2. a huge JSON integer is a 400, never a 500 -----------------------------------------

HUGE = "1" * 5001


def _assert_json_error(resp: httpx.Response, status: int, code: str | None = None) -> dict:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"].startswith("application/json"), resp.headers
    body = resp.json()
    assert set(body) >= {"error", "message"}, body
    if code is not None:
        assert body["error"] == code, body
    return body


def test_a_5001_digit_integer_is_a_json_400_everywhere(
    served: tuple[str, subprocess.Popen[bytes]],
) -> None:
    api = served[0]
    owner = httpx.post(f"{api}/v1/tokens").json()["token"]
    bearer = {"Authorization": f"Bearer {owner}", "Content-Type": "application/json"}
    link = httpx.post(
        f"{api}/v1/links", json={"longUrl": "https://example.com/huge"}, headers=bearer
    ).json()
    cases = [
        ("POST", "/v1/links", f'{{"longUrl": "https://example.com/a", "maxClicks": {HUGE}}}', {}),
        ("PATCH", f"/v1/links/{link['key']}", f'{{"maxClicks": {HUGE}}}', bearer),
        (
            "POST",
            "/v1/shortener/blocklist",
            f'{{"add": [{HUGE}]}}',
            {"Authorization": f"Bearer {ADMIN}"},
        ),
    ]
    for method, path, raw, headers in cases:
        resp = httpx.request(
            method,
            f"{api}{path}",
            content=raw,
            headers={"Content-Type": "application/json", **headers},
        )
        _assert_json_error(resp, 400, "MALFORMED_JSON")
    time.sleep(0.5)
    assert b"Traceback" not in served[1].log_path.read_bytes()  # type: ignore[attr-defined]


# -- 3. header size, read timeouts, uvicorn's own errors ----------------------------------


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def _read_response(sock: socket.socket, timeout: float) -> bytes:
    sock.settimeout(timeout)
    data = b""
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    except (TimeoutError, ConnectionResetError):
        pass
    return data


def test_an_oversized_header_is_refused_quickly_and_health_keeps_answering(api: str) -> None:
    big = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * (8 * 1024 * 1024)
    replies: list[tuple[bytes, float]] = []

    def attack() -> None:
        started = time.monotonic()
        with socket.create_connection(("127.0.0.1", _port(api)), timeout=10) as sock:
            try:
                sock.sendall(big)
            except (BrokenPipeError, ConnectionResetError):
                pass  # refused before it was all sent: the point
            replies.append((_read_response(sock, 10), time.monotonic() - started))

    attacker = threading.Thread(target=attack, daemon=True)
    attacker.start()
    answers = []
    with httpx.Client(timeout=10) as client:
        for _ in range(5):  # on another connection, while (and after) the attack runs
            started = time.monotonic()
            assert client.get(f"{api}/healthz").status_code == 200
            answers.append(time.monotonic() - started)
            time.sleep(0.05)
    attacker.join(15)
    reply, took = replies[0]
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 431"), head[:200]
    assert b"application/json" in head.lower()
    assert json.loads(body)["error"] == "HEADERS_TOO_LARGE"
    assert took < 10, took
    assert max(answers) < 5, answers


def _cut_off_while_dripping(
    sock: socket.socket, drip: bytes, within_s: float, answer: bytes | None = None
) -> bool:
    """Send ``drip`` over and over for up to ``within_s``; whether the server closed the
    connection (or answered starting with ``answer``) meanwhile."""
    started = time.monotonic()
    sock.settimeout(0.2)
    while time.monotonic() - started < within_s:
        try:
            sock.sendall(drip)
            data = sock.recv(65536)
            if data == b"" or (answer is not None and data.startswith(answer)):
                return True
        except TimeoutError:
            continue
        except (BrokenPipeError, ConnectionResetError):
            return True
    return False


def test_a_header_dripped_slowly_is_cut_off(api: str) -> None:
    with socket.create_connection(("127.0.0.1", _port(api)), timeout=10) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        cut = _cut_off_while_dripping(sock, b"X-Drip: a\r\n", HEADER_TIMEOUT_S * 5)
    assert cut, "the connection was still open after 5x the timeout"


def test_a_body_dripped_slowly_is_cut_off(api: str) -> None:
    with socket.create_connection(("127.0.0.1", _port(api)), timeout=10) as sock:
        sock.sendall(
            b"POST /v1/links HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: 1000\r\n\r\n{"
        )
        cut = _cut_off_while_dripping(sock, b" ", BODY_TIMEOUT_S * 5, answer=b"HTTP/1.1 408")
    assert cut, "the connection was still open after 5x the timeout"


def test_an_idle_connection_that_never_sends_is_closed(api: str) -> None:
    with socket.create_connection(("127.0.0.1", _port(api)), timeout=10) as sock:
        sock.settimeout(HEADER_TIMEOUT_S * 5)
        try:
            assert sock.recv(65536) == b""
        except TimeoutError:
            pytest.fail("an idle connection was still open after 5x the header timeout")


def test_a_malformed_request_gets_the_json_error(api: str) -> None:
    with socket.create_connection(("127.0.0.1", _port(api)), timeout=10) as sock:
        sock.sendall(b"NOT HTTP AT ALL\x00\r\n\r\n")
        reply = _read_response(sock, 10)
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400"), reply[:300]
    assert b"application/json" in head.lower()
    assert json.loads(body)["error"] == "BAD_REQUEST"


# -- 4. JSON bodies only as JSON; ::1; the app factory on a public address -----------------


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data", None]
)
def test_a_create_that_is_not_sent_as_json_is_refused(api: str, content_type: str | None) -> None:
    headers = {} if content_type is None else {"Content-Type": content_type}
    raw = b'{"longUrl": "https://example.com/csrf"}'
    resp = httpx.post(f"{api}/v1/links", content=raw, headers=headers)
    _assert_json_error(resp, 415, "UNSUPPORTED_MEDIA_TYPE")
    resp = httpx.post(f"{api}/v1/searches", content=b'{"q": "x"}', headers=headers)
    _assert_json_error(resp, 415, "UNSUPPORTED_MEDIA_TYPE")


def test_json_with_a_charset_is_still_json(api: str) -> None:
    resp = httpx.post(
        f"{api}/v1/links",
        content=b'{"longUrl": "https://example.com/charset"}',
        headers={"Content-Type": "application/json; charset=utf-8"},
    )
    assert resp.status_code in (201, 429), resp.text


# -- 4. Host: a name the operator did not allow is refused (DNS rebinding) -----------------


def _get(url: str, host: str) -> httpx.Response:
    return httpx.get(f"{url}/healthz", headers={"Host": host}, timeout=10)


def test_a_rebinding_host_is_refused_and_loopback_names_are_served(api: str) -> None:
    port = api.rsplit(":", 1)[1]
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", "app.localhost", "[::1]:8000"):
        assert _get(api, host).status_code == 200, host
    for host in ("evil.example", f"evil.example:{port}", "127.0.0.1.evil.example", "a b"):
        answer = _get(api, host)
        assert answer.status_code == 400, host
        assert answer.json()["error"] == "HOST_NOT_ALLOWED", answer.text
    # the hot paths are guarded too, not only the management API
    redirect = httpx.get(f"{api}/anykey", headers={"Host": "evil.example"})
    assert redirect.status_code == 400 and redirect.json()["error"] == "HOST_NOT_ALLOWED"


def test_the_allowed_hosts_setting_names_the_public_names(tmp_path: Path) -> None:
    log_path = tmp_path / "serve.log"  # _serve's log of the server's stderr
    for url, _proc in _serve(tmp_path / "data", LOOKUP_ALLOWED_HOSTS="sh.example,.go.example"):
        assert _get(url, "sh.example").status_code == 200
        assert _get(url, "go.example").status_code == 200
        assert _get(url, "eu.go.example:443").status_code == 200
        assert _get(url, "evil.example").status_code == 400
        assert _get(url, "127.0.0.1").status_code == 200  # loopback names stay allowed
        assert _get(url, "notgo.example").status_code == 400
    log = log_path.read_text()
    assert log.count("refused a request for host 'evil.example'") == 1, log[-2000:]


def test_the_short_domains_are_allowed_without_naming_them_twice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A domain listed for short links is served when no allow-list is set (issue 27 item 3)."""
    from lookup.kit.hostguard import AllowedHosts

    monkeypatch.delenv("LOOKUP_ALLOWED_HOSTS", raising=False)
    monkeypatch.setenv("LOOKUP_SHORTENER_DOMAINS", "go.example,sh.example:8080")
    allowed = AllowedHosts.from_settings("127.0.0.1", "http://127.0.0.1:8000")
    assert allowed.allows("go.example") and allowed.allows("sh.example")
    assert not allowed.allows("evil.example") and not allowed.allows("example")
    monkeypatch.setenv("LOOKUP_ALLOWED_HOSTS", "api.example")  # an explicit list is the list
    assert not AllowedHosts.from_settings("127.0.0.1").allows("go.example")


def test_a_bad_allowed_hosts_value_stops_serve_with_one_line(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "lookup.cli", "serve", "--port", str(free_port()),
         "--data-dir", str(tmp_path / "data")],
        cwd=ROOT, env=_env(LOOKUP_ALLOWED_HOSTS="https://sh.example/"), capture_output=True,
        timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2
    assert b"LOOKUP_ALLOWED_HOSTS" in proc.stderr and b"Traceback" not in proc.stderr


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback on this machine")
def test_serve_on_the_ipv6_loopback(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET6) as s:
        s.bind(("::1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "lookup.cli",
            "serve",
            "--host",
            "::1",
            "--port",
            str(port),
            "--data-dir",
            str(tmp_path / "data"),
        ],
        cwd=ROOT,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        wait_http(f"http://[::1]:{port}/healthz", proc)
        link = httpx.post(
            f"http://[::1]:{port}/v1/links", json={"longUrl": "https://example.com/v6"}
        ).json()
        assert link["shortUrl"].startswith(f"http://[::1]:{port}/"), link
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=15)
    assert b"Traceback" not in err, err.decode()


def test_the_app_factory_refuses_a_public_bind_without_an_admin_token(tmp_path: Path) -> None:
    env = _env(LOOKUP_DATA_DIR=str(tmp_path / "data"))
    del env["LOOKUP_ADMIN_TOKEN"]
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "--factory",
            "lookup.server:app_factory",
            "--host",
            "0.0.0.0",
            "--port",
            str(free_port()),
            "--no-proxy-headers",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode != 0
    assert b"LOOKUP_ADMIN_TOKEN" in proc.stderr + proc.stdout, proc.stderr.decode()[-2000:]


def test_the_app_factory_guards_each_request_by_the_address_it_arrived_on() -> None:
    """Where the bind address is unknown (uvicorn.run(..., factory=True), --workers), the
    app refuses requests that arrived on a non-loopback address (the ``server`` scope)."""
    import asyncio

    from lookup.server import PublicBindGuard

    async def app(scope, receive, send):  # type: ignore[no-untyped-def]
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    async def call(server: tuple[str, int]) -> int:
        sent: list[dict] = []

        async def send(message: dict) -> None:
            sent.append(message)

        async def receive() -> dict:
            return {"type": "http.request", "body": b"", "more_body": False}

        scope = {
            "type": "http",
            "method": "GET",
            "path": "/healthz",
            "headers": [],
            "server": server,
            "client": ("192.0.2.1", 1),
            "query_string": b"",
        }
        await PublicBindGuard(app, admin_token="")(scope, receive, send)
        return sent[0]["status"]

    assert asyncio.run(call(("127.0.0.1", 8000))) == 200
    assert asyncio.run(call(("::1", 8000))) == 200
    assert asyncio.run(call(("192.0.2.5", 8000))) == 503


def test_the_app_factory_refuses_uvicorns_proxy_headers_when_no_proxy_is_trusted(
    tmp_path: Path,
) -> None:
    env = _env(LOOKUP_DATA_DIR=str(tmp_path / "data"))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "--factory",
            "lookup.server:app_factory",
            "--host",
            "127.0.0.1",
            "--port",
            str(free_port()),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode != 0
    assert b"--no-proxy-headers" in proc.stderr, proc.stderr.decode()[-2000:]


def test_the_app_factory_serves_with_the_front_end_options(tmp_path: Path) -> None:
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "--factory",
            "lookup.server:app_factory",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--no-proxy-headers",
            "--http",
            "lookup.kit.serving:HttpProtocol",
        ],
        cwd=ROOT,
        env=_env(LOOKUP_DATA_DIR=str(tmp_path / "data")),
    )
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz", proc)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nX-Big: " + b"a" * (MAX_HEADER_BYTES * 2))
            assert _read_response(sock, 10).startswith(b"HTTP/1.1 431")
    finally:
        proc.terminate()
        proc.wait(timeout=15)
