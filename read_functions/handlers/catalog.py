"""``GET /v1/markets`` and ``GET /v1/exchanges``: what can be subscribed, from the catalog."""

from __future__ import annotations

from read_functions.app.messages import Request, Response, json_response
from read_functions.deps import Deps


async def list_markets(request: Request, deps: Deps) -> Response:
    exchange = request.query.get("exchange")
    exchanges = [exchange] if exchange else await deps.catalog.exchanges()
    markets = [m.to_json() for name in exchanges for m in await deps.catalog.markets(name)]
    return json_response({"markets": markets})


async def list_exchanges(request: Request, deps: Deps) -> Response:
    return json_response({"exchanges": await deps.catalog.exchanges()})
