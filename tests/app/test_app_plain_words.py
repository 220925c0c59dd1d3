"""The dashboard speaks to stakeholders in plain words (issue 24, item 13): every page is
drawn through ``streamlit.testing`` and no visible text —
markdown, captions, titles, labels, options, help tooltips, table headers and cells, chart
titles — says "seed" (the design texts are "the design notes", as Home calls them); the
internal terms that stay ("seam", "SIGSTOP", "R + W > N", "WARC", "BM25") carry a help
tooltip where they appear."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from dashboard_testing import ok, open_page
from navigation import PAGES
from streamlit.testing.v1 import AppTest

#: Pages left out of the check (none: Study names its sources "the design notes" too).
SKIPPED: set[str] = set()
SEED = re.compile(r"\bseeds?\b|\bseed's\b", re.IGNORECASE)
#: Proto fields that are not shown: widget ids, keys, form ids, icons' names.
HIDDEN_FIELDS = {"id", "form_id", "key", "icon", "page_script_hash", "type"}


def _strings(message: Any) -> Iterator[str]:
    """Every string field of a protobuf message, recursively (ids and keys left out)."""
    for field, value in message.ListFields():
        if field.name in HIDDEN_FIELDS:
            continue
        values = value if isinstance(value, Sequence) and not isinstance(value, str) else [value]
        for v in values:
            if isinstance(v, str):
                yield v
            elif hasattr(v, "ListFields"):
                yield from _strings(v)


def _nodes(node: Any) -> Iterator[Any]:
    yield node
    children = getattr(node, "children", None)
    if isinstance(children, dict):
        for child in children.values():
            yield from _nodes(child)


def visible_text(at: AppTest) -> list[str]:
    """What a person can read on the page: every element's strings, and table contents."""
    out: list[str] = []
    for node in _nodes(at._tree):
        proto = getattr(node, "proto", None)
        if proto is not None and hasattr(proto, "ListFields"):
            out += list(_strings(proto))
        if type(node).__name__ == "Dataframe":
            frame = node.value
            out += [str(c) for c in frame.columns]
            out += [str(v) for v in frame.astype(str).to_numpy().ravel()]
    return out


def _seed_words(at: AppTest) -> list[str]:
    return [t[:200] for t in visible_text(at) if SEED.search(t)]


#: Pages whose tabs run only when open (``st.tabs(..., on_change="rerun")``), by the key
#: holding the open tab: each tab is opened in turn and checked.
LAZY_TABS = {"views/capacity.py": "capacity.tab"}


def _every_tab(at: AppTest, page: str) -> Iterator[AppTest]:
    """``at`` once, or with each of its lazy tabs open in turn."""
    key = LAZY_TABS.get(page)
    if key is None:
        yield at
        return
    for label in [t.label for t in at.tabs]:
        at.session_state[key] = label
        yield ok(at.run())


@pytest.mark.parametrize("page", [p.script for p in PAGES if p.script not in SKIPPED])
def test_no_page_says_seed(page: str, threaded_api: str, api_at: Callable[[str], None]) -> None:
    api_at(threaded_api)
    at = open_page(page)
    found = [word for opened in _every_tab(at, page) for word in _seed_words(opened)]
    if page == "views/capacity.py":
        # a moved input shows its design value beside it
        at.session_state[LAZY_TABS[page]] = "Shortener"
        ok(at.run())
        inputs = [*at.slider, *at.number_input]
        next(w for w in inputs if w.key == "shortener.links_per_month").set_value(200).run()
        shown = visible_text(ok(at))
        assert "design notes: 38.6/s" in shown  # the delta is read, and in plain words
        found += _seed_words(at)
    assert found == [], found


#: The internal terms that stay, as they may appear.
TERMS = {
    "seam": re.compile(r"\bseams?\b", re.IGNORECASE),
    "SIGSTOP": re.compile(r"\bSIGSTOP\b"),
    "R + W > N": re.compile(r"\bR \+ W\b"),
    "WARC": re.compile(r"\bWARC\b"),
    "BM25": re.compile(r"\bBM25\b"),
}
#: Alerts (st.warning, st.error) take no tooltip: an error naming a file format is left be.
NO_HELP_POSSIBLE = {"Alert", "Exception"}


def unexplained_terms(at: AppTest) -> list[str]:
    """Elements that show an internal term without its explanation as a help tooltip: the
    element's own ``help``, its table column's help, or its diagram node's tooltip."""
    from common import GLOSSARY

    bad = []
    for node in _nodes(at._tree):
        proto = getattr(node, "proto", None)
        if proto is None or not hasattr(proto, "ListFields"):
            continue
        kind = type(proto).__name__
        if kind in NO_HELP_POSSIBLE:
            continue
        if type(node).__name__ == "Dataframe":
            config = json.loads(proto.columns or "{}")
            for column in map(str, node.value.columns):
                for term, pattern in TERMS.items():
                    tip = str(config.get(column, {}).get("help", ""))
                    if pattern.search(column) and GLOSSARY[term] not in tip:
                        bad.append(f"table column {column!r}: no help explaining {term}")
            continue
        if kind == "GraphVizChart":
            for term, pattern in TERMS.items():
                for name in re.findall(r'(?<!tooltip=)"([^"]*)"', proto.spec):
                    if pattern.search(name) and f'"{name}" [tooltip="{GLOSSARY[term]}"]' \
                            not in proto.spec:  # fmt: skip
                        bad.append(f"diagram node {name!r}: no tooltip explaining {term}")
            continue
        shown = " ".join(_strings(proto))
        tip = getattr(proto, "help", "") if "help" in proto.DESCRIPTOR.fields_by_name else ""
        shown = shown.replace(tip, "") if tip else shown
        for term, pattern in TERMS.items():
            if pattern.search(shown) and GLOSSARY[term] not in tip:
                bad.append(f"{kind} {shown[:120]!r}: no help explaining {term}")
    return bad


@pytest.mark.parametrize("page", [p.script for p in PAGES if p.script not in SKIPPED])
def test_internal_terms_carry_a_help_tooltip(
    page: str, threaded_api: str, api_at: Callable[[str], None]
) -> None:
    api_at(threaded_api)
    at = open_page(page)
    assert [bad for opened in _every_tab(at, page) for bad in unexplained_terms(opened)] == []
