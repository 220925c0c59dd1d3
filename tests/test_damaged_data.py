"""Damaged data files against the real server (issue 24, item 11).

A small data directory is built once (places, typeahead snapshots, a search index); each
test copies it, damages one file the way a disk or an operator does — flipped bytes, a
``CURRENT`` naming a version that is gone, a read-only directory — and starts the real
``lookup serve`` on it. What must hold: the server starts; the damaged system (or market)
answers ``503`` with a JSON error naming the file and what to do (never "not built", never a
500 or wrong results); ``/healthz`` shows it as damaged with the file; the server log says so
in one line; and every intact system still answers 200.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.conftest import ROOT, free_port, lookup_serve, wait_http

ADMIN = "damage-admin-token"
PLACES = "/v1/search?lat=12.9716&lng=77.5946&radius=20000"
SEARCH = "/search?q=function"


def _flip(path: Path, offset: int, n: int) -> None:
    """Invert ``n`` bytes of a file at ``offset`` (negative: from the end)."""
    size = path.stat().st_size
    at = offset if offset >= 0 else size + offset
    with path.open("r+b") as f:
        f.seek(at)
        data = f.read(n)
        f.seek(at)
        f.write(bytes(b ^ 0xFF for b in data))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory with every data set built small (read-only for tests: copy it)."""
    from lookup.datasets import places as places_dataset
    from lookup.search import build_index
    from lookup.typeahead import querylog
    from lookup.typeahead.pipeline import run
    from tests.search.corpus import CrawlWriter, stdlib_pages

    data = tmp_path_factory.mktemp("intact") / "data"
    places_dataset.build(data, count=200, seed=11, progress=False)
    log = querylog.write(querylog.generate(3000, 7), querylog.log_path(data))
    assert run(data, log).ok
    crawl = data / "crawls" / "c1"
    CrawlWriter(crawl).fetch(stdlib_pages(20))
    build_index(crawl, data / "search", shards=1)
    return data


@pytest.fixture
def data(built: Path, tmp_path: Path) -> Path:
    """A private copy of the built data directory, to damage."""
    target = tmp_path / "data"
    shutil.copytree(built, target)
    return target


@dataclass
class Server:
    url: str
    proc: subprocess.Popen[bytes]
    log: Path

    def get(self, path: str) -> httpx.Response:
        return httpx.get(f"{self.url}{path}", timeout=30)

    def health(self, system: str) -> dict:
        return self.get("/healthz").json()["systems"][system]

    def log_text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOKUP_")}
    env["LOOKUP_ADMIN_TOKEN"] = ADMIN
    return env


@pytest.fixture
def serve(tmp_path: Path) -> Iterator:
    """``serve(data_dir)`` starts the real ``lookup serve`` on it; stopped after the test."""
    procs: list[subprocess.Popen[bytes]] = []

    def start(data_dir: Path) -> Server:
        port = free_port()
        log = tmp_path / f"serve-{port}.log"
        proc = lookup_serve(data_dir, port, env=_env(), stderr=log.open("wb"))
        procs.append(proc)
        url = f"http://127.0.0.1:{port}"
        wait_http(f"{url}/healthz", proc)
        return Server(url, proc, log)

    yield start
    for proc in procs:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _damaged(resp: httpx.Response, file: Path | str, code: str = "DAMAGED") -> dict:
    """A 503 JSON error with ``code``, naming ``file`` and a remedy."""
    assert resp.status_code == 503, resp.text
    body = resp.json()
    assert body["error"] == code, body
    assert body["file"] == str(file), body
    assert str(file) in body["message"], body
    assert body["remedy"], body
    return body


def _intact(
    server: Server,
    *,
    places: bool = True,
    typeahead: bool = True,
    search: bool = True,
    links: bool = True,
) -> None:
    """The systems not damaged answer 200 (201 for a new link)."""
    if places:
        assert server.get(PLACES).status_code == 200
    if typeahead:
        assert server.get("/v1/suggest?q=a&market=en-IN").status_code == 200
    if search:
        assert server.get(SEARCH).status_code == 200
    if links:
        made = httpx.post(f"{server.url}/v1/links", json={"longUrl": "https://example.com/x"})
        assert made.status_code == 201, made.text


def _logged_once(server: Server, file: Path | str, code: str = "DAMAGED") -> None:
    lines = [ln for ln in server.log_text().splitlines() if str(file) in ln and code in ln]
    assert len(lines) == 1, server.log_text()
    assert "What to do:" in lines[0]
    assert "Traceback" not in server.log_text()


# -- typeahead -------------------------------------------------------------------------


def _snapshot(data: Path, market: str) -> Path:
    root = data / "typeahead" / "snapshots" / market
    return root / f"{(root / 'CURRENT').read_text().strip()}.trie"


