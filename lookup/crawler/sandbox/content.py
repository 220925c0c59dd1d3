"""Real text for the sandbox web: the Python standard library's own documentation.

Everything is rendered locally from the running interpreter — ``pydoc.HTMLDoc`` for
the documentation host, module docstrings for news stories, class docstrings for
blog posts, ``pydoc``'s plain-text rendering for the wiki, function docstrings for
shop products — so every page carries real prose and real cross-links, and nothing
is downloaded. Module lists are fixed and ordered (cheap-to-render modules first), so
a sandbox of a given size is the same every time on the same Python.

The documentation host's pages are rendered when the sandbox is built (by
:func:`doc_modules`, in the thread that builds it), never while it serves: ``pydoc``
calls ``inspect.signature``, which ``ast.parse``-s the text signatures of builtins, and
on CPython 3.11 before 3.11.8 (3.12 before 3.12.2) the AST converter keeps its recursion
depth in one process-wide counter (CPython gh-106905). A sandbox served from a thread
beside another thread that parses or compiles ASTs — Streamlit's script runner in the
dashboard tests, an IPython kernel compiling a notebook cell — would otherwise fail one
of the two with ``SystemError: AST constructor recursion depth mismatch``.
"""

from __future__ import annotations

import html
import importlib
import inspect
import pydoc
import re
import threading
from dataclasses import dataclass
from functools import lru_cache

__all__ = [
    "DOC_MODULES",
    "NEWS_MODULES",
    "Product",
    "Story",
    "blog_texts",
    "doc_modules",
    "module_doc_html",
    "products",
    "stories",
    "wiki_pages",
]

#: Modules documented on the docs host, cheapest to render first.
DOC_MODULES = (
    "bisect heapq colorsys keyword glob fnmatch shlex html json json.decoder json.encoder "
    "string textwrap copy copyreg base64 binascii cmath math stat struct secrets hmac "
    "getopt gettext posixpath linecache quopri reprlib stringprep token tokenize "
    "warnings graphlib fractions functools contextvars zlib bz2 gzip hashlib "
    "mimetypes operator pickle platform random locale time traceback tempfile "
    "filecmp queue selectors shutil subprocess datetime abc calendar codecs "
    "csv dataclasses difflib dis enum inspect io ipaddress itertools logging "
    "numbers pathlib pprint types typing weakref zipfile tarfile uuid"
).split()

#: Modules whose (long, prose) docstrings are the news stories.
NEWS_MODULES = (
    "re configparser socketserver fileinput sys wave shelve statistics urllib.request "
    "cmd http.cookies argparse socket timeit http.client unittest plistlib sched "
    "xml.etree.ElementTree urllib.parse doctest ssl marshal tabnanny zipimport "
    "gc codeop imaplib xml.sax ftplib"
).split()

#: Modules whose classes' docstrings are the blog posts.
BLOG_MODULES = "argparse configparser logging.handlers ssl smtplib email.message mailbox".split()
#: Modules rendered as plain text for the wiki.
WIKI_MODULES = "sched trace tracemalloc zipapp pkgutil py_compile compileall wave symtable".split()
#: Modules whose public functions are the shop's products.
PRODUCT_MODULES = "itertools statistics os.path shutil textwrap".split()

_lock = threading.Lock()  # pydoc and lazy imports are not safe to race


def _import(name: str):  # noqa: ANN202 - a module object
    with _lock:
        return importlib.import_module(name)


def doc_modules(count: int) -> list[str]:
    """The first ``count`` documentation modules that import here, each rendered now
    (see the module docstring for why not on first request)."""
    out = []
    for name in DOC_MODULES:
        if len(out) >= count:
            break
        try:
            _pydoc_html(name)
        except Exception:  # noqa: BLE001 - a module missing on this build is skipped
            continue
        out.append(name)
    return out


@lru_cache(maxsize=512)
def _pydoc_html(name: str) -> str:
    module = _import(name)
    with _lock:
        return pydoc.HTMLDoc().document(module, name)


_HREF = re.compile(r'<a href="([^"]*)">(.*?)</a>', re.S)


