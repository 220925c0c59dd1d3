"""The redirect routes as ``/openapi.json`` shows them: they are raw ASGI on the hot path
(``http.py:RedirectRoute``), which the framework does not see, so their path items are
written here and merged into the document (``kit/mounts.py:Mounts.fast_route_docs``)."""

from __future__ import annotations

from typing import Any

from lookup.kit.mounts import json_doc
from lookup.shortener.keys import KEY_SHAPE

__all__ = ["REDIRECT_DOCS"]

_KEY_PARAM = {
    "name": "key", "in": "path", "required": True,
    "description": "the short key or alias, in any letter case (IPL-Final finds ipl-final)",
    "schema": {"type": "string", "pattern": KEY_SHAPE.pattern},
}  # fmt: skip
_HTML = {"text/html": {"schema": {"type": "string"}}}
#: The redirect routes as ``/openapi.json`` shows them (they are raw ASGI, on the hot path).
REDIRECT_DOCS: dict[str, dict[str, Any]] = {
    "/{key}": {
        "get": {
            "tags": ["shortener"],
            "summary": "Follow a short link (the hot path)",
            "description": "Redirects to the destination, with the visitor's query string "
            "merged in unless the link's forwardQuery is false. A disabled link answers its "
            "warning page (403), a password-protected one its password form; a browser "
            "(Accept: text/html) gets a page for a missing, expired or deleted key, any "
            "other client the JSON error. HEAD answers the same without spending a click. "
            "The key is looked up on the short domain the Host header names (an unknown host: "
            "the default domain); a domain with a fallback redirect sends a missing, expired "
            "or deleted key there instead (302, no-store).",
            "parameters": [_KEY_PARAM],
            "responses": {
                "301": {"description": "permanent redirect (Location), cacheable for maxAge"},
                "302": {"description": "redirect (Location)"},
                "200": {"description": "the password form", "content": _HTML},
                "403": {"description": "the link is disabled: a warning page", "content": _HTML},
                "404": json_doc("no link has this key (NOT_FOUND)"),
                "410": json_doc("the link expired or was deleted (LINK_EXPIRED, LINK_DELETED)"),
                "429": json_doc("too many lookups of unknown keys (RATE_LIMITED)"),
            },
        },
        "post": {
            "tags": ["shortener"],
            "summary": "Unlock a password-protected link (the form posts here)",
            "parameters": [_KEY_PARAM],
            "responses": {
                "303": {"description": "the right password: see the destination"},
                "403": {"description": "a wrong password: the form again", "content": _HTML},
                "429": json_doc("too many password attempts (RATE_LIMITED)"),
            },
        },
    },
    "/{key}/{path}": {
        "get": {
            "tags": ["shortener"],
            "summary": "Follow a short link with an extra path (links with forwardPath)",
            "parameters": [
                _KEY_PARAM,
                {
                    "name": "path",
                    "in": "path",
                    "required": True,
                    "schema": {"type": "string"},
                    "description": "appended to the destination's path",
                },
            ],  # fmt: skip
            "responses": {
                "302": {"description": "redirect to the destination's path + /{path}"},
                "404": json_doc("no such key, or the link does not forward extra paths"),
            },
        }
    },
}
