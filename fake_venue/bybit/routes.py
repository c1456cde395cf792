"""Bybit's URL map for one category: its public WebSocket, instruments and order books.

Both categories share one REST host at the venue (``category`` picks one); here each category's
REST answers sit under a prefix of its own (``/bybit-spot``, ``/bybit-linear``) so the two fake
venues never claim the same path. The REST limit is the venue's: 600 requests in 5 s per IP, over
it 403 "access too frequent".
"""

from __future__ import annotations

import time
from collections import deque

from aiohttp import web

from fake_venue.bybit import ws
from fake_venue.bybit.venue import BybitVenue

REQUESTS_PER_WINDOW = 600
WINDOW_S = 5.0
MAX_LIMIT = 1000


def rest_prefix(category: str) -> str:
    return f"/bybit-{category}"


def bybit_routes(venue: BybitVenue) -> list[web.RouteDef]:
    asked: deque[float] = deque()
    prefix = rest_prefix(venue.category)

    async def stream(request: web.Request) -> web.StreamResponse:
        return await ws.serve(venue, request)

    def refused() -> web.Response | None:
        now = time.monotonic()
        while asked and asked[0] <= now - WINDOW_S:
            asked.popleft()
        if len(asked) >= REQUESTS_PER_WINDOW:
            return web.Response(status=403, text="403 Forbidden: access too frequent")
        asked.append(now)
        return None

    async def instruments(request: web.Request) -> web.Response:
        if (answer := refused()) is not None:
            return answer
        if request.query.get("category") != venue.category:
            return _error(10001, "params error: category")
        body = {"category": venue.category, "list": venue.instruments(), "nextPageCursor": ""}
        return _ok(body)

    async def orderbook(request: web.Request) -> web.Response:
        if (answer := refused()) is not None:
            return answer
        query = request.query
        limit = query.get("limit", "1" if venue.category == "spot" else "25")
        if query.get("category") != venue.category or not limit.isdigit() or not 1 <= int(limit) <= MAX_LIMIT:
            return _error(10001, "params error")
        market = venue.markets.get(query.get("symbol", ""))
        if market is None:
            return _error(10001, "params error: symbol invalid")
        return _ok(venue.book(market, int(limit)))

    return [
        web.get(f"/v5/public/{venue.category}", stream),
        web.get(f"{prefix}/v5/market/instruments-info", instruments),
        web.get(f"{prefix}/v5/market/orderbook", orderbook),
    ]


def _ok(result: object) -> web.Response:
    body = {
        "retCode": 0,
        "retMsg": "OK",
        "result": result,
        "retExtInfo": {},
        "time": time.time_ns() // 1_000_000,
    }
    return web.json_response(body)


def _error(code: int, msg: str) -> web.Response:
    body = {
        "retCode": code,
        "retMsg": msg,
        "result": {},
        "retExtInfo": {},
        "time": time.time_ns() // 1_000_000,
    }
    return web.json_response(body)
