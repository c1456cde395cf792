"""Coinbase Advanced Trade's product list (REST ``GET /api/v3/brokerage/market/products``), the
market catalog of ``coinbase``.

A public endpoint: no key, no JWT. Only spot products are asked for (``product_type=SPOT``)::

    {"products": [{"product_id": "BTC-USD", "base_currency_id": "BTC", "quote_currency_id": "USD",
      "status": "online", "trading_disabled": false, "is_disabled": false, "cancel_only": false,
      "product_type": "SPOT", ...}], "num_products": 1}

A product is tradable when its ``status`` is ``online`` and neither ``trading_disabled`` nor
``is_disabled`` nor ``cancel_only`` is set; the others are kept with their status, upper-cased.

A product may be another name of one book: ``alias`` is "the product id for the corresponding
unified book" (BTC-USDC's is ``BTC-USD``), and that product's ``alias_to`` names its aliases
(``["BTC-USDC"]``); a product that is no alias has ``"alias": ""``. The alias is kept in the
market's row (``MarketInfo.alias``) when it names another product of the same list that is no
alias itself (the unified book), so a consolidated book that holds both never counts the book
twice, and the node subscribes the alias under the book's name (the WebSocket labels an alias's
events with the book's product id; ``runtime/connection.py``). ``alias_to`` says the same from the
other side and is not needed.
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
    listed = [p for p in products if isinstance(p, dict) and isinstance(p.get("product_id"), str)]
    books = {product["product_id"] for product in listed if not product.get("alias")}
    markets = []
    for product in listed:
        symbol = product["product_id"]
        status = str(product.get("status") or "unknown")
        stopped = next((flag for flag in _STOPPED if product.get(flag) is True), None)
        label = TRADING if status == "online" and stopped is None else (stopped or status).upper()
        base = str(product.get("base_currency_id") or symbol.partition("-")[0])
        quote = str(product.get("quote_currency_id") or symbol.partition("-")[2])
        named = product.get("alias")
        alias = named if isinstance(named, str) and named != symbol and named in books else ""
        markets.append(MarketInfo(exchange, symbol, label, base, quote, alias=alias))
    return markets