def test_a_corrupt_snapshot_is_damaged_not_unbuilt_and_the_other_market_serves(
    data: Path, serve
) -> None:
    trie = _snapshot(data, "en-IN")
    _flip(trie, -200, 8)
    server = serve(data)
    for _ in range(3):
        body = _damaged(server.get("/v1/suggest?q=a&market=en-IN"), trie)
        assert "lookup typeahead build" in body["remedy"]
    assert server.get("/v1/suggest?q=a&market=hi-IN").status_code == 200
    health = server.health("typeahead")
    assert health["status"] == "DAMAGED" and health["file"] == str(trie), health
    assert "hi-IN" in health["markets"]
    _intact(server, typeahead=False)
    _logged_once(server, trie)


def test_a_missing_snapshot_version_does_not_stop_the_api(data: Path, serve) -> None:
    market_dir = data / "typeahead" / "snapshots" / "en-IN"
    intact = (market_dir / "CURRENT").read_text().strip()
    (market_dir / "CURRENT").write_text("20990101T000000Z-abcdef\n")
    missing = market_dir / "20990101T000000Z-abcdef.trie"
    server = serve(data)  # the old code stopped with a traceback naming no file
    body = _damaged(server.get("/v1/suggest?q=a&market=en-IN"), missing)
    assert f"intact stored version {intact}" in body["remedy"], body
    assert server.health("typeahead")["file"] == str(missing)
    _intact(server, typeahead=False)
    _logged_once(server, missing)
    # the remedy works: activate the intact version, and en-IN serves again
    done = httpx.post(
        f"{server.url}/v1/typeahead/snapshots/en-IN/activate",
        json={"version": intact},
        headers={"Authorization": f"Bearer {ADMIN}"},
    )
    assert done.status_code == 200, done.text
    _intact(server)
    assert server.health("typeahead")["status"] == "ok"


# -- places ----------------------------------------------------------------------------


def _places_db(data: Path) -> Path:
    return data / "places" / "places.sqlite"


