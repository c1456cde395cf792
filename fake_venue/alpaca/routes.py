"""Alpaca's URL map: the crypto stream at each location, and the trading API's asset list."""

from __future__ import annotations

from aiohttp import web

from fake_venue.alpaca import ws
from fake_venue.alpaca.venue import AlpacaVenue


def alpaca_routes(venue: AlpacaVenue) -> list[web.RouteDef]:
    async def stream(request: web.Request) -> web.StreamResponse:
        return await ws.serve(venue, request)

    async def assets(request: web.Request) -> web.Response:
        return ws.assets(venue, request)

    return [
        *(web.get(f"/v1beta3/crypto/{location}", stream) for location in ws.LOCATIONS),
        web.get("/v2/assets", assets),
    ]
