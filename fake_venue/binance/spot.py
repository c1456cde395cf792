"""Binance spot: ``/api/v3``, streams at the root, contiguous ids, everything padded to 8 decimals.

Sample event (raw form)::

    {"e":"depthUpdate","E":1672515782136,"s":"BNBBTC","U":157,"u":160,
     "b":[["0.00240000","10.00000000"]],"a":[["0.00260000","0.00000000"]]}

Snapshot: ``{"lastUpdateId":1027024,"bids":[["4.00000000","431.00000000"]],"asks":[...]}``
(no ``E``/``T``). Any ``limit`` from 1 to 5000 is served; above 5000 it is cut to 5000.
"""

from __future__ import annotations

import random
import re
from typing import Any

from fake_venue.binance.dialect import BinanceDialect, bad_parameter, parse_int
from fake_venue.binance.streams import StreamForm
from fake_venue.config import BinanceLimits
from fake_venue.market.decimal_text import LevelStyle, fixed
from fake_venue.market.markets import ContiguousIds, IdSource, Market, Update
from fake_venue.market.symbols import SymbolSpec, spot_catalogue

DECIMALS = 8
MAX_DEPTH = 5000
_STRING_ID = re.compile(r"[A-Za-z0-9_-]{1,36}")
_INT64 = 2**63


def _text(units: int, decimals: int) -> str:
    return fixed(units * 10 ** (DECIMALS - decimals), DECIMALS)


class SpotDialect(BinanceDialect):
    venue = "spot"
    rest_prefix = "/api/v3"
    ws_prefix = ""
    forms = (StreamForm("@depth", 1000), StreamForm("@depth@100ms", 0))
    exchange_info_weight = 20
    order_types = ("LIMIT", "LIMIT_MAKER", "MARKET", "STOP_LOSS_LIMIT", "TAKE_PROFIT_LIMIT")

    @property
    def limits(self) -> BinanceLimits:
        return self.config.spot

    def catalogue(self) -> list[SymbolSpec]:
        return spot_catalogue(self.config.spot_symbols, self.config.unicode_symbol)

    def id_source(self, rng: random.Random) -> IdSource:
        return ContiguousIds()

    def style_for(self, spec: SymbolSpec) -> LevelStyle:
        return LevelStyle(
            price_factor=spec.tick_mult * 10 ** (DECIMALS - spec.price_decimals),
            price_decimals=DECIMALS,
            qty_factor=10 ** (DECIMALS - spec.qty_decimals),
            qty_decimals=DECIMALS,
            trim=False,
            zero_qty=fixed(0, DECIMALS),
        )

    def depth_limit(self, raw: str | None) -> tuple[int, int]:
        limit = 100 if raw is None else parse_int(raw, "limit")
        if limit < 1:
            raise bad_parameter("limit")
        limit = min(limit, MAX_DEPTH)
        weight = 5 if limit <= 100 else 25 if limit <= 500 else 50 if limit <= 1000 else 250
        return limit, weight

    def event_fields(self, market: Market, event: Update, event_time: int) -> dict[str, Any]:
        return {
            "e": "depthUpdate",
            "E": event_time,
            "s": market.name,
            "U": event.first_id,
            "u": event.last_id,
        }

    def snapshot_fields(self, market: Market, last_id: int, now_ms: int) -> dict[str, Any]:
        return {"lastUpdateId": last_id}

    def symbol_info(self, spec: SymbolSpec, status: str) -> dict[str, Any]:
        tick = spec.tick_mult
        return {
            "symbol": spec.name,
            "status": status,
            "baseAsset": spec.base,
            "baseAssetPrecision": DECIMALS,
            "quoteAsset": spec.quote,
            "quotePrecision": DECIMALS,
            "quoteAssetPrecision": DECIMALS,
            "baseCommissionPrecision": DECIMALS,
            "quoteCommissionPrecision": DECIMALS,
            "orderTypes": list(self.order_types),
            "icebergAllowed": True,
            "ocoAllowed": True,
            "otoAllowed": True,
            "quoteOrderQtyMarketAllowed": True,
            "allowTrailingStop": True,
            "cancelReplaceAllowed": True,
            "isSpotTradingAllowed": True,
            "isMarginTradingAllowed": False,
            "filters": [
                {
                    "filterType": "PRICE_FILTER",
                    "minPrice": _text(tick, spec.price_decimals),
                    "maxPrice": _text(tick * 10**9, spec.price_decimals),
                    "tickSize": _text(tick, spec.price_decimals),
                },
                {
                    "filterType": "LOT_SIZE",
                    "minQty": _text(1, spec.qty_decimals),
                    "maxQty": _text(9 * 10 ** (spec.qty_decimals + 6), spec.qty_decimals),
                    "stepSize": _text(1, spec.qty_decimals),
                },
            ],
            "permissions": [],
            "permissionSets": [["SPOT"]],
            "defaultSelfTradePreventionMode": "EXPIRE_MAKER",
            "allowedSelfTradePreventionModes": ["EXPIRE_TAKER", "EXPIRE_MAKER", "EXPIRE_BOTH"],
        }

    def exchange_info_head(self, weight_limit: int) -> dict[str, Any]:
        return {
            "timezone": "UTC",
            "rateLimits": [
                {
                    "rateLimitType": "REQUEST_WEIGHT",
                    "interval": "MINUTE",
                    "intervalNum": 1,
                    "limit": weight_limit,
                },
                {"rateLimitType": "ORDERS", "interval": "SECOND", "intervalNum": 10, "limit": 100},
                {"rateLimitType": "ORDERS", "interval": "DAY", "intervalNum": 1, "limit": 200000},
                {"rateLimitType": "RAW_REQUESTS", "interval": "MINUTE", "intervalNum": 5, "limit": 61000},
            ],
            "exchangeFilters": [],
        }

    def valid_request_id(self, value: object) -> bool:
        """Spot ids: a signed 64-bit integer, up to 36 alphanumeric characters, or null."""
        if value is None:
            return True
        if isinstance(value, bool):
            return False
        if isinstance(value, int):
            return -_INT64 <= value < _INT64
        return isinstance(value, str) and _STRING_ID.fullmatch(value) is not None