def test_a_corrupt_places_database_is_damaged_never_rebuilt(data: Path, serve) -> None:
    db = _places_db(data)
    good = db.read_bytes()
    _flip(db, 0, 16)  # the header: SQLite no longer knows it for a database
    damaged = db.read_bytes()
    server = serve(data)
    body = _damaged(server.get(PLACES), db)
    assert "backup" in body["remedy"] and "discards" in body["remedy"], body
    assert body["error"] != "NOT_BUILT"
    _damaged(server.get("/v1/places/index"), db)
    health = server.health("places")
    assert health["status"] == "DAMAGED" and health["file"] == str(db), health
    _intact(server, places=False)
    _logged_once(server, db)
    # `make run`'s "build what is missing" leaves it alone (it may hold places added by API)
    out = subprocess.run(
        [sys.executable, "-m", "lookup.cli", "datasets", "build", "places", "--missing",
         "--data-dir", str(data)],
        cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "not replaced" in out.stderr, out.stderr
    assert db.read_bytes() == damaged
    # restored from a backup: the server sees the file change and serves it again
    db.write_bytes(good)
    assert server.get(PLACES).status_code == 200
    assert server.health("places")["status"] == "ok"


def test_a_damaged_places_page_does_not_stop_the_api(data: Path, serve) -> None:
    db = _places_db(data)
    _flip(db, db.stat().st_size // 2, 40_000)  # pages in the middle of the table
    server = serve(data)  # the old code stopped with a traceback naming no file
    _damaged(server.get(PLACES), db)
    assert server.health("places")["status"] == "DAMAGED"
    _intact(server, places=False)
    _logged_once(server, db)


# -- search ----------------------------------------------------------------------------


def test_a_corrupt_search_manifest_is_damaged_and_a_rebuild_mends_it(data: Path, serve) -> None:
    manifest = data / "search" / "manifest-000001.json"
    _flip(manifest, 0, 4)
    server = serve(data)
    body = _damaged(server.get(SEARCH), manifest)
    assert "lookup index" in body["remedy"] and "--rebuild" in body["remedy"], body
    assert server.health("search")["status"] == "DAMAGED"
    _intact(server, search=False)
    _logged_once(server, manifest)
    # the remedy works on the running server
    out = subprocess.run(
        [sys.executable, "-m", "lookup.cli", "index", str(data / "crawls" / "c1"), "--rebuild",
         "--out", str(data / "search")],
        cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    wait_http(f"{server.url}{SEARCH}", server.proc, timeout=60)
    assert server.health("search")["status"] == "ok"


def test_a_corrupt_postings_file_is_found_on_load(data: Path, serve) -> None:
    postings = data / "search" / "shard-00" / "seg-000001" / "postings.bin"
    _flip(postings, 100, 2)
    server = serve(data)
    health = server.health("search")
    assert health["status"] == "DAMAGED" and health["file"] == str(postings), health
    for query in ("function", "return value", "the"):
        _damaged(server.get(f"/search?q={query}"), postings)  # never 500, never wrong results
    _intact(server, search=False)
    _logged_once(server, postings)


# -- read-only data directory ------------------------------------------------------------


def _without_root_override() -> list[str]:
    """A command prefix under which permissions bind (root ignores them unless it drops the
    capability); skips the test where that cannot be done."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: a read-only directory would not bind")
    caps = "-dac_override,-dac_read_search"
    return [setpriv, f"--inh-caps={caps}", f"--bounding-set={caps}"]


def _read_only(path: Path) -> None:
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            p = Path(root) / name
            p.chmod(p.stat().st_mode & ~0o222)
    path.chmod(path.stat().st_mode & ~0o222)


def test_a_read_only_data_directory_is_refused_naming_it(data: Path) -> None:
    prefix = _without_root_override()
    _read_only(data)
    try:
        out = subprocess.run(
            [*prefix, sys.executable, "-m", "lookup.cli", "serve", "--port", str(free_port()),
             "--data-dir", str(data)],
            cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    finally:
        for root, dirs, _ in os.walk(data):
            for name in dirs:
                (Path(root) / name).chmod(0o755)
        data.chmod(0o755)
    assert out.returncode == 2, out.stderr
    assert f"the data directory {data} is not writable" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr and "unable to open database" not in out.stderr


def test_a_read_only_places_directory_leaves_the_rest_serving(data: Path, tmp_path: Path) -> None:
    prefix = _without_root_override()
    places_dir = data / "places"
    _read_only(places_dir)
    port = free_port()
    log = tmp_path / "serve.log"
    proc = subprocess.Popen(
        [*prefix, sys.executable, "-m", "lookup.cli", "serve", "--port", str(port),
         "--data-dir", str(data)],
        cwd=ROOT, env=_env(), stderr=log.open("wb"),
    )  # fmt: skip
    try:
        server = Server(f"http://127.0.0.1:{port}", proc, log)
        wait_http(f"{server.url}/healthz", proc)
        body = _damaged(server.get(PLACES), places_dir, code="NOT_WRITABLE")
        assert "writable" in body["remedy"], body
        assert server.health("places")["status"] == "NOT_WRITABLE"
        _intact(server, places=False)
        _logged_once(server, places_dir, code="NOT_WRITABLE")
    finally:
        proc.terminate()
        proc.wait(timeout=15)
        places_dir.chmod(0o755)
        for p in places_dir.iterdir():
            p.chmod(0o644)


# -- any system that cannot mount or start -----------------------------------------------


def test_a_system_that_cannot_mount_or_start_is_served_as_damaged(tmp_path: Path) -> None:
    """The edge's guard (``kit/failsafe.py``), for a failure no system foresaw."""
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from lookup.kit.asgi import build_app
    from tests.conftest import serve_in_thread

    def healthy(m) -> None:  # type: ignore[no-untyped-def]
        m.fast_routes.append(Route("/healthy", lambda _: JSONResponse({"ok": True})))
        m.health["healthy"] = lambda: {"status": "ok"}

    def unwritable(m) -> None:  # type: ignore[no-untyped-def]
        raise PermissionError(13, "Permission denied", str(tmp_path / "data" / "locked"))

    def boom() -> None:
        raise RuntimeError("the start-up hook failed")

    def late(m) -> None:  # type: ignore[no-untyped-def]
        m.api.add_api_route("/late/thing", lambda: {"ok": True})
        m.on_startup.append(boom)
        m.health["late"] = lambda: {"status": "ok"}

    (tmp_path / "data" / "locked").mkdir(parents=True)
    app = build_app(
        tmp_path / "data",
        subsystems=[unwritable, late, healthy],
        systems={"unwritable": ("locked", ("/locked",))},
    )
    with serve_in_thread(app) as url:
        assert httpx.get(f"{url}/healthy").status_code == 200
        _damaged(httpx.get(f"{url}/locked/x"), tmp_path / "data" / "locked", "NOT_WRITABLE")
        resp = httpx.get(f"{url}/late/thing")
        assert resp.status_code == 503 and resp.json()["error"] == "START_FAILED", resp.text
        health = httpx.get(f"{url}/healthz").json()
        assert health["damaged"] == ["late", "locked"], health
        assert health["systems"]["healthy"]["status"] == "ok"
        assert httpx.get(f"{url}/nowhere").status_code == 404
