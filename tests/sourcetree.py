"""Parsing the project's own source files in tests, safely beside other threads.

On CPython 3.11.7 two threads converting ASTs at once can fail either one with
``SystemError: AST constructor recursion depth mismatch`` (CPython gh-106905: the depth
counter is shared by the interpreter's threads). A test process may have such a thread
running (a sandbox serving pydoc pages, a Streamlit script runner), so the layer tests
parse through :func:`parse_file`, which parses again when it meets that error — parsing
is pure, so the second answer is the same one.
"""

from __future__ import annotations

import ast
from pathlib import Path


def parse_file(path: Path, *, attempts: int = 5) -> ast.Module:
    """``ast.parse`` of the file at ``path`` (UTF-8), retried on CPython gh-106905."""
    source = path.read_text(encoding="utf-8")
    for attempt in range(attempts):
        try:
            return ast.parse(source, filename=str(path))
        except SystemError as exc:
            if "recursion depth mismatch" not in str(exc) or attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")