@lru_cache(maxsize=512)
def module_doc_html(name: str, known: frozenset[str], prefix: str) -> str:
    """``pydoc``'s HTML for module ``name`` with its links rewritten into the sandbox.

    Links to modules in ``known`` become ``{prefix}{module}.html``; same-page anchors
    stay; every other link (source files, docs.python.org, modules not served) is
    unwrapped to its text, so the crawler never leaves the sandbox by accident.
    """
    body = _pydoc_html(name)

    def rewrite(m: re.Match[str]) -> str:
        href, text = m.group(1), m.group(2)
        if href.startswith("#"):
            return m.group(0)
        target, _, anchor = href.partition("#")
        if target.endswith(".html") and "/" not in target and ":" not in target:
            mod = target[: -len(".html")]
            if mod in known:
                return f'<a href="{prefix}{mod}.html{"#" + anchor if anchor else ""}">{text}</a>'
        return text

    body = _HREF.sub(rewrite, body)
    # The heading names the interpreter's install path; it is not content.
    return re.sub(r"/\S*?/lib/python3\.\d+/\S*?\.py", "(source)", body)


@dataclass(frozen=True)
class Story:
    """A news story: a module's docstring."""

    slug: str
    title: str
    paragraphs: tuple[str, ...]


def _paragraphs(doc: str) -> tuple[str, ...]:
    paras = [" ".join(p.split()) for p in re.split(r"\n\s*\n", inspect.cleandoc(doc))]
    return tuple(p for p in paras if p)


@lru_cache(maxsize=8)
def stories(count: int) -> tuple[Story, ...]:
    """``count`` stories with at least 150 words each."""
    out = []
    for name in NEWS_MODULES:
        if len(out) >= count:
            break
        try:
            doc = _import(name).__doc__ or ""
        except Exception:  # noqa: BLE001
            continue
        if len(doc.split()) < 150:
            continue
        paras = _paragraphs(doc)
        slug = name.replace(".", "-").lower()
        out.append(Story(slug, f"The {name} module, explained", paras))
    return tuple(out)


@lru_cache(maxsize=8)
def blog_texts(count: int) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """``count`` blog posts ``(slug, title, paragraphs)`` from class docstrings (≥ 60 words)."""
    out: list[tuple[str, str, tuple[str, ...]]] = []
    seen: set[str] = set()
    for mod_name in BLOG_MODULES:
        try:
            module = _import(mod_name)
        except Exception:  # noqa: BLE001
            continue
        for cls_name, cls in sorted(vars(module).items()):
            if len(out) >= count:
                return tuple(out)
            if not inspect.isclass(cls) or cls_name.startswith("_"):
                continue
            if getattr(cls, "__module__", None) != module.__name__:
                continue
            doc = inspect.getdoc(cls) or ""
            if len(doc.split()) < 60 or doc in seen:
                continue
            seen.add(doc)
            slug = f"{mod_name}-{cls_name}".replace(".", "-").lower()
            out.append((slug, f"Notes on {mod_name}.{cls_name}", _paragraphs(doc)))
    return tuple(out)


@lru_cache(maxsize=8)
def wiki_pages(count: int) -> tuple[tuple[str, str], ...]:
    """``count`` wiki pages ``(title, escaped preformatted text)`` from ``pydoc``'s text output."""
    out = []
    for name in WIKI_MODULES:
        if len(out) >= count:
            break
        try:
            module = _import(name)
        except Exception:  # noqa: BLE001
            continue
        with _lock:
            text = pydoc.plaintext.document(module, name)
        text = re.sub(r"/\S*?/lib/python3\.\d+/\S*?\.py", "(source)", text)
        out.append((name, html.escape(text)))
    return tuple(out)


@dataclass(frozen=True)
class Product:
    """A shop product: a public function, with its signature and docstring."""

    sku: int
    name: str
    description: str
    colour: str
    size: str
    price: int


COLOURS = ("red", "green", "blue", "black", "white")
SIZES = ("s", "m", "l", "xl")


@lru_cache(maxsize=8)
def products(count: int) -> tuple[Product, ...]:
    """``count`` products with distinct, non-trivial descriptions."""
    out: list[Product] = []
    seen: set[str] = set()
    for mod_name in PRODUCT_MODULES:
        try:
            module = _import(mod_name)
        except Exception:  # noqa: BLE001
            continue
        for fn_name, fn in sorted(vars(module).items()):
            if len(out) >= count:
                return tuple(out)
            if fn_name.startswith("_") or not callable(fn) or inspect.isclass(fn):
                continue
            if getattr(fn, "__module__", None) != module.__name__:
                continue  # re-exported from elsewhere
            doc = inspect.getdoc(fn) or ""
            if len(doc.split()) < 12 or doc in seen:
                continue
            seen.add(doc)
            sku = len(out) + 1
            out.append(
                Product(
                    sku,
                    f"{mod_name}.{fn_name}",
                    doc,
                    COLOURS[sku % len(COLOURS)],
                    SIZES[sku % len(SIZES)],
                    5 + (sku * 37) % 95,
                )
            )
    return tuple(out)
