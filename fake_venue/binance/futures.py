"""Binance USD-M futures: ``/fapi/v1``, streams under ``/public``, ids with holes chained by ``pu``.

Sample event (raw form)::

    {"e":"depthUpdate","E":1700000000123,"T":1700000000120,"s":"BTCUSDT",
     "U":600859601193,"u":600859602861,"pu":600859600917,
     "b":[["67010.10","0.512"]],"a":[["67010.20","0"]]}

Numbers carry the symbol's own precision and a zero quantity is ``"0"``. Snapshots add ``E`` and
``T``. Depth ``limit`` must be one of 5, 10, 20, 50, 100, 500, 1000; the venue documents no answer
for other values, so this one rounds up to the next valid depth (anything above 1000 gets 1000).
"""

from __future__ import annotations

import bisect
import random
from typing import Any

from fake_venue.binance.dialect import BinanceDialect, bad_parameter, parse_int
from fake_venue.binance.streams import StreamForm
from fake_venue.config import BinanceLimits
from fake_venue.market.decimal_text import LevelStyle, fixed
from fake_venue.market.markets import IdSource, Market, SharedIds, Update
from fake_venue.market.symbols import SymbolSpec, futures_catalogue

DEPTHS = (5, 10, 20, 50, 100, 500, 1000)
WEIGHTS = (2, 2, 2, 2, 5, 10, 20)
_UINT64 = 2**64


class FuturesDialect(BinanceDialect):
    venue = "futures"
    rest_prefix = "/fapi/v1"
    ws_prefix = "/public"
    forms = (StreamForm("@depth", 250), StreamForm("@depth@500ms", 500), StreamForm("@depth@100ms", 0))
    exchange_info_weight = 1
    order_types = ("LIMIT", "MARKET", "STOP", "STOP_MARKET", "TAKE_PROFIT", "TAKE_PROFIT_MARKET")

    @property
    def limits(self) -> BinanceLimits:
        return self.config.futures

    def catalogue(self) -> list[SymbolSpec]:
        return futures_catalogue(self.config.futures_symbols)

    def id_source(self, rng: random.Random) -> IdSource:
        return SharedIds(rng)

    def style_for(self, spec: SymbolSpec) -> LevelStyle:
        return LevelStyle(
            price_factor=spec.tick_mult,
            price_decimals=spec.price_decimals,
            qty_factor=1,
            qty_decimals=spec.qty_decimals,
            trim=False,
            zero_qty="0",
        )

    def depth_limit(self, raw: str | None) -> tuple[int, int]:
        asked = 500 if raw is None else parse_int(raw, "limit")
        if asked < 1:
            raise bad_parameter("limit")
        index = min(bisect.bisect_left(DEPTHS, asked), len(DEPTHS) - 1)
        return DEPTHS[index], WEIGHTS[index]

    def event_fields(self, market: Market, event: Update, event_time: int) -> dict[str, Any]:
        return {
            "e": "depthUpdate",
            "E": event_time,
            "T": event.txn_ms,
            "s": market.name,
            "U": event.first_id,
            "u": event.last_id,
            "pu": event.prev_id,
        }

    def snapshot_fields(self, market: Market, last_id: int, now_ms: int) -> dict[str, Any]:
        return {"lastUpdateId": last_id, "E": now_ms, "T": min(market.last_txn_ms, now_ms)}

    def symbol_info(self, spec: SymbolSpec, status: str) -> dict[str, Any]:
        tick = spec.tick_mult
        return {
            "symbol": spec.name,
            "pair": spec.name.partition("_")[0],
            "contractType": spec.contract_type,
            "deliveryDate": spec.delivery_date_ms,
            "onboardDate": 1569398400000,
            "status": status,
            "maintMarginPercent": "2.5000",
            "requiredMarginPercent": "5.0000",
            "baseAsset": spec.base,
            "quoteAsset": spec.quote,
            "marginAsset": spec.quote,
            "pricePrecision": spec.price_decimals,
            "quantityPrecision": spec.qty_decimals,
            "baseAssetPrecision": 8,
            "quotePrecision": 8,
            "underlyingType": "COIN",
            "underlyingSubType": [],
            "triggerProtect": "0.0500",
            "liquidationFee": "0.012500",
            "marketTakeBound": "0.05",
            "filters": [
                {
                    "filterType": "PRICE_FILTER",
                    "minPrice": fixed(tick, spec.price_decimals),
                    "maxPrice": fixed(tick * 10**9, spec.price_decimals),
                    "tickSize": fixed(tick, spec.price_decimals),
                },
                {
                    "filterType": "LOT_SIZE",
                    "minQty": fixed(1, spec.qty_decimals),
                    "maxQty": fixed(10 ** (spec.qty_decimals + 6), spec.qty_decimals),
                    "stepSize": fixed(1, spec.qty_decimals),
                },
            ],
            "orderTypes": list(self.order_types),
            "timeInForce": ["GTC", "IOC", "FOK", "GTX", "GTD"],
        }

    def exchange_info_head(self, weight_limit: int) -> dict[str, Any]:
        return {
            "timezone": "UTC",
            "futuresType": "U_MARGINED",
            "rateLimits": [
                {
                    "rateLimitType": "REQUEST_WEIGHT",
                    "interval": "MINUTE",
                    "intervalNum": 1,
                    "limit": weight_limit,
                },
                {"rateLimitType": "ORDERS", "interval": "MINUTE", "intervalNum": 1, "limit": 1200},
                {"rateLimitType": "ORDERS", "interval": "SECOND", "intervalNum": 10, "limit": 300},
            ],
            "exchangeFilters": [],
            "assets": [{"asset": "USDT", "marginAvailable": True, "autoAssetExchange": "-10000"}],
        }

    def valid_request_id(self, value: object) -> bool:
        """Futures ids: an unsigned integer, and nothing else."""
        return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < _UINT64
