"""Kraken's pair list (REST ``GET /0/public/AssetPairs``), the market catalog of ``kraken``.

No key is needed. The answer maps each pair's REST name to its details::

    {"error": [], "result": {"XXBTZUSD": {"altname": "XBTUSD", "wsname": "XBT/USD",
      "base": "XXBT", "quote": "ZUSD", "pair_decimals": 1, "lot_decimals": 8, "status": "online"}}}

``wsname`` is the name WebSocket v1 uses; WebSocket v2, which Ladder reads, writes bitcoin and
dogecoin as ``BTC`` and ``DOGE`` where v1 writes ``XBT`` and ``XDG`` (``BTC/USD``, not
``XBT/USD``: the venue's "Spot WebSocket" overview lists the symbol format among the v1/v2
differences), so the market is ``wsname`` with those two assets renamed. Pairs with no ``wsname``
(dark-pool books) have no public book and are skipped. ``status`` ``online`` is tradable; the
others (``cancel_only``, ``post_only``, ``limit_only``, ``reduce_only``, ``maintenance``,
``delisted``) are kept, upper-cased, so an unknown pair and a halted one get different answers.
"""

from __future__ import annotations

from typing import Final

import orjson

from book_store.catalog import TRADING, MarketInfo
from ingest_nodes.core.errors import VenuePayloadError

PAIRS_PATH: Final = "/0/public/AssetPairs"
V2_ASSET_NAMES: Final = {"XBT": "BTC", "XDG": "DOGE"}


def v2_symbol(wsname: str) -> tuple[str, str, str]:
    """``XBT/USD`` -> (``BTC/USD``, ``BTC``, ``USD``)."""
    base, _, quote = wsname.partition("/")
    base, quote = V2_ASSET_NAMES.get(base, base), V2_ASSET_NAMES.get(quote, quote)
    return f"{base}/{quote}", base, quote


def parse_asset_pairs(body: bytes, exchange: str) -> list[MarketInfo]:
    """Every pair with a public book, whatever its status."""
    try:
        answer = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise VenuePayloadError(f"the pair list from {exchange} is not JSON") from exc
    if not isinstance(answer, dict) or answer.get("error") or not isinstance(answer.get("result"), dict):
        errors = answer.get("error") if isinstance(answer, dict) else None
        raise VenuePayloadError(f"the pair list from {exchange} is not readable: {str(errors)[:120]}")
    markets = []
    for pair in answer["result"].values():
        wsname = pair.get("wsname") if isinstance(pair, dict) else None
        if not isinstance(wsname, str) or "/" not in wsname:
            continue
        symbol, base, quote = v2_symbol(wsname)
        status = str(pair.get("status", "online"))
        markets.append(
            MarketInfo(exchange, symbol, TRADING if status == "online" else status.upper(), base, quote)
        )
    return markets
