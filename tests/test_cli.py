"""The ``lookup`` command: help, argument errors, and the real server over a real socket."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from lookup.cli import main
from tests.conftest import ROOT, free_port, wait_http


def test_help_lists_every_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for command in ("serve", "capacity", "up"):
        assert command in out


def test_no_subcommand_prints_help_and_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "usage" in capsys.readouterr().out


@pytest.mark.parametrize("port", ["http", "-1", "70000"])
def test_bad_port_is_a_clear_error(port: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["serve", "--port", port])
    assert exc.value.code == 2
    assert "port" in capsys.readouterr().err


def test_serve_answers_healthz_over_a_real_socket(live_api: str) -> None:
    resp = httpx.get(f"{live_api}/healthz")
    assert resp.status_code == 200 and resp.json()["status"] == "ok"
    missing = httpx.get(f"{live_api}/definitely/not/here")
    assert missing.status_code == 404 and missing.json()["error"] == "NOT_FOUND"


def test_up_starts_api_dashboard_and_sandbox_and_stops_all_on_ctrl_c(tmp_path: Path) -> None:
    """What `make run` does: all servers come up, Ctrl-C stops all, nothing is left listening."""
    api_port, app_port, sandbox_port = free_port(), free_port(), free_port()
    env = dict(os.environ, LOOKUP_DATA_DIR=str(tmp_path / "data"))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "lookup.cli",
            "up",
            "--skip-datasets",
            "--api-port",
            str(api_port),
            "--app-port",
            str(app_port),
            "--sandbox-port",
            str(sandbox_port),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_http(f"http://127.0.0.1:{api_port}/healthz", proc, timeout=60)
        wait_http(f"http://127.0.0.1:{app_port}/_stcore/health", proc, timeout=90)
        wait_http(f"http://127.0.0.1:{sandbox_port}/_sandbox/hosts", proc, timeout=30)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out
    assert f"http://127.0.0.1:{api_port}" in out and f"http://127.0.0.1:{app_port}" in out
    for port in (api_port, app_port, sandbox_port):
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"http://127.0.0.1:{port}/", timeout=2)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20", "api.example.com"])
def test_serve_on_a_public_address_without_an_admin_token_refuses_to_start(
    host: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import uvicorn

    ran: dict[str, object] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: ran.update(kw))
    monkeypatch.delenv("LOOKUP_ADMIN_TOKEN", raising=False)
    data = tmp_path / "data"
    assert main(["serve", "--host", host, "--port", "1", "--data-dir", str(data)]) == 2
    err = capsys.readouterr().err
    assert "admin token" in err and "LOOKUP_ADMIN_TOKEN" in err and host in err
    assert not ran  # never served
    assert not (data / "shortener" / "admin.token").exists()  # refused before creating one


def test_serve_on_a_public_address_with_an_admin_token_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import uvicorn

    ran: dict[str, object] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: ran.update(kw))
    monkeypatch.setenv("LOOKUP_ADMIN_TOKEN", "a-long-enough-admin-token")
    data = tmp_path / "data"
    assert main(["serve", "--host", "0.0.0.0", "--port", "1", "--data-dir", str(data)]) == 0
    assert ran["host"] == "0.0.0.0"
    monkeypatch.delenv("LOOKUP_ADMIN_TOKEN")
    ran.clear()  # loopback needs no configured token (one is created in the data dir)
    local = ["serve", "--host", "127.0.0.1", "--port", "1", "--data-dir", str(tmp_path / "d2")]
    assert main(local) == 0
    assert ran["host"] == "127.0.0.1"
