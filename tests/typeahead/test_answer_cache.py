"""``/v1/suggest`` keeps finished answers (issue 24 item 19) — and never serves one whose
state has moved: a hot blocklist edit, a new trending computation or a snapshot swap is
seen by the very next request. A kept answer is byte for byte the one computed afresh.

The cache itself (:class:`~lookup.kit.answercache.AnswerCache`) is checked against a
plain dictionary model under hypothesis.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st

from lookup.kit.answercache import AnswerCache
from lookup.server import create_app
from lookup.typeahead.http import install
from lookup.typeahead.serving import SuggestService
from lookup.typeahead.trending import TrendingTracker
from tests.conftest import running_lookup
from tests.typeahead.conftest import Built

ADMIN = "answer-cache-admin-token"


def _cache_stats(client: Any) -> dict[str, int]:
    return dict(client.get("/healthz").json()["systems"]["typeahead"]["answerCache"])


@pytest.fixture
def served(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[TestClient, Any]]:
    monkeypatch.setenv("LOOKUP_ADMIN_TOKEN", ADMIN)
    service = SuggestService.from_data_dir(data_dir)
    service.tracker = TrendingTracker()
    app = create_app(data_dir, subsystems=[lambda m: install(m, service)])
    with TestClient(app) as c:
        yield c, service


def test_a_repeated_prefix_is_answered_from_the_cache_with_the_same_bytes(
    served: tuple[TestClient, Any],
) -> None:
    client, _ = served
    before = _cache_stats(client)
    first = client.get("/v1/suggest", params={"q": "ip"})
    again = client.get("/v1/suggest", params={"q": "ip"})
    assert first.status_code == again.status_code == 200
    assert again.content == first.content and again.headers == first.headers
    after = _cache_stats(client)
    assert after["hits"] == before["hits"] + 1 and after["misses"] == before["misses"] + 1
    other = client.get("/v1/suggest", params={"q": "ip", "limit": "3"})  # another question
    assert len(other.json()["suggestions"]) <= 3
    assert _cache_stats(client)["misses"] == after["misses"] + 1


def test_a_blocklist_edit_is_seen_by_the_next_request(served: tuple[TestClient, Any]) -> None:
    client, _ = served
    shown = client.get("/v1/suggest", params={"q": "ip"}).json()["suggestions"]
    assert shown, "the built data has suggestions for 'ip'"
    client.get("/v1/suggest", params={"q": "ip"})  # kept
    r = client.post(
        "/v1/typeahead/blocklist",
        json={"terms": [shown[0]]},
        headers={"Authorization": f"Bearer {ADMIN}"},
    )
    assert r.status_code == 200, r.text
    assert shown[0] not in client.get("/v1/suggest", params={"q": "ip"}).json()["suggestions"]


def test_a_new_trending_computation_and_a_snapshot_swap_are_misses(
    served: tuple[TestClient, Any],
) -> None:
    client, service = served
    client.get("/v1/suggest", params={"q": "ip"})
    misses = _cache_stats(client)["misses"]
    service.tracker.compute()  # the trending sets recomputed: blends may differ now
    client.get("/v1/suggest", params={"q": "ip"})
    assert _cache_stats(client)["misses"] == misses + 1
    slot = service._slots["en-IN"]
    service._slots["en-IN"] = type(slot)(slot.current, slot.previous)  # same snapshot
    client.get("/v1/suggest", params={"q": "ip"})  # same version: still current
    assert _cache_stats(client)["misses"] == misses + 1
    token = service.answer_token("en-IN")
    assert token is not None and token[0] == slot.current.version
    assert service.answer_token("xx-YY") is None  # no snapshot: nothing to share


def test_answers_are_kept_over_a_real_server(built: Built, tmp_path: Path) -> None:
    import shutil

    data = tmp_path / "data"
    shutil.copytree(built.data_dir, data)
    env = {"LOOKUP_ADMIN_TOKEN": ADMIN}
    with running_lookup(data, env, timeout=120) as url, httpx.Client(base_url=url) as c:
        answers = [c.get("/v1/suggest", params={"q": "ipl"}).content for _ in range(5)]
        assert len(set(answers)) == 1
        assert _cache_stats(c)["hits"] >= 4
    off = {**env, "LOOKUP_TYPEAHEAD_ANSWER_CACHE": "0"}
    with running_lookup(data, off, timeout=120) as url, httpx.Client(base_url=url) as c:
        assert c.get("/v1/suggest", params={"q": "ipl"}).content == answers[0]
        assert c.get("/v1/suggest", params={"q": "ipl"}).status_code == 200
        assert _cache_stats(c) == {"entries": 0, "hits": 0, "misses": 2}


#: Operations on a small key and token space: (op, key, token, value).
_OPS = st.lists(
    st.tuples(
        st.sampled_from(["put", "get"]),
        st.integers(0, 5),
        st.integers(0, 2),
        st.integers(0, 99),
    ),
    max_size=60,
)


@given(entries=st.integers(0, 4), ops=_OPS)
def test_the_cache_equals_a_dictionary_model(entries: int, ops: list[Any]) -> None:
    cache = AnswerCache(entries)
    model: dict[int, tuple[int, int]] = {}
    hits = misses = 0
    for op, key, token, value in ops:
        if op == "put":
            if entries:
                if len(model) >= entries:
                    model.clear()
                model[key] = (token, value)
            cache.put(key, token, value)
        else:
            kept = model.get(key)
            expect = kept[1] if kept is not None and kept[0] == token else None
            hits, misses = (hits + 1, misses) if expect is not None else (hits, misses + 1)
            assert cache.get(key, token) == expect
            assert cache.get_with(key, lambda v: token) == expect  # noqa: B023
            hits, misses = (hits + 1, misses) if expect is not None else (hits, misses + 1)
        assert len(model) <= max(entries, 0)
    assert cache.stats() == {"entries": len(model), "hits": hits, "misses": misses}
