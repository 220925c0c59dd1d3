"""The shortener page's webhooks panel, through ``streamlit.testing``, against the real API.

Register a loopback receiver (the test's allowance for loopback destinations lets it in),
see the secret once, make a link over HTTP and watch its delivery in the panel's log, then
delete the endpoint. A private address is refused with the API's reason.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
from dashboard_testing import ok, page_text
from streamlit.testing.v1 import AppTest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.shortener.webhook_receiver import signed_correctly, webhook_receiver  # noqa: E402

PAGE = "views/shortener.py"


def test_register_watch_the_log_and_delete(
    threaded_api: str, visit: Callable[[str, str], AppTest]
) -> None:
    with webhook_receiver() as receiver:
        at = visit(PAGE, threaded_api)
        assert "No webhook endpoints yet" in page_text(at)
        at.text_input(key="webhook-url").input("http://10.1.2.3/hook")
        ok(at.button(key="webhook-add").click().run())
        assert "Not added" in page_text(at) and "PRIVATE_ADDRESS" in page_text(at)

        at.text_input(key="webhook-url").input(receiver.url + "/ok")
        ok(at.button(key="webhook-add").click().run())
        text = page_text(at)
        assert "shown this once" in text
        secret = text.split("shown this once: ")[1].split()[0].strip("`")
        hooks = [d.value for d in at.dataframe if "URL" in d.value.columns]
        assert list(hooks[0]["URL"]) == [receiver.url + "/ok"]

        with httpx.Client(base_url=threaded_api) as client:
            token = client.post("/v1/tokens").json()["token"]
            r = client.post(
                "/v1/links",
                json={"longUrl": "https://example.com/hooked"},
                headers={"Authorization": f"Bearer {token}"},
            )
            assert r.status_code == 201
        receiver.wait(lambda: len(receiver.on("/ok")) == 1)
        assert signed_correctly(secret, receiver.on("/ok")[0])
        deadline = time.monotonic() + 20
        while True:
            ok(at.button(key="webhook-refresh").click().run())
            logs = [d.value for d in at.dataframe if "Attempts" in d.value.columns]
            if logs and list(logs[0]["State"]) == ["delivered"]:
                break
            assert time.monotonic() < deadline, page_text(at)
            time.sleep(0.3)
        assert list(logs[0]["Event"]) == ["link.created"]
        assert list(logs[0]["Response"]) == [204]

        ok(at.button(key="webhook-delete").click().run())
        assert "No webhook endpoints yet" in page_text(at)
