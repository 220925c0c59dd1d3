"""QR codes of short URLs: ``GET /v1/links/{key}/qr.png`` and ``qr.svg``.

The code carries the link's short URL on its own domain, in its owner's spelling of the
key (any spelling, and ``?domain=``, name the link). A deleted or expired link has none
(410 ``LINK_GONE``).
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

import segno
from fastapi import APIRouter, Depends, Query, Response

from lookup import errors
from lookup.kit.asgi import known_query_only
from lookup.shortener.domainshttp import DOMAIN_QUERY
from lookup.shortener.resolver import STORE_LANE

if TYPE_CHECKING:
    from lookup.shortener.app import Shortener

#: Per QR format: its media type and segno's options beyond scale and quiet zone.
_QR_FORMATS: dict[str, tuple[str, dict[str, Any]]] = {
    "png": ("image/png", {}),
    "svg": ("image/svg+xml", {"xmldecl": False}),
}


def _qr(shortener: Shortener, key: str) -> segno.QRCode:
    link = shortener.service.get(key)
    if link.is_tombstone:
        raise errors.Gone(f"the link {key!r} is {link.status.value.lower()}", code="LINK_GONE")
    return segno.make(shortener.views.short_url(link.key), error="m", micro=False)


async def qr_image(shortener: Shortener, key: str, scale: int, kind: str) -> Response:
    """The QR code of ``key``'s short URL as a ``kind`` image (cached for an hour)."""
    media_type, options = _QR_FORMATS[kind]
    qr = await STORE_LANE.run(_qr, shortener, key)
    out = io.BytesIO()
    qr.save(out, kind=kind, scale=scale, border=4, **options)
    return Response(
        out.getvalue(), media_type=media_type, headers={"Cache-Control": "public, max-age=3600"}
    )


def build_qr_router(shortener: Shortener, error_docs: dict[int | str, Any]) -> APIRouter:
    """The two QR routes bound to ``shortener`` (unknown query parameters refused)."""
    router = APIRouter(tags=["shortener"])
    stored = shortener.domains.stored

    @router.get(
        "/v1/links/{key}/qr.png",
        dependencies=[Depends(known_query_only)],
        response_class=Response,
        responses={200: {"content": {"image/png": {}}}, **error_docs},
        summary="QR code of the short URL (PNG)",
    )
    async def qr_png(
        key: str, scale: int = Query(8, ge=1, le=40), domain: str | None = DOMAIN_QUERY
    ) -> Response:
        return await qr_image(shortener, stored(key, domain), scale, "png")

    @router.get(
        "/v1/links/{key}/qr.svg",
        dependencies=[Depends(known_query_only)],
        response_class=Response,
        responses={200: {"content": {"image/svg+xml": {}}}, **error_docs},
        summary="QR code of the short URL (SVG)",
    )
    async def qr_svg(
        key: str, scale: int = Query(8, ge=1, le=40), domain: str | None = DOMAIN_QUERY
    ) -> Response:
        return await qr_image(shortener, stored(key, domain), scale, "svg")

    return router


__all__ = ["build_qr_router", "qr_image"]
