"""Link-preview fetchers and HEAD never spend a click budget (issue 11, item 1).

A chat app that draws a card for a pasted link fetches it first; so does anything that
sends ``HEAD``. On a link with ``maxClicks`` they get the preview page — ``200``, no
``Location`` — and the budget stays whole for the person who clicks; on a link without a
budget they get the ordinary redirect. Served by uvicorn over loopback (real HTTP).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import httpx
import pytest

from lookup.server import create_app
from lookup.shortener import ShortenerConfig
from lookup.shortener.analytics.events import PREVIEW, classify_agent
from lookup.shortener.http import mount
from tests.conftest import serve_in_thread

#: One real user-agent string per preview fetcher the issue names.
PREVIEW_AGENTS = {
    "whatsapp": "WhatsApp/2.23.20.0 A",
    "slack": "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)",
    "discord": "Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)",
    "telegram": "TelegramBot (like TwitterBot)",
    "twitter": "Twitterbot/1.0",
    "facebook": "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
    "linkedin": "LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)",
}
BROWSER = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/126.0 Safari/537.36"
)


@pytest.fixture
def served(make_config: Callable[..., ShortenerConfig]) -> Iterator[tuple[str, object]]:
    config = make_config(analytics=False)
    holder: dict[str, object] = {}

    def _mount(mounts: object) -> None:
        holder["shortener"] = mount(mounts, config=config)

    app = create_app(config.data_dir, base_url=config.base_url, subsystems=[_mount])
    with serve_in_thread(app) as url:
        yield url, holder["shortener"]


def _create(url: str, **body: object) -> str:
    answer = httpx.post(f"{url}/v1/links", json={"longUrl": "https://example.com/x", **body})
    assert answer.status_code == 201, answer.text
    return str(answer.json()["key"])


@pytest.mark.parametrize("app_name", sorted(PREVIEW_AGENTS))
def test_a_preview_fetcher_never_spends_a_one_time_link(
    served: tuple[str, object], app_name: str
) -> None:
    url, _ = served
    key = _create(url, maxClicks=1)
    with httpx.Client(base_url=url, follow_redirects=False) as http:
        for _ in range(3):  # the card may be drawn more than once
            card = http.get(f"/{key}", headers={"User-Agent": PREVIEW_AGENTS[app_name]})
            assert card.status_code == 200, card.text
            assert "location" not in card.headers
            assert "https://example.com/x" in card.text  # the card shows where it goes
        person = http.get(f"/{key}", headers={"User-Agent": BROWSER})
        assert person.status_code == 302
        assert person.headers["location"] == "https://example.com/x"
        assert http.get(f"/{key}", headers={"User-Agent": BROWSER}).status_code == 410


def test_head_never_spends_a_one_time_link(served: tuple[str, object]) -> None:
    url, shortener = served
    key = _create(url, maxClicks=1)
    with httpx.Client(base_url=url, follow_redirects=False) as http:
        for _ in range(3):
            head = http.head(f"/{key}", headers={"User-Agent": BROWSER})
            assert head.status_code == 200
            assert "location" not in head.headers and head.content == b""
        assert shortener.service.get(key).clicks == 0  # type: ignore[attr-defined]
        person = http.get(f"/{key}", headers={"User-Agent": BROWSER})
        assert person.status_code == 302 and person.headers["location"] == "https://example.com/x"
    assert shortener.service.get(key).clicks == 1  # type: ignore[attr-defined]


def test_previews_and_head_of_an_unlimited_link_redirect_without_a_human_click(
    served: tuple[str, object],
) -> None:
    url, shortener = served
    key = _create(url)
    clicks: list[object] = []
    shortener.service.on_click = clicks.append  # type: ignore[attr-defined]
    with httpx.Client(base_url=url, follow_redirects=False) as http:
        for agent in PREVIEW_AGENTS.values():
            card = http.get(f"/{key}", headers={"User-Agent": agent})
            assert card.status_code == 302 and card.headers["location"] == "https://example.com/x"
        head = http.head(f"/{key}", headers={"User-Agent": BROWSER})
        assert head.status_code == 302 and head.headers["location"] == "https://example.com/x"
        person = http.get(f"/{key}", headers={"User-Agent": BROWSER})
        assert person.status_code == 302
    # Only the person's GET is a click: previews are told apart, HEAD is no visit at all.
    human = [c for c in clicks if c.user_agent == BROWSER]  # type: ignore[attr-defined]
    assert [c.method for c in human] == ["GET"]  # type: ignore[attr-defined]
    previews = [c for c in clicks if c.user_agent != BROWSER]  # type: ignore[attr-defined]
    assert len(previews) == len(PREVIEW_AGENTS)
    kinds = {classify_agent(c.user_agent).agent for c in previews}  # type: ignore[attr-defined]
    assert kinds == {PREVIEW}  # analytics counts them beside, never as, human clicks


def test_the_redirect_and_analytics_recognise_the_same_preview_fetchers() -> None:
    from lookup.shortener.http import is_link_preview

    for agent in PREVIEW_AGENTS.values():
        assert is_link_preview(agent) and classify_agent(agent).agent == PREVIEW
    assert not is_link_preview(BROWSER) and not is_link_preview(None)
