"""Bulk create: ``POST /v1/links/bulk`` makes many links from one JSON request.

The body is a JSON array of create bodies (the ``POST /v1/links`` shape), or an object
``{"links": [...], "atomic": true}``. Every item goes through exactly what a single create
goes through (:meth:`~lookup.shortener.api.LinkApi.create`: the field checks, the URL
policy — private addresses in every spelling, the blocklist —, the alias rule, the store's
conditional claim, and the safety scanner told of each new link).

* Per item (the default, as Dub's bulk create and our CSV import answer): each item
  succeeds or fails alone; ``200`` with one result per item (``index``, ``status``, and
  ``key``/``shortUrl`` or ``error``/``message``).
* ``atomic: true``: all or nothing. Every item is checked first (fields, URL policy,
  aliases free and not repeated in the request); one refusal refuses the whole request
  (``400``/``409 BULK_REJECTED`` with each item's result) and nothing is made. Only an alias
  claimed by someone else between that check and its create can stop a batch half-way;
  the links this request already made are then deleted (tombstoned: their keys are never
  reissued, as for any deleted link) and the answer is the same ``409``.

More than the ``shortener_bulk_max`` setting's items is refused whole with ``413
TOO_MANY_ITEMS`` before anything is checked, and so is an item that is not a JSON object
(``400 MALFORMED_JSON``: the request's shape, not a link's content); the request body is
also bounded by the server's body limit (64 KB).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse

from lookup import errors, settings
from lookup.kit.http import api_error_for, require_json_media_type
from lookup.shortener import schemas
from lookup.shortener.api import LinkApi
from lookup.shortener.resolver import STORE_LANE
from lookup.shortener.service import Created

BULK_FIELDS = frozenset({"links", "atomic"})


def _bad(code: str, message: str) -> errors.InvalidInput:
    return errors.InvalidInput(message, code=code)


def parse_bulk(raw: bytes, content_type: str | None, limit: int) -> tuple[list[Any], bool]:
    """The items and the ``atomic`` switch of a bulk body; 400 for a malformed one, 413
    ``TOO_MANY_ITEMS`` over ``limit`` items."""
    require_json_media_type(content_type)
    try:
        value = json.loads(raw) if raw else None
    except (ValueError, RecursionError):
        raise _bad("MALFORMED_JSON", "the body is not valid JSON") from None
    atomic = False
    if isinstance(value, dict):
        unknown = set(value) - BULK_FIELDS
        if unknown:
            names = ", ".join(sorted(map(str, unknown)))
            raise _bad("UNKNOWN_FIELD", f"unknown field(s): {names}; a bulk body has links, atomic")
        atomic = value.get("atomic", False)
        if not isinstance(atomic, bool):
            raise _bad("INVALID_ATOMIC", "atomic must be true or false")
        value = value.get("links")
    if not isinstance(value, list):
        raise _bad(
            "MALFORMED_JSON",
            'send a JSON array of links, or {"links": [...], "atomic": true}',
        )
    if not value:
        raise _bad("EMPTY_BULK", "send at least one link")
    for index, item in enumerate(value):  # the request's shape, refused whole; a link's
        if not isinstance(item, dict):  # fields are each item's own business
            raise _bad("MALFORMED_JSON", f"links[{index}] is not a JSON object")
    if len(value) > limit:
        raise errors.TooLarge(
            f"at most {limit} links per bulk request (setting shortener_bulk_max); "
            f"this one has {len(value)}",
            code="TOO_MANY_ITEMS",
        )
    return value, atomic


def _failure(index: int, exc: errors.WorkbenchError) -> dict[str, Any]:
    return {
        "index": index,
        "status": api_error_for(exc).status,
        "error": exc.code,
        "message": exc.message,
    }


def _success(index: int, created: Created) -> dict[str, Any]:
    return {
        "index": index,
        "status": 201,
        "key": created.body["key"],
        "shortUrl": created.body["shortUrl"],
    }


def _answer(items: list[dict[str, Any]], atomic: bool) -> dict[str, Any]:
    made = sum(1 for item in items if item["status"] == 201)
    return {"atomic": atomic, "created": made, "failed": len(items) - made, "items": items}


def _precheck(api: LinkApi, items: list[Any]) -> list[dict[str, Any]]:
    """Each item's refusal, checked as a create checks it, without making anything; an
    alias taken already or named twice in the request is ``409 ALIAS_TAKEN``."""
    results: list[dict[str, Any]] = []
    seen: set[str] = set()
    for index, body in enumerate(items):
        try:
            if not isinstance(body, dict):
                raise _bad("MALFORMED_JSON", "each link is a JSON object")
            request = api.parser.create(body)
            alias = request.alias
            if alias is not None:
                if alias in seen or api.service.store.get(alias) is not None:
                    raise errors.Conflict(
                        f"the alias {alias!r} is already taken", code="ALIAS_TAKEN"
                    )
                seen.add(alias)
        except errors.WorkbenchError as exc:
            results.append(_failure(index, exc))
        else:
            results.append({"index": index, "status": 200})
    return results


def _rejected(items: list[dict[str, Any]]) -> errors.WorkbenchError:
    answer = _answer(items, True)
    answer["created"] = 0
    statuses = {item["status"] for item in items if item["status"] not in (0, 200, 201)}
    message = (
        f"{answer['failed']} of {len(items)} links were refused; nothing was created (atomic: true)"
    )
    kind = errors.Conflict if statuses <= {409} else errors.InvalidInput
    return kind(message, code="BULK_REJECTED", extra={k: answer[k] for k in answer})


def bulk_create(api: LinkApi, items: list[Any], *, owner: str, atomic: bool) -> dict[str, Any]:
    """Create the links of a bulk request (see the module doc) for ``owner``; blocking."""

    def create(body: dict[str, Any]) -> Created:
        return api.create(body, owner=owner)

    if not atomic:
        results = []
        for index, body in enumerate(items):
            try:
                if not isinstance(body, dict):
                    raise _bad("MALFORMED_JSON", "each link is a JSON object")
                results.append(_success(index, create(body)))
            except errors.WorkbenchError as exc:
                results.append(_failure(index, exc))
        return _answer(results, False)
    checked = _precheck(api, items)
    if any(item["status"] != 200 for item in checked):
        for item in checked:
            if item["status"] == 200:
                item.update(status=0, error="NOT_CREATED", message="another link was refused")
        raise _rejected(checked)
    made: list[str] = []
    results = []
    for index, body in enumerate(items):
        try:
            created = create(body)
        except errors.WorkbenchError as exc:  # lost a race for an alias: undo this request
            for key in made:
                api.service.delete(key, owner=owner)
            failed = [_failure(index, exc)]
            rest = [
                {"index": i, "status": 0, "error": "NOT_CREATED", "message": "rolled back"}
                for i in range(len(items))
                if i != index
            ]
            raise _rejected(sorted(failed + rest, key=lambda r: r["index"])) from None
        made.append(created.body["key"])
        results.append(_success(index, created))
    return _answer(results, True)


def add_bulk_route(
    router: Any,
    api: LinkApi,
    require_token: Callable[[Any], Awaitable[str]],
    write_budget: Callable[..., Any],
    responses: dict[int | str, dict[str, Any]],
) -> None:
    """``POST /v1/links/bulk`` on ``router`` (the shortener's management router): an owner
    token, the write budget charged one unit per item, the work in the store lane."""

    @router.post(  # type: ignore[misc]
        "/v1/links/bulk",
        response_model=schemas.BulkResult,
        responses={**responses, 201: {"model": schemas.BulkResult}},
        summary="Shorten many URLs at once (per-item results, or all-or-nothing)",
        description=schemas.BULK_DESCRIPTION,
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": schemas.BULK_BODY_SCHEMA}},
            }
        },
    )
    async def bulk_links(request: Request) -> JSONResponse:
        owner = await require_token(request)
        items, atomic = parse_bulk(
            await request.body(), request.headers.get("content-type"), bulk_max()
        )

        def run() -> tuple[Any, dict[str, Any]]:
            decision = write_budget(request, owner, cost=len(items))
            return decision, bulk_create(api, items, owner=owner, atomic=atomic)

        decision, result = await STORE_LANE.run(run)
        status = 201 if atomic else 200
        return JSONResponse(result, status_code=status, headers=decision.headers())


def bulk_max() -> int:
    """The most links one bulk request may hold (setting ``shortener_bulk_max``)."""
    return int(settings.get("shortener_bulk_max"))


__all__ = ["BULK_FIELDS", "add_bulk_route", "bulk_create", "bulk_max", "parse_bulk"]
