"""``GET /v1/typeahead/insights``: the pick rates and zero-hit prefixes of
:mod:`~lookup.typeahead.insights`, on the single server's management app."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from fastapi import Query

from lookup.typeahead.insights import read_pick_report
from lookup.typeahead.manage import TAGS, canonical_market, unknown_market

if TYPE_CHECKING:
    from fastapi import FastAPI

    from lookup.typeahead.serving import SuggestService

__all__ = ["mount_insights"]


def mount_insights(api: FastAPI, service: SuggestService, data_dir: str | os.PathLike[str]) -> None:
    """``GET /v1/typeahead/insights?market=``: the last build's pick rates and the zero-hit
    prefixes counted since the server started."""

    @api.get(
        "/v1/typeahead/insights",
        tags=TAGS,
        summary="Pick rate per prefix (last build) and zero-hit prefixes (this server)",
    )
    def insights(market: str = Query("en-IN", max_length=20)) -> dict[str, Any]:
        market = canonical_market(market)
        known = service.known_markets()
        if market not in known:
            raise unknown_market(market, known)
        picks = read_pick_report(data_dir).get(market)
        return {
            "market": market,
            "picks": picks or {"searches": 0, "picked": 0, "pickRate": 0.0, "prefixes": []},
            "zeroHits": service.zero_hits.top(market),
            "zeroHitOverflow": service.zero_hits.overflow[market],
        }
