"""One Binance venue's URL map: its market streams under the dialect's WS prefix, its REST routes
under the REST prefix."""

from __future__ import annotations

from aiohttp import web

from fake_venue.binance import ws
from fake_venue.binance.rest import BinanceRest
from fake_venue.binance.venue import BinanceVenue


def binance_routes(venue: BinanceVenue) -> list[web.RouteDef]:
    prefix = venue.dialect.ws_prefix

    async def raw(request: web.Request) -> web.StreamResponse:
        path = request.match_info.get("streams", "")
        return await ws.serve(venue, request, [s for s in path.split("/") if s], combined=False)

    async def combined(request: web.Request) -> web.StreamResponse:
        names = request.query.get("streams", "")
        return await ws.serve(venue, request, [s for s in names.split("/") if s], combined=True)

    return [
        web.get(f"{prefix}/ws", raw),
        web.get(f"{prefix}/ws/{{streams:.+}}", raw),
        web.get(f"{prefix}/stream", combined),
        *BinanceRest(venue).routes(),
    ]
