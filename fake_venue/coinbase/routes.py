"""Coinbase's URL map: the market-data WebSocket at ``/`` (as the venue's host serves it) and the
public product list."""

from __future__ import annotations

from aiohttp import web

from fake_venue.coinbase import ws
from fake_venue.coinbase.venue import CoinbaseVenue


def coinbase_routes(venue: CoinbaseVenue) -> list[web.RouteDef]:
    async def stream(request: web.Request) -> web.StreamResponse:
        return await ws.serve(venue, request)

    async def products(request: web.Request) -> web.Response:
        return ws.products(venue, request)

    return [web.get("/", stream), web.get("/api/v3/brokerage/market/products", products)]
