"""Every notebook runs top to bottom on the project's own Python, and is committed clean."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
#: Notebooks run two at a time: most of a notebook's time is spent waiting on the servers,
#: crawls and drills it starts, so a second one fills the gaps (the suite's time budget).
PARALLEL = 2
#: The slowest notebooks (about 30-55 s each on this machine) start first, so the short
#: ones fill in at the end.
SLOW_FIRST = ("02_url_shortener", "08_kv_and_cache", "05_web_crawler", "07_ids_and_rate_limits")
CELL_TIMEOUT_S = 300

# Executes one notebook in a fresh process (its own kernel manager and event loop), so
# two notebooks can run at once without sharing any client state with each other.
_RUNNER = """
import sys, nbformat
from nbclient import NotebookClient
src, out, cwd, timeout = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
nb = nbformat.read(src, as_version=4)
client = NotebookClient(nb, kernel_name="python3", timeout=timeout,
                        resources={"metadata": {"path": cwd}})
try:
    client.execute()
finally:
    nbformat.write(nb, out)
"""


def _execute(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Run ``nb`` in a fresh ``python3`` kernel with the notebooks folder as its cwd."""
    client = NotebookClient(
        nb,
        kernel_name="python3",
        timeout=CELL_TIMEOUT_S,
        resources={"metadata": {"path": str(NOTEBOOK_DIR)}},
    )
    client.execute()
    return nb


def _execute_file(path: Path) -> tuple[nbformat.NotebookNode, str]:
    """Run the notebook at ``path`` in a child process; the executed notebook (as far as it
    got) and the runner's stderr (a cell's error, a timeout)."""
    with tempfile.TemporaryDirectory(prefix="nbrun-") as tmp:
        out = Path(tmp) / path.name
        run = subprocess.run(
            [
                sys.executable,
                "-c",
                _RUNNER,
                str(path),
                str(out),
                str(NOTEBOOK_DIR),
                str(CELL_TIMEOUT_S),
            ],
            capture_output=True,
            text=True,
        )
        if not out.exists():
            raise RuntimeError(f"{path.name} did not run: {run.stderr[-3000:]}")
        return nbformat.read(out, as_version=4), run.stderr


_runs: dict[Path, Future[tuple[nbformat.NotebookNode, str]]] = {}
_runs_lock = threading.Lock()


def _order(path: Path) -> int:
    return SLOW_FIRST.index(path.stem) if path.stem in SLOW_FIRST else len(SLOW_FIRST)


def _executed(path: Path, selected: list[Path]) -> tuple[nbformat.NotebookNode, str]:
    """The executed notebook: the first call starts every selected notebook, slowest
    first, ``PARALLEL`` at a time; each test then waits for its own.

    Under ``pytest -n`` every worker collects every test, but the scheduler hands each
    notebook to one worker: there a test runs its own notebook only (running the whole
    selection on each worker that got one ran every notebook several times over)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return _execute_file(path)
    with _runs_lock:
        if not _runs:
            pool = ThreadPoolExecutor(max_workers=PARALLEL, thread_name_prefix="notebook")
            for nb_path in sorted(set(selected) | {path}, key=_order):
                _runs[nb_path] = pool.submit(_execute_file, nb_path)
            pool.shutdown(wait=False)
    return _runs[path].result()


@pytest.fixture(scope="module")
def selected_notebooks(request: pytest.FixtureRequest) -> list[Path]:
    """The notebooks whose run test this session collected (``-k`` runs only those)."""
    return [
        item.callspec.params["path"]
        for item in request.session.items
        if item.name.startswith("test_notebook_runs_top_to_bottom[")
    ]


def test_there_are_notebooks() -> None:
    assert NOTEBOOKS, f"no notebooks in {NOTEBOOK_DIR}"


@pytest.mark.notebook
def test_kernel_is_this_python() -> None:
    """The ``python3`` kernel is the interpreter running the tests (the project venv)."""
    probe = new_notebook(
        cells=[new_code_cell("import sys, lookup\nprint(sys.prefix)\nprint(lookup.__file__)")]
    )
    out = _execute(probe).cells[0].outputs
    prefix, package = "".join(o.get("text", "") for o in out).split()
    assert Path(prefix).resolve() == Path(sys.prefix).resolve()
    assert Path(package).resolve().parent == NOTEBOOK_DIR.parent / "lookup"


@pytest.mark.notebook
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs_top_to_bottom(path: Path, selected_notebooks: list[Path]) -> None:
    nb, stderr = _executed(path, selected_notebooks)
    errors = [
        f"{o.get('ename')}: {o.get('evalue')}"
        for cell in nb.cells
        if cell.cell_type == "code"
        for o in cell.outputs
        if o.output_type == "error"
    ]
    assert not errors, stderr[-3000:]
    assert all(cell.execution_count is not None for cell in nb.cells if cell.cell_type == "code")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_is_committed_with_outputs_cleared(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    dirty = [
        i
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code" and (cell.outputs or cell.execution_count is not None)
    ]
    assert not dirty, f"{path.name}: cells {dirty} have outputs; clear them before committing"


@pytest.mark.notebook
def test_notebook_04_runs_its_postgresql_drill(selected_notebooks: list[Path]) -> None:
    """Notebook 04's PostgreSQL + PostGIS section ran where PostgreSQL is installed (not its
    "skipped" line): the three engines agreed and the kill -9 drill lost no acknowledged
    write. Skips without PostgreSQL, and fails then under ``LOOKUP_REQUIRE_SERVERS``."""
    from tests.conftest import _need_postgres

    _need_postgres()
    nb, stderr = _executed(NOTEBOOK_DIR / "04_proximity_search.ipynb", selected_notebooks)
    printed = "".join(
        o.get("text", "")
        for cell in nb.cells
        if cell.cell_type == "code"
        for o in cell.outputs
        if o.output_type == "stream"
    )
    assert "skipped: this section needs PostgreSQL" not in printed, "PostGIS is missing"
    assert "served from PostgreSQL + PostGIS at postgresql://" in printed, stderr[-3000:]
    assert "of them missing after restart:  0" in printed, stderr[-3000:]
