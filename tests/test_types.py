"""The type checker over the whole of ``lookup/`` (the kit and every system), at zero errors:
``[tool.mypy]`` in pyproject.toml names what it covers and how strictly."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_type_checker_covers_the_whole_package() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    assert config["files"] == ["lookup"]
    assert config.get("check_untyped_defs") is True


@pytest.mark.slow
def test_mypy_finds_no_error_in_the_checked_packages() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
