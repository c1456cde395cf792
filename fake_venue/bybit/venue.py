"""Bybit's order books, one venue per category: contiguous ``u``, restarts at ``u`` = 1, REST books.

Every symbol numbers its messages: ``u`` is the previous one's + 1, and ``seq`` (the matching
engine's cross sequence) grows with every change. A subscriber of ``orderbook.{depth}.{symbol}``
gets a ``snapshot`` of the best ``depth`` levels, then ``delta`` messages. When the venue's service
restarts it sends every listener a new snapshot whose ``u`` is 1, and counts on from there; it may
also send a snapshot at any other time. Levels are ``[price, size]``, size "0" deletes::

    {"topic":"orderbook.1000.BTCUSDT","type":"delta","ts":1764500000123,"data":{"s":"BTCUSDT",
     "b":[["67000.1","0.52"]],"a":[],"u":401,"seq":7700000401},"cts":1764500000121}
"""

from __future__ import annotations

import random
import time
from typing import Any

import orjson

from fake_venue.chained.venue import ChainedVenue
from fake_venue.config import VenueConfig
from fake_venue.market.book import Levels
from fake_venue.market.decimal_text import LevelStyle, fixed
from fake_venue.market.markets import Market, Update
from fake_venue.market.scheduler import Scheduler
from fake_venue.market.symbols import TRADING, SymbolSpec, bybit_catalogue

DEPTHS = (1, 50, 200, 1000)
QUIET_CLOSE_S = 600.0
SEQ_FACTOR = 7


class BybitIds:
    """Per symbol, ``u`` is contiguous: every message is the previous one's + 1."""

    def initial(self, rng: random.Random) -> int:
        return rng.randrange(10**6, 10**8)

    def next_range(self, last_id: int, rng: random.Random, span: int = 0) -> tuple[int, int]:
        return last_id + 1, last_id + 1  # one message, one id, however many changes it merges


def style_for(spec: SymbolSpec) -> LevelStyle:
    return LevelStyle(spec.tick_mult, spec.price_decimals, 1, spec.qty_decimals, trim=False, zero_qty="0")


class BybitVenue(ChainedVenue):
    """One category's public stream (``/v5/public/{category}``) and its REST market data."""

    quiet_close_s = QUIET_CLOSE_S

    def __init__(self, config: VenueConfig, scheduler: Scheduler, *, category: str) -> None:
        self.name = "bybit" if category == "spot" else f"bybit-{category}"
        self.category = category
        super().__init__(
            config, scheduler, bybit_catalogue(config.bybit_symbols, category), BybitIds(), style_for
        )

    def encode_update(self, market: Market, update: Update, depth: int) -> bytes:
        return self._push(market, "delta", depth, update.bids, update.asks, update.last_id)

    def encode_snapshot(self, market: Market, depth: int) -> bytes:
        book = market.book
        return self._push(
            market, "snapshot", depth, book.bids.levels(depth), book.asks.levels(depth), market.last_id
        )

    def restart_ids(self, market: Market) -> None:
        """The service restarts: ``u`` starts over at 1 with a snapshot to every listener."""
        self.restart_at(market.name, market.last_id, market.last_id - 1)
        self.resend_books(market, self.listeners_of(market.name))

    # -- REST -----------------------------------------------------------------------------------

    def instruments(self) -> list[dict[str, Any]]:
        """``GET /v5/market/instruments-info?category=...``."""
        listed = []
        for name, spec in self.markets.specs.items():
            status = self.markets.statuses[name]
            entry: dict[str, Any] = {
                "symbol": name,
                "baseCoin": spec.base,
                "quoteCoin": spec.quote,
                "status": "Trading" if status == TRADING else status.title(),
                "priceFilter": {"tickSize": fixed(spec.tick_mult, spec.price_decimals)},
                "lotSizeFilter": {"basePrecision": fixed(1, spec.qty_decimals)},
            }
            if self.category == "linear":
                entry["contractType"] = "LinearPerpetual"
            listed.append(entry)
        return listed

    def book(self, market: Market, limit: int) -> dict[str, Any]:
        """``GET /v5/market/orderbook``: the best ``limit`` levels a side, at the stream's ``u``."""
        book = market.book
        now_ms = time.time_ns() // 1_000_000
        return {
            "s": market.name,
            "b": market.style.levels(book.bids.levels(limit)),
            "a": market.style.levels(book.asks.levels(limit)),
            "ts": now_ms,
            "u": self.wire_id(market.name, market.last_id),
            "seq": market.last_id * SEQ_FACTOR,
            "cts": max(market.last_t_ns // 1_000_000, 1),
        }

    def _push(
        self,
        market: Market,
        kind: str,
        depth: int,
        bids: Levels,
        asks: Levels,
        last: int,
    ) -> bytes:
        ms = max(market.last_t_ns // 1_000_000, 1)
        style = market.style
        data = {
            "s": market.name,
            "b": style.levels(bids),
            "a": style.levels(asks),
            "u": self.wire_id(market.name, last),
            "seq": last * SEQ_FACTOR,
        }
        return orjson.dumps(
            {"topic": f"orderbook.{depth}.{market.name}", "type": kind, "ts": ms, "data": data, "cts": ms - 1}
        )
