"""Management and internals take the admin token (issue 11, item 4).

``/v1/shortener/metrics`` shows link counts and cache internals, so it answers only the
admin token, as the blocklist endpoints do: 401 without a token, 403 with another one.
"""

from __future__ import annotations

from typing import Any

from lookup.kit.admin import load_admin_token_in


def test_metrics_need_the_admin_token(app: Any, auth: dict[str, str]) -> None:
    assert app.client.get("/v1/shortener/metrics").status_code == 401
    assert app.client.get("/v1/shortener/metrics").json()["error"] == "UNAUTHORIZED"
    wrong = app.client.get("/v1/shortener/metrics", headers=auth)  # an owner is no admin
    assert wrong.status_code == 403 and wrong.json()["error"] == "FORBIDDEN"
    admin = {"Authorization": f"Bearer {load_admin_token_in(app.shortener.dir)}"}
    answer = app.client.get("/v1/shortener/metrics", headers=admin)
    assert answer.status_code == 200 and "links" in answer.json() and "cache" in answer.json()
