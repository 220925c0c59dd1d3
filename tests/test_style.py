"""Lint and formatting are part of the suite: ``ruff check`` finds nothing and ``ruff format``
would change nothing, over every Python folder of the project."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ["lookup", "app", "tests", "benchmarks", "scripts"]


@pytest.mark.parametrize("command", [["check"], ["format", "--check"]], ids=["check", "format"])
def test_ruff_finds_nothing_to_change(command: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ruff", *command, *FOLDERS],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, (
        f"ruff {' '.join(command)} asks for changes (run `.venv/bin/ruff {command[0]} "
        f"{' '.join(FOLDERS)}`{' --fix' if command == ['check'] else ''}):\n"
        + done.stdout[-4000:]
        + done.stderr[-1000:]
    )
