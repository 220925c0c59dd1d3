"""Ask a loopback service whether it is up, without ever raising: a dead service is a state.

The dashboard asks the API's ``/healthz`` and the crawler page asks the sandbox web's
manifest the same way; both say *why* nothing answered in the same words.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

__all__ = ["JsonAnswer", "get_json"]


@dataclass(frozen=True)
class JsonAnswer:
    """What a GET answered: its status and JSON body, or why there is none."""

    status: int = 0
    body: Any = None
    json: bool = False
    problem: str | None = None


def get_json(
    url: str, *, timeout: float | httpx.Timeout, client: httpx.Client | None = None
) -> JsonAnswer:
    """GET ``url``; network failures become a ``problem`` sentence, never an exception."""
    try:
        if client is not None:
            resp = client.get(url, timeout=timeout)
        else:
            resp = httpx.get(url, timeout=timeout, trust_env=False)
    except httpx.ConnectError:
        return JsonAnswer(problem="nothing is listening there")
    except httpx.TimeoutException:
        return JsonAnswer(problem="it did not answer in time")
    except httpx.HTTPError as exc:
        return JsonAnswer(problem=f"the request failed ({type(exc).__name__})")
    try:
        return JsonAnswer(resp.status_code, resp.json(), json=True)
    except ValueError:
        return JsonAnswer(resp.status_code)
