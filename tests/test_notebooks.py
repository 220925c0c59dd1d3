"""Every notebook runs top to bottom on the project's own Python, and is committed clean."""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))


def _execute(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Run ``nb`` in a fresh ``python3`` kernel with the notebooks folder as its cwd."""
    client = NotebookClient(
        nb,
        kernel_name="python3",
        timeout=300,
        resources={"metadata": {"path": str(NOTEBOOK_DIR)}},
    )
    client.execute()
    return nb


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
def test_notebook_runs_top_to_bottom(path: Path) -> None:
    nb = _execute(nbformat.read(path, as_version=4))
    errors = [
        f"{o.get('ename')}: {o.get('evalue')}"
        for cell in nb.cells
        if cell.cell_type == "code"
        for o in cell.outputs
        if o.output_type == "error"
    ]
    assert not errors
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
