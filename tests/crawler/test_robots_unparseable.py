"""A robots.txt that answers 200 with something that is not a rules file — a login page
served for every path — stops the crawl of that host, and the report counts it (seed 003:
an unparseable rules file is never permission; issue 28 item 16)."""

from __future__ import annotations

import sqlite3
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from lookup.crawler import CrawlConfig, crawl

LOGIN = b"<!DOCTYPE html><html><head><title>Sign in</title></head><body><form></form></body></html>"
HOME = b'<!DOCTYPE html><html><head><title>Home</title></head><body><a href="/a.html">a</a>'


class _Site(BaseHTTPRequestHandler):
    paths: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 (the http.server hook's name)
        type(self).paths.append(self.path)
        body = LOGIN if self.path == "/robots.txt" else HOME
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_a_login_page_for_robots_txt_crawls_nothing_and_is_counted(tmp_path: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    _Site.paths = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    port = server.server_address[1]
    seed = f"http://login.test:{port}/"
    try:
        report = crawl(
            CrawlConfig(
                tmp_path / "out", seeds=[seed], hosts={"login.test": "127.0.0.1"},
                strict_hosts=True, min_delay=0.01, delay_factor=1.0, timeout=2.0,
                connect_timeout=1.0, robots_retry=600.0, max_seconds=4, concurrency=4,
            )
        )  # fmt: skip
    finally:
        server.shutdown()
        server.server_close()
    assert _Site.paths == ["/robots.txt"]  # asked for the rules once, then nothing
    assert report.robots_unparseable == 1
    assert "not a rules file 1" in "\n".join(report.lines())
    db = sqlite3.connect(tmp_path / "out" / "crawl.sqlite")
    state, reason = db.execute(
        "SELECT robots_state, robots_reason FROM hosts WHERE host = ?", (f"login.test:{port}",)
    ).fetchone()
    db.close()
    assert state == "disallow-all" and reason.startswith("unparseable: an HTML page")
