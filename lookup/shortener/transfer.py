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
from lookup.shortener.keys import AliasRejected, ReservedWords, validate_alias
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
    "domain",
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
                    "key": link.short_key,
                    "shortUrl": views.short_url(link.key),
                    "longUrl": link.long_url,
                    "customAlias": link.short_key if link.alias else "",
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
                    "domain": link.domain,  # empty: the default domain, whatever its name
                }
            )
        if not more:
            break
        before = (links[-1].created_at, links[-1].key)
    return out.getvalue()


#: The CSV formats an import accepts, each told by the columns of its header row.
#: ``lookup``: this API's export. ``shlink``: Shlink's web client export (``shortCode``,
#: ``longUrl``, ``title``, ``tags`` joined by ``|``, ``visits``...) and the CSV of Shlink's
#: importer (``Long URL``, ``Short code``, ``Domain``, ``Title``, ``Tags``). ``bitly``:
#: Bitly's link export (``long_url``, ``link``, ``title``, ``created_at``, ``tags``).
CSV_FORMATS = {
    "lookup": "longUrl (this API's export)",
    "shlink": "shortCode + longUrl, or Short code + Long URL (Shlink)",
    "bitly": "long_url (Bitly)",
}
_FOREIGN_TAG = re.compile(r"[^a-z0-9_-]+")


def detect_format(header: list[str]) -> str:
    """Which of :data:`CSV_FORMATS` a header row is; 400 ``INVALID_CSV`` naming
    them all for any other."""
    names = {name.strip() for name in header if name}
    if {"shortCode", "longUrl"} <= names or {"Short code", "Long URL"} <= names:
        return "shlink"
    if "longUrl" in names:
        return "lookup"
    if "long_url" in names:
        return "bitly"
    accepted = "; ".join(f"{name}: {columns}" for name, columns in CSV_FORMATS.items())
    raise _bad(
        "INVALID_CSV",
        f"the header row names no format this import knows; accepted: {accepted}",
    )


def foreign_tags(text: str) -> list[str]:
    """Another shortener's tags (split on ``|``, ``,`` or ``;``) as this API's: lower
    case, other characters as ``-``, at most 32 characters each and 10 in all."""
    tags: list[str] = []
    for raw in re.split(r"[|,;]", text):
        tag = _FOREIGN_TAG.sub("-", raw.strip().lower()).strip("-_")[:32]
        if tag and tag not in tags:
            tags.append(tag)
    return tags[:10]


def _foreign_body(row: dict[str, Any], kind: str) -> dict[str, Any]:
    """A create body from a Shlink or Bitly row: the destination, the tags, and for Shlink
    the short code kept as the alias when the alias rule can take it (else a new key).
    Titles, domains, dates and visit counts have no field here and are left out."""

    def cell(*names: str) -> str:
        for name in names:
            value = row.get(name)
            if isinstance(value, str) and value.strip():
                return value.strip()
        return ""

    body: dict[str, Any] = {"longUrl": cell("longUrl", "Long URL", "long_url")}
    tags = foreign_tags(cell("tags", "Tags"))
    if tags:
        body["tags"] = tags
    if kind == "shlink":
        code = cell("shortCode", "Short code")
        try:
            body["customAlias"] = validate_alias(code, ReservedWords())
        except AliasRejected:
            pass  # a code the alias rule refuses (its length, a generated key's shape)
    return body


def parse_import(text: str) -> list[dict[str, Any]]:
    """CSV rows → create bodies, in any of :data:`CSV_FORMATS` (told by the header row).
    This API's format: ``longUrl``; optional columns
    ``customAlias``, ``expiresAt``, ``maxClicks``, ``redirectType``, ``maxAge``, ``tags``
    (separated by ``;``), ``forwardQuery`` and ``forwardPath`` (``true``/``false``),
    ``domain`` (empty: the default one).
    Other columns (such as an export's ``key``) are ignored —
    keys are never reissued, so each row gets a new key unless it names an alias.
    Passwords are never exported (only their hashes exist), so they do not round-trip.
    Each item says its ``format``."""
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        header = reader.fieldnames
        if not header:
            raise _bad("INVALID_CSV", "the CSV needs a header row with a longUrl column")
        kind = detect_format(list(header))
        rows: list[dict[str, Any]] = []
        for row in reader:
            if len(rows) >= MAX_IMPORT_ROWS:
                raise _bad("TOO_MANY_ROWS", f"import at most {MAX_IMPORT_ROWS} rows at a time")
            rows.append(row)
    except csv.Error as exc:
        raise _bad("INVALID_CSV", f"the body is not valid CSV: {exc}") from None
    if kind != "lookup":
        return [{"body": _foreign_body(row, kind), "errors": [], "format": kind} for row in rows]
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
        if cell("domain"):
            body["domain"] = cell("domain")
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
        bodies.append({"body": body, "errors": problems, "format": kind})
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
    kind = bodies[0].get("format", "lookup") if bodies else None
    return {"created": created, "failed": len(results) - created, "rows": results, "format": kind}


__all__ = [
    "CSV_COLUMNS",
    "CSV_FORMATS",
    "MAX_IMPORT_ROWS",
    "detect_format",
    "export_csv",
    "foreign_tags",
    "import_rows",
    "parse_import",
]
