"""Alpaca's crypto asset list, the market catalog of ``alpaca-crypto``.

``GET {trading API}/v2/assets?asset_class=crypto`` with the ``APCA-API-KEY-ID`` /
``APCA-API-SECRET-KEY`` headers answers every crypto asset::

    [{"id": "276e2673-...", "class": "crypto", "exchange": "CRYPTO", "symbol": "BTC/USD",
      "name": "Bitcoin / US Dollar", "status": "active", "tradable": true, ...}]

A pair is tradable when it is ``active`` and ``tradable``; the catalog keeps the others with their
status so an unknown pair and a halted one get different answers. The stream has no snapshots.
"""

from __future__ import annotations

from typing import Final

import aiohttp
import orjson

from book_store.catalog import TRADING, MarketInfo
from ingest_nodes.core.errors import VenuePayloadError
from ingest_nodes.venues.credentials import Credential
from ingest_nodes.venues.market_list import MarketListClient

ASSETS_PATH: Final = "/v2/assets"


def parse_assets(body: bytes, exchange: str) -> list[MarketInfo]:
    """Every crypto pair of an asset list (entries of other classes are skipped)."""
    try:
        assets = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise VenuePayloadError(f"the asset list from {exchange} is not JSON") from exc
    if not isinstance(assets, list):
        raise VenuePayloadError(f"the asset list from {exchange} is not a list")
    markets = []
    for asset in assets:
        symbol = asset.get("symbol") if isinstance(asset, dict) else None
        if not isinstance(symbol, str) or asset.get("class", "crypto") != "crypto":
            continue
        status = asset.get("status")
        tradable = status == "active" and asset.get("tradable") is True
        base, _, quote = symbol.partition("/")
        label = TRADING if tradable else str(status or "inactive").upper()
        markets.append(MarketInfo(exchange, symbol, label, base, quote))
    return markets


def alpaca_markets(
    session: aiohttp.ClientSession, exchange: str, trading_url: str, credential: Credential | None
) -> MarketListClient:
    """The asset list of one Alpaca trading API, read with one of the node's keys."""
    url = trading_url.rstrip("/") + ASSETS_PATH
    if credential is None:
        return MarketListClient(
            session, exchange, url, parse_assets, unreadable="no key configured to read the asset list with"
        )
    headers = {
        "APCA-API-KEY-ID": credential.key_id.get_secret_value(),
        "APCA-API-SECRET-KEY": credential.secret.get_secret_value(),
    }
    return MarketListClient(
        session, exchange, url, parse_assets, params={"asset_class": "crypto"}, headers=headers
    )
