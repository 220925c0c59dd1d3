"""Home and the navigation, through ``streamlit.testing`` (the script runs as in a browser)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from dashboard_testing import APP_DIR, HOME, RUN_TIMEOUT
from starlette.applications import Starlette
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route
from streamlit.testing.v1 import AppTest


def _text(at: AppTest) -> str:
    """Everything the run wrote as markdown, titles, headers and captions, in one string."""
    parts = [m.value for m in at.markdown]
    parts += [t.value for t in at.title] + [h.value for h in at.header]
    parts += [c.value for c in at.caption]
    return "\n".join(parts)


def _home(api_url: str, api_at: Callable[[str], None]) -> AppTest:
    api_at(api_url)
    at = AppTest.from_file(HOME, default_timeout=RUN_TIMEOUT).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_home_introduces_the_four_systems_and_the_one_idea(
    nothing_listening: str, api_at: Callable[[str], None]
) -> None:
    text = _text(_home(nothing_listening, api_at))
    assert "Lookup Workbench" in text
    for system in ("URL shortener", "Typeahead", "Proximity search", "Web crawler"):
        assert system in text, system
    assert "decide the answer in advance" in text
    for move in (
        "Choose the key",
        "Precompute the answer",
        "Cache the hot head",
        "Rebuild offline",
        "Keep writes off the read path",
    ):
        assert move in text, move


def test_home_says_clearly_when_the_api_is_down(
    nothing_listening: str, api_at: Callable[[str], None]
) -> None:
    at = _home(nothing_listening, api_at)
    text = _text(at)
    assert "API down" in text
    assert nothing_listening in text
    assert "lookup serve" in text
    assert "API up" not in text


def test_home_shows_the_api_is_up_when_healthz_answers(
    threaded_api: str, api_at: Callable[[str], None]
) -> None:
    text = _text(_home(threaded_api, api_at))
    assert "API up" in text
    assert threaded_api in text
    assert "API down" not in text
    # The address links to the API's interactive documentation, not its root (a JSON 404).
    assert f"]({threaded_api}/docs)" in text, text
    import httpx

    docs = httpx.get(f"{threaded_api}/docs", timeout=10)
    assert docs.status_code == 200 and "text/html" in docs.headers["content-type"]


@pytest.mark.parametrize(
    ("route", "problem"),
    [
        (lambda _: JSONResponse({"error": "BROKEN"}, status_code=503), "HTTP 503"),
        (lambda _: PlainTextResponse("hello"), "did not answer JSON"),
        (lambda _: JSONResponse({"status": "starting"}), "did not report status ok"),
    ],
)
def test_home_reports_a_sick_api_as_down_with_the_reason(
    serve_asgi: Callable[..., str],
    api_at: Callable[[str], None],
    route: Callable[..., object],
    problem: str,
) -> None:
    async def healthz(request: object) -> object:
        return route(request)

    url = serve_asgi(Starlette(routes=[Route("/healthz", healthz)]))
    text = _text(_home(url, api_at))
    assert "API down" in text
    assert problem in text


def test_every_view_is_in_the_navigation_and_every_page_runs(
    nothing_listening: str, api_at: Callable[[str], None]
) -> None:
    from navigation import PAGES

    listed = {spec.script for spec in PAGES}
    on_disk = {f"views/{p.name}" for p in (APP_DIR / "views").glob("*.py")}
    assert listed == on_disk, "a page script is missing from navigation.PAGES or vice versa"
    assert not (APP_DIR / "pages").exists(), "app/pages/ would switch Streamlit to MPA v1 mode"
    assert sum(spec.default for spec in PAGES) == 1

    at = _home(nothing_listening, api_at)
    titles = {}
    for spec in PAGES:
        at.switch_page(spec.script).run()
        assert not at.exception, (spec.script, [e.value for e in at.exception])
        assert at.title, f"{spec.script} shows no title"
        titles[spec.script] = at.title[0].value
    assert len(set(titles.values())) == len(PAGES), titles  # each switch reached its own page


def test_probe_health_never_raises(nothing_listening: str, threaded_api: str) -> None:
    from common import probe_health

    down = probe_health(nothing_listening)
    assert not down.up and down.problem
    up = probe_health(threaded_api)
    assert up.up and up.version and isinstance(up.systems, dict)


def test_data_dir_and_api_url_come_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from common import DEFAULT_API_URL, api_url, data_dir

    monkeypatch.delenv("LOOKUP_API_URL", raising=False)
    monkeypatch.delenv("LOOKUP_DATA_DIR", raising=False)
    assert api_url() == DEFAULT_API_URL
    monkeypatch.setenv("LOOKUP_API_URL", "http://127.0.0.1:9999/")
    assert api_url() == "http://127.0.0.1:9999"
    monkeypatch.setenv("LOOKUP_DATA_DIR", str(tmp_path))
    assert data_dir() == tmp_path.resolve()


def test_each_card_is_a_link_with_its_live_status_and_a_picture(
    threaded_api: str, api_at: Callable[[str], None]
) -> None:
    """Against an API with nothing built: the shortener is ready, the others say how to
    build them — web search that it needs a crawl first; every card links its page(s)
    and draws its read and write paths."""
    at = _home(threaded_api, api_at)
    links = {p.proto.page for p in at.get("page_link")}
    for page in ("shortener", "typeahead", "places", "crawler", "search"):
        assert any(page in link for link in links), (page, links)
    assert len(at.get("graphviz_chart")) == 4
    text = _text(at)
    assert ":green-badge[ready] Shorten a link" in text
    assert ":orange-badge[not built yet] Web search needs a crawl first" in text
    assert text.count(":orange-badge[not built yet]") == 3  # typeahead, places, search
    assert "the design notes" in text and "the seed" not in text


def test_the_cards_say_when_the_api_is_down(
    nothing_listening: str, api_at: Callable[[str], None]
) -> None:
    text = _text(_home(nothing_listening, api_at))
    assert text.count(":red-badge[API down]") == 4
