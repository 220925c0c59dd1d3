"""The sandbox's documentation pages are rendered when the sandbox is built, not while it serves.

``pydoc`` calls ``inspect.signature``, which ``ast.parse``-s builtins' text signatures; on
CPython 3.11.7 two threads converting ASTs at once can fail either one with
``SystemError: AST constructor recursion depth mismatch`` (CPython gh-106905). The sandbox
serves from a thread beside Streamlit's script runner (dashboard tests) or an IPython
kernel (notebooks), so serving a page must convert no AST at all.
"""

from __future__ import annotations

import ast
from typing import Any

import pytest

from lookup.crawler.sandbox import Sandbox, SandboxConfig, content
from lookup.crawler.sandbox.web import Request


def test_serving_documentation_pages_parses_no_python(monkeypatch: pytest.MonkeyPatch) -> None:
    for cached in ("module_doc_html", "_pydoc_html"):  # start cold, whatever ran before
        if hasattr(content, cached):
            getattr(content, cached).cache_clear()
    web = Sandbox(SandboxConfig.small())  # built here: this thread may parse
    parsed: list[str] = []
    real_parse = ast.parse

    def recording_parse(source: Any, *args: Any, **kwargs: Any) -> ast.AST:
        parsed.append(str(source)[:60])
        return real_parse(source, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", recording_parse)
    w = web.world
    modules = web.sites.handlers["docs"].modules
    paths = [("docs", f"/lib/{m}.html", m) for m in modules]
    paths += [("docs", f"/print/lib/{m}.html", m) for m in modules]
    paths += [("www", f"/lib/{m}.html", m) for m in modules]
    paths += [("mirror", f"/python/3/lib/{m}.html", m) for m in modules]
    for key, path, module in paths:
        req = Request(w.names[key], w.addresses[key], "GET", path, "", {})
        resp = web.sites.handlers[key].handle(req)
        body = resp.body.decode() if isinstance(resp.body, bytes) else resp.body
        assert resp.status == 200 and module in body, (key, path)
    assert parsed == []
