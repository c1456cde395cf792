"""Coinbase Advanced Trade's product list (REST ``GET /api/v3/brokerage/market/products``), the
market catalog of ``coinbase``.

A public endpoint: no key, no JWT. Only spot products are asked for (``product_type=SPOT``)::

    {"products": [{"product_id": "BTC-USD", "base_currency_id": "BTC", "quote_currency_id": "USD",
      "status": "online", "trading_disabled": false, "is_disabled": false, "cancel_only": false,
      "product_type": "SPOT", ...}], "num_products": 1}

A product is tradable when its ``status`` is ``online`` and neither ``trading_disabled`` nor
``is_disabled`` nor ``cancel_only`` is set; the others are kept with their status, upper-cased.
"""

from __future__ import annotations

from typing import Final

import orjson

from book_store.catalog import TRADING, MarketInfo
from ingest_nodes.core.errors import VenuePayloadError

PRODUCTS_PATH: Final = "/api/v3/brokerage/market/products"
PRODUCTS_PARAMS: Final = {"product_type": "SPOT"}
_STOPPED: Final = ("trading_disabled", "is_disabled", "cancel_only")


def parse_products(body: bytes, exchange: str) -> list[MarketInfo]:
    """Every spot product the venue lists, whatever its status."""
    try:
        answer = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise VenuePayloadError(f"the product list from {exchange} is not JSON") from exc
    products = answer.get("products") if isinstance(answer, dict) else None
    if not isinstance(products, list):
        raise VenuePayloadError(f"the product list from {exchange} has no 'products' list")
    markets = []
    for product in products:
        symbol = product.get("product_id") if isinstance(product, dict) else None
        if not isinstance(symbol, str):
            continue
        status = str(product.get("status") or "unknown")
        stopped = next((flag for flag in _STOPPED if product.get(flag) is True), None)
        label = TRADING if status == "online" and stopped is None else (stopped or status).upper()
        base = str(product.get("base_currency_id") or symbol.partition("-")[0])
        quote = str(product.get("quote_currency_id") or symbol.partition("-")[2])
        markets.append(MarketInfo(exchange, symbol, label, base, quote))
    return markets
