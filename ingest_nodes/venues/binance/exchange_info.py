"""Parse Binance ``exchangeInfo`` (spot and USD-M futures) into the market catalog's terms.

Sample (spot, trimmed)::

    {"timezone": "UTC", "serverTime": 1764500000000, "symbols": [
      {"symbol": "ETHBTC", "status": "TRADING", "baseAsset": "ETH", "quoteAsset": "BTC", "filters": [...]}]}

Futures lists ``"status"`` the same way (``TRADING``, ``PENDING_TRADING``, ``SETTLING``, ...), and
each symbol's ``"contractType"`` (``PERPETUAL``, ``CURRENT_QUARTER``, ``NEXT_QUARTER``, ...): a
symbol without one is spot.
"""

from __future__ import annotations

import orjson

from book_store.catalog import MarketInfo, contract_kind
from ingest_nodes.core.errors import VenuePayloadError


def parse_exchange_info(body: bytes, exchange: str) -> list[MarketInfo]:
    """Every listed symbol, whatever its status (the catalog keeps the status)."""
    try:
        symbols = orjson.loads(body)["symbols"]
        return [
            MarketInfo(exchange, s["symbol"], s.get("status") or s.get("contractStatus", ""),
                       s.get("baseAsset", ""), s.get("quoteAsset", ""), contract_kind(s.get("contractType")))
            for s in symbols
        ]  # fmt: skip
    except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
        raise VenuePayloadError(f"exchangeInfo from {exchange} is not readable: {exc!r}"[:200]) from exc
