"""The redirect's side of redirect rules: which destination this request gets.

Called by :class:`~lookup.shortener.http.RedirectHandler` only for a link that has rules
(``if link.rules``), so a link without rules pays one truth test and nothing else.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol

from starlette.types import Scope

from lookup.kit.clients import Trust, client_address
from lookup.shortener.model import Link
from lookup.shortener.rules.country import country_of
from lookup.shortener.rules.model import Visit, choose

__all__ = ["NO_RULE", "pick"]

#: What a click records when the link has rules and none matched (the default destination).
NO_RULE = -1


class Handler(Protocol):
    """What :func:`pick` reads of the redirect handler: whom it trusts as a proxy."""

    trust_forwarded_for: Trust


def pick(scope: Scope, link: Link, now: float, handler: Handler) -> tuple[Link, int]:
    """``link`` aimed at the first matching rule's destination and that rule's index, or
    ``link`` itself and :data:`NO_RULE`. The country is looked up only if a condition asks."""
    user_agent = language = None
    for name, value in scope.get("headers", ()):
        if name == b"user-agent":
            user_agent = value.decode("latin-1")
        elif name == b"accept-language":
            language = value.decode("latin-1")
    visit = Visit(
        user_agent=user_agent,
        accept_language=language,
        query=scope.get("query_string", b""),
        now=now,
        address=client_address(scope, handler.trust_forwarded_for),
        country_of=country_of,
    )
    found = choose(link.rules, visit)
    if found is None:
        return link, NO_RULE
    index, rule = found
    return replace(link, long_url=rule.long_url), index
