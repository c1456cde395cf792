"""Kraken's URL map: the v2 WebSocket at ``/v2`` and the REST pair list."""

from __future__ import annotations

from aiohttp import web

from fake_venue.kraken import ws
from fake_venue.kraken.venue import KrakenVenue


def kraken_routes(venue: KrakenVenue) -> list[web.RouteDef]:
    async def stream(request: web.Request) -> web.StreamResponse:
        return await ws.serve(venue, request)

    async def pairs(request: web.Request) -> web.Response:
        return ws.asset_pairs(venue)

    return [web.get("/v2", stream), web.get("/0/public/AssetPairs", pairs)]
