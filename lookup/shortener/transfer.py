"""CSV transfer of an owner's links: export them, import rows as new links.

An export re-imports: aliases come back as aliases, generated keys are never reissued
(each such row gets a new key), and passwords never travel (only their hashes exist).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable
from typing import Any

from lookup import errors
from lookup.kit.http import api_error_for
from lookup.shortener.model import format_time
from lookup.shortener.service import Created, ShortenerService
from lookup.shortener.views import LinkViews

MAX_IMPORT_ROWS = 1_000
CSV_COLUMNS = (
    "key",
    "shortUrl",
    "longUrl",
    "customAlias",
    "status",
    "createdAt",
    "expiresAt",
    "maxClicks",
    "clicksUsed",
    "redirectType",
    "maxAge",
    "passwordProtected",
    "tags",
    "forwardQuery",
    "forwardPath",
)
_PAGE = 500


def _bad(code: str, message: str) -> errors.InvalidInput:
    return errors.InvalidInput(message, code=code)


def export_csv(service: ShortenerService, views: LinkViews, owner: str) -> str:
    """All of an owner's links as CSV (re-importable: aliases come back as aliases)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, lineterminator="\r\n")
    writer.writeheader()
    before: tuple[float, str] | None = None
    while True:
        links, more = service.owner_links(owner, limit=_PAGE, before=before)
        for link in links:
            writer.writerow(
                {
                    "key": link.key,
                    "shortUrl": views.short_url(link.key),
                    "longUrl": link.long_url,
                    "customAlias": link.key if link.alias else "",
                    "status": views.status(link).value,
                    "createdAt": format_time(link.created_at),
                    "expiresAt": format_time(link.expires_at) or "",
                    "maxClicks": "" if link.max_clicks is None else link.max_clicks,
                    "clicksUsed": link.clicks if link.max_clicks is not None else "",
                    "redirectType": link.redirect_type,
                    "maxAge": "" if link.max_age is None else link.max_age,
                    "passwordProtected": "true" if link.password_hash else "false",
                    "tags": ";".join(link.tags),
                    "forwardQuery": "true" if link.forward_query else "false",
                    "forwardPath": "true" if link.forward_path else "false",
                }
            )
        if not more:
            break
        before = (links[-1].created_at, links[-1].key)
    return out.getvalue()


def parse_import(text: str) -> list[dict[str, Any]]:
    """CSV rows → create bodies. Needs a header with ``longUrl``; optional columns
    ``customAlias``, ``expiresAt``, ``maxClicks``, ``redirectType``, ``maxAge``, ``tags``
    (separated by ``;``), ``forwardQuery`` and ``forwardPath`` (``true``/``false``).
    Other columns (such as an export's ``key``) are ignored —
    keys are never reissued, so each row gets a new key unless it names an alias.
    Passwords are never exported (only their hashes exist), so they do not round-trip."""
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        header = reader.fieldnames
        if not header or "longUrl" not in header:
            raise _bad("INVALID_CSV", "the CSV needs a header row with a longUrl column")
        rows: list[dict[str, Any]] = []
        for row in reader:
            if len(rows) >= MAX_IMPORT_ROWS:
                raise _bad("TOO_MANY_ROWS", f"import at most {MAX_IMPORT_ROWS} rows at a time")
            rows.append(row)
    except csv.Error as exc:
        raise _bad("INVALID_CSV", f"the body is not valid CSV: {exc}") from None
    bodies: list[dict[str, Any]] = []
    for row in rows:
        body: dict[str, Any] = {}
        problems: list[str] = []

        def cell(name: str, row: dict[str, Any] = row) -> str:
            value = row.get(name)
            return value.strip() if isinstance(value, str) else ""

        body["longUrl"] = cell("longUrl")
        if cell("customAlias"):
            body["customAlias"] = cell("customAlias")
        if cell("expiresAt"):
            body["expiresAt"] = cell("expiresAt")
        for name in ("maxClicks", "redirectType", "maxAge"):
            if cell(name):
                try:
                    body[name] = int(cell(name))
                except ValueError:
                    problems.append(f"{name} must be an integer")
        if cell("tags"):
            body["tags"] = [t for t in re.split(r"[;\s]+", cell("tags")) if t]
        for name in ("forwardQuery", "forwardPath"):
            if cell(name):
                flag = cell(name).lower()
                if flag not in ("true", "false"):
                    problems.append(f"{name} must be true or false")
                else:
                    body[name] = flag == "true"
        if body.get("redirectType") == 302 and "maxAge" in body:
            del body["maxAge"]
        bodies.append({"body": body, "errors": problems})
    return bodies


def import_rows(
    create: Callable[[dict[str, Any], str], Created], bodies: list[dict[str, Any]], owner: str
) -> dict[str, Any]:
    """Create one link per parsed row with ``create(body, owner)``; per-row results with
    the status and error code the API would answer; one bad row never stops the rest."""
    results: list[dict[str, Any]] = []
    created = 0
    for number, item in enumerate(bodies, start=2):  # row 1 is the header
        if item["errors"]:
            results.append(
                {
                    "row": number,
                    "status": 400,
                    "error": "INVALID_ROW",
                    "message": "; ".join(item["errors"]),
                }
            )
            continue
        try:
            outcome = create(item["body"], owner)
        except errors.WorkbenchError as exc:
            answer = api_error_for(exc)
            results.append(
                {"row": number, "status": answer.status, "error": exc.code, "message": exc.message}
            )
            continue
        created += 1
        results.append(
            {
                "row": number,
                "status": 201,
                "key": outcome.body["key"],
                "shortUrl": outcome.body["shortUrl"],
            }
        )
    return {"created": created, "failed": len(results) - created, "rows": results}


__all__ = ["CSV_COLUMNS", "MAX_IMPORT_ROWS", "export_csv", "import_rows", "parse_import"]
