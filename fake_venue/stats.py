"""``GET /_fake/stats`` and ``GET /_fake/connections``: what the venue has done, for benchmarks and tests.

Stats per venue: open connections, active and listed symbols, updates made (``events_generated``),
events delivered to connections (``events_sent``, one per connection per event), the current rate,
``active_rate`` (the updates per second all active trading symbols make together, skew included)
and, for Binance, REST requests, weight used per client IP and the 429/418 refusals so far; for OKX
and Bybit, the connection attempts refused (429) and the subscribe requests (in all, and the most
one connection sent). The
connections list names each connection's id (what ``connection`` in a control request takes) and
its streams or order-book symbols.
"""

from __future__ import annotations

import time
from typing import Any

from aiohttp import web

from fake_venue.binance.venue import BinanceVenue
from fake_venue.chained.venue import ChainedVenue
from fake_venue.registry import Venue


def venue_stats(venue: Venue) -> dict[str, Any]:
    stats: dict[str, Any] = {
        "connections": len(venue.connections),
        "active_symbols": len(venue.markets.active),
        "listed_symbols": len(venue.markets.specs),
        "events_generated": venue.events_generated,
        "events_sent": venue.events_sent,
        "rate": venue.markets.motion.rate,
        "active_rate": sum(m.effective_rate for m in venue.markets.active.values() if m.trading),
    }
    if isinstance(venue, BinanceVenue):
        weights = venue.weights
        stats.update(
            http_requests=venue.rest_requests,
            weight_limit=weights.limit,
            weight_used=weights.usage(time.time()),
            http_429=weights.refused_429,
            http_418=weights.refused_418,
        )
    if isinstance(venue, ChainedVenue):
        stats.update(
            refused_connects=venue.refused_connects,
            subscribe_requests=venue.subscribe_requests,
            max_requests_per_connection=venue.max_requests_per_connection,
        )
    return stats


def stats_routes(venues: dict[str, Venue]) -> list[web.RouteDef]:
    async def stats(request: web.Request) -> web.Response:
        per_venue = {name: venue_stats(venue) for name, venue in venues.items()}
        totals = {
            key: sum(entry[key] for entry in per_venue.values())
            for key in ("connections", "active_symbols", "events_generated", "events_sent")
        }
        totals["http_429"] = sum(entry.get("http_429", 0) for entry in per_venue.values())
        totals["http_418"] = sum(entry.get("http_418", 0) for entry in per_venue.values())
        return web.json_response({**totals, "venues": per_venue})

    async def connections(request: web.Request) -> web.Response:
        wanted = request.query.get("venue")
        symbol = request.query.get("symbol")
        listed: list[dict[str, Any]] = []
        for name, venue in venues.items():
            if wanted in (None, name):
                listed += [conn.describe() for conn in venue.listeners_of(symbol)]
        return web.json_response({"connections": listed})

    return [web.get("/_fake/stats", stats), web.get("/_fake/connections", connections)]
