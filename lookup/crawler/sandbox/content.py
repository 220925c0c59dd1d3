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
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from itertools import islice
from types import ModuleType

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


def _import(name: str) -> ModuleType:
    with _lock:
        return importlib.import_module(name)


def _importable(names: Iterable[str]) -> Iterator[tuple[str, ModuleType]]:
    """``(name, module)`` for each of ``names`` that imports here, in order."""
    for name in names:
        try:
            module = _import(name)
        except Exception:  # noqa: BLE001 - a module missing on this build is skipped
            continue
        yield name, module


def _documented(
    module_names: Iterable[str], keep: Callable[[object], bool], min_words: int
) -> Iterator[tuple[str, str, str]]:
    """``(module, member, docstring)`` for the public members defined in those modules
    that ``keep`` accepts, whose docstring has ``min_words`` words and is not a repeat."""
    seen: set[str] = set()
    for mod_name, module in _importable(module_names):
        for name, member in sorted(vars(module).items()):
            if name.startswith("_") or not keep(member):
                continue
            if getattr(member, "__module__", None) != module.__name__:
                continue  # re-exported from elsewhere
            doc = inspect.getdoc(member) or ""
            if len(doc.split()) < min_words or doc in seen:
                continue
            seen.add(doc)
            yield mod_name, name, doc


#: The interpreter's install path, in pydoc's output: it is not content.
_SOURCE_PATH = re.compile(r"/\S*?/lib/python3\.\d+/\S*?\.py")


def doc_modules(count: int) -> list[str]:
    """The first ``count`` documentation modules that import here, each rendered now
    (see the module docstring for why not on first request)."""
    names = [name for name, _ in islice(_importable(DOC_MODULES), count)]
    for name in names:
        _pydoc_html(name)
    return names


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
    return _SOURCE_PATH.sub("(source)", body)  # the heading names the install path


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
    out: list[Story] = []
    for name, module in _importable(NEWS_MODULES):
        if len(out) >= count:
            break
        doc = module.__doc__ or ""
        if len(doc.split()) < 150:
            continue
        paras = _paragraphs(doc)
        slug = name.replace(".", "-").lower()
        out.append(Story(slug, f"The {name} module, explained", paras))
    return tuple(out)


@lru_cache(maxsize=8)
def blog_texts(count: int) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """``count`` blog posts ``(slug, title, paragraphs)`` from class docstrings (≥ 60 words)."""
    return tuple(
        (
            f"{mod_name}-{cls_name}".replace(".", "-").lower(),
            f"Notes on {mod_name}.{cls_name}",
            _paragraphs(doc),
        )
        for mod_name, cls_name, doc in islice(_documented(BLOG_MODULES, inspect.isclass, 60), count)
    )


@lru_cache(maxsize=8)
def wiki_pages(count: int) -> tuple[tuple[str, str], ...]:
    """``count`` wiki pages ``(title, escaped preformatted text)`` from ``pydoc``'s text output."""
    out = []
    for name, module in islice(_importable(WIKI_MODULES), count):
        with _lock:
            # pydoc.plaintext is the module's plain-text documenter; typeshed does not declare it
            text = pydoc.plaintext.document(module, name)  # type: ignore[attr-defined]
        out.append((name, html.escape(_SOURCE_PATH.sub("(source)", text))))
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
    functions = _documented(PRODUCT_MODULES, _is_function, 12)
    return tuple(
        Product(
            sku,
            f"{mod_name}.{fn_name}",
            doc,
            COLOURS[sku % len(COLOURS)],
            SIZES[sku % len(SIZES)],
            5 + (sku * 37) % 95,
        )
        for sku, (mod_name, fn_name, doc) in enumerate(islice(functions, count), start=1)
    )


def _is_function(member: object) -> bool:
    return callable(member) and not inspect.isclass(member)
