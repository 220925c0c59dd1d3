"""The Typeahead page marks typo-tolerant suggestions (``app/typomarks.py``), through
``streamlit.testing`` against the real API on a loopback port.

Typing ``ipohne`` shows iphone suggestions tagged as corrected in the dropdown, and the
list under the box shows them with the matched span in bold, as the API's highlight
ranges say (the oracle: the API asked directly).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from dashboard_testing import HOME, RUN_TIMEOUT
from starlette.types import ASGIApp
from streamlit.testing.v1 import AppTest

from lookup.typeahead import querylog, run

TYPEAHEAD = "views/typeahead.py"
BOX_STATE = "_searchbox_typeahead-q"
EVENTS = 30_000


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data_dir = tmp_path_factory.mktemp("typos-app") / "data"
    log = querylog.generate(EVENTS, seed=11)
    assert run(data_dir, querylog.write(log, querylog.log_path(data_dir))).ok
    return data_dir


def test_corrected_suggestions_are_marked_and_their_match_bold(
    built: Path,
    serve_asgi: Callable[[ASGIApp], str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from lookup.server import create_app

    data_dir = tmp_path / "data"
    shutil.copytree(built, data_dir)
    monkeypatch.setenv("LOOKUP_DATA_DIR", str(data_dir))
    api = serve_asgi(create_app(data_dir, subsystems=["lookup.typeahead.http:mount"]))
    monkeypatch.setenv("LOOKUP_API_URL", api)
    at = AppTest.from_file(HOME, default_timeout=RUN_TIMEOUT).run()
    at.switch_page(TYPEAHEAD).run()
    at.session_state[BOX_STATE] = {"box": {"text": "ipohne", "submitted": "", "seq": 0}}
    at.run()
    assert not at.exception, [e.value for e in at.exception]

    oracle = httpx.get(f"{api}/v1/suggest", params={"q": "ipohne", "highlight": "true"}).json()
    assert oracle["suggestions"] and all(t > 0 for t in oracle["typos"]), oracle
    boxes = [e for e in at.get("bidi_component") if "lookup_searchbox" in e.proto.component_name]
    items = json.loads(boxes[0].proto.json)["items"]
    assert [i["s"] for i in items] == oracle["suggestions"]
    assert all(i["tag"] == "corrected · 1 typo" and i["typed"] == "" for i in items), items

    text = " ".join(m.value for m in at.markdown)
    assert "Typo-tolerant matches" in text
    first, ranges = oracle["suggestions"][0], oracle["highlights"][0]
    assert ranges == [[0, 6]]
    assert f"**{first[:6]}**" in text  # the matched span, bold
