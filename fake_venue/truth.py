"""``GET /_fake/book``: the venue's true book as of an update id, for tests to compare against.

Not part of any venue's API. ``venue`` is spot, futures, alpaca, okx, bybit, bybit-linear, kraken
or coinbase; ``symbol`` as the venue writes it; ``update_id`` (default: the latest) means "after
every update whose last id is at most N", so a client that applied a snapshot and diffs up to ``u``
asks for ``u``; ``limit`` keeps the top L levels a side. OKX and Bybit ids are those on the wire
(``seqId``, ``u``) since their last restart. Alpaca, Kraken and Coinbase messages carry no ids, so
for them the id is a private per-symbol sequence reported here only, and the state can be asked for
by the time of a message instead: Alpaca's ``t`` (``t=2024-03-12T10:38:50.79613221Z``), or for any
venue ``at_ms``, the millisecond a client saw (Kraken and Coinbase stamp a symbol's updates at
least a millisecond apart, so each millisecond names one state). Levels are written exactly as the
venue writes them.

Answers 404 for an unknown symbol or an id that never existed, 410 for an id that fell out of the
kept history (``history_*`` settings).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from aiohttp import web

from fake_venue.alpaca.venue import AlpacaVenue, rfc3339_ns
from fake_venue.chained.venue import ChainedVenue
from fake_venue.market.history import StateUnavailable
from fake_venue.registry import Venue


def parse_rfc3339_ns(text: str) -> int:
    """``2024-03-12T10:38:50.79613221Z`` -> nanoseconds since the epoch (UTC ``Z`` form only)."""
    if not text.endswith("Z"):
        raise ValueError("expected a UTC time ending in Z")
    whole, _, fraction = text[:-1].partition(".")
    if len(fraction) > 9 or (fraction and not fraction.isdigit()):
        raise ValueError("bad fraction of a second")
    seconds = dt.datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=dt.UTC).timestamp()
    return int(seconds) * 1_000_000_000 + int(fraction.ljust(9, "0") or 0)


def truth_handler(venues: dict[str, Venue]) -> web.RouteDef:
    async def book(request: web.Request) -> web.Response:
        query = request.query
        venue = venues.get(query.get("venue", ""))
        if venue is None:
            return _problem(400, f"venue must be one of {sorted(venues)}")
        market = venue.markets.get(query.get("symbol", ""))
        if market is None:
            return _problem(404, "no such symbol")
        try:
            limit = int(query["limit"]) if "limit" in query else None
            update_id = int(query["update_id"]) if "update_id" in query else market.last_id
            if isinstance(venue, ChainedVenue) and "update_id" in query:  # ids may have restarted lower
                update_id = venue.internal_id(market.name, update_id, market.last_id)
            if "t" in query:
                t_ns = parse_rfc3339_ns(query["t"])
                found = market.history.id_at_time(t_ns)
                if found is None:
                    return _problem(404, "no update carries that t")
                update_id = found
            if "at_ms" in query:
                at = market.history.id_at_ms(int(query["at_ms"]))
                if at is None:
                    return _problem(410, "that millisecond is out of the kept history")
                update_id = at
        except ValueError as error:
            return _problem(400, str(error))
        try:
            state = market.history.state_at(market.book, market.last_id, update_id)
        except StateUnavailable as error:
            return _problem(error.status, str(error))
        style = market.style
        wire_id = venue.wire_id(market.name, update_id) if isinstance(venue, ChainedVenue) else update_id
        body: dict[str, Any] = {
            "venue": venue.name,
            "symbol": market.name,
            "update_id": wire_id,
            "bids": style.levels(state.bids.levels(limit)),
            "asks": style.levels(state.asks.levels(limit)),
        }
        if isinstance(venue, AlpacaVenue):
            body["t"] = rfc3339_ns(market.history.t_of(update_id))
        return web.json_response(body)

    return web.get("/_fake/book", book)


def _problem(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)
