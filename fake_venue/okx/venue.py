"""OKX's books: ``seqId`` chains with holes, heartbeats for quiet books, restarts, REST books.

Every instrument numbers its own updates: ``seqId`` grows by any amount, and each update's
``prevSeqId`` is the ``seqId`` before it (a snapshot's is -1). A book with no update for
``heartbeat_s`` (the venue: about a minute) gets an update with empty sides whose ``prevSeqId`` and
``seqId`` are both the last ``seqId``. A restart of the ids (maintenance) is an update whose
``seqId`` is smaller than its ``prevSeqId``; later updates chain on from there. ``checksum`` is
always 0, as it is at the venue since 2026-06-23. Levels are ``[price, size, "0", orders]``::

    {"arg":{"channel":"books","instId":"BTC-USDT"},"action":"update","data":[{"asks":[["67000.1",
     "0.52","0","3"]],"bids":[],"ts":"1764500000123","checksum":0,"prevSeqId":9001,"seqId":9013}]}
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

import orjson

from fake_venue.chained.venue import ChainedConnection, ChainedVenue
from fake_venue.config import VenueConfig
from fake_venue.market.book import Levels
from fake_venue.market.decimal_text import LevelStyle, fixed
from fake_venue.market.markets import Market, Update
from fake_venue.market.scheduler import Scheduler
from fake_venue.market.symbols import TRADING, SymbolSpec, okx_catalogue

BOOKS_DEPTH = 400
HEARTBEAT_S = 60.0
QUIET_CLOSE_S = 30.0
SHUTDOWN_NOTICE_S = 2.0
SERVICE_UPGRADE = {
    "event": "notice",
    "code": "64008",
    "msg": "The connection will soon be closed for a service upgrade. Please reconnect.",
}


class OkxIds:
    """Per instrument, ``seqId`` grows by 1 to 40 an update (the venue's ids have holes)."""

    def initial(self, rng: random.Random) -> int:
        return rng.randrange(10**9, 9 * 10**9)

    def next_range(self, last_id: int, rng: random.Random, span: int = 0) -> tuple[int, int]:
        return last_id + 1, last_id + (span or 1 + rng.randrange(40))


def style_for(spec: SymbolSpec) -> LevelStyle:
    return LevelStyle(spec.tick_mult, spec.price_decimals, 1, spec.qty_decimals, trim=True, zero_qty="0")


class OkxVenue(ChainedVenue):
    """``/ws/v5/public`` (channel ``books``) and the market-data REST endpoints."""

    name = "okx"
    quiet_close_s = QUIET_CLOSE_S

    def __init__(self, config: VenueConfig, scheduler: Scheduler) -> None:
        super().__init__(config, scheduler, okx_catalogue(config.okx_symbols), OkxIds(), style_for)
        self.heartbeat_s = config.okx_heartbeat_s
        self._prev = -1
        """The wire ``prevSeqId`` of the update being sent."""
        self._restarting: dict[str, int] = {}
        """Per symbol, the wire offset from its next update on (a restart under way)."""

    def send(self, market: Market, update: Update) -> None:
        """A restart under way takes effect between the update's ``prevSeqId`` and its ``seqId``."""
        self._prev = self.wire_id(market.name, update.prev_id)
        restarting = self._restarting.pop(market.name, None)
        if restarting is not None:
            self.restart_at(market.name, update.last_id, restarting)
        super().send(market, update)

    def encode_update(self, market: Market, update: Update, depth: int) -> bytes:
        seq = self.wire_id(market.name, update.last_id)
        return self._push(market, "update", update.bids, update.asks, self._prev, seq)

    def encode_snapshot(self, market: Market, depth: int) -> bytes:
        book = market.book
        seq = self.wire_id(market.name, market.last_id)
        return self._push(market, "snapshot", book.bids.levels(depth), book.asks.levels(depth), -1, seq)

    def heartbeat(self, market: Market, depth: int) -> bytes | None:
        seq = self.wire_id(market.name, market.last_id)
        return self._push(market, "update", [], [], seq, seq)

    def restart_ids(self, market: Market) -> None:
        """The next update's ``seqId`` drops below its ``prevSeqId`` (at least to a tenth of it)."""
        internal = market.last_id
        wire = self.wire_id(market.name, internal)
        self._restarting[market.name] = internal - wire // 10

    def server_shutdown(self, conns: list[ChainedConnection]) -> None:
        """The notice 64008, and the close ``SHUTDOWN_NOTICE_S`` later (the venue says "soon")."""
        loop = asyncio.get_running_loop()
        for conn in conns:
            conn.send_text(orjson.dumps({**SERVICE_UPGRADE, "connId": f"{conn.id:08x}"}))
            loop.call_later(SHUTDOWN_NOTICE_S, conn.close, 1000, "service upgrade")

    # -- REST -----------------------------------------------------------------------------------

    def instruments(self, kind: str) -> list[dict[str, Any]]:
        """``GET /api/v5/public/instruments?instType=SPOT|SWAP``."""
        listed = []
        for name, spec in self.markets.specs.items():
            swap = name.endswith("-SWAP")
            if kind != ("SWAP" if swap else "SPOT"):
                continue
            status = self.markets.statuses[name]
            listed.append(
                {
                    "instType": kind,
                    "instId": name,
                    "baseCcy": "" if swap else spec.base,
                    "quoteCcy": "" if swap else spec.quote,
                    "uly": f"{spec.base}-{spec.quote}" if swap else "",
                    "settleCcy": spec.quote if swap else "",
                    "tickSz": fixed(spec.tick_mult, spec.price_decimals),
                    "lotSz": fixed(1, spec.qty_decimals),
                    "state": "live" if status == TRADING else status.lower(),
                }
            )
        return listed

    def book(self, market: Market, size: int) -> dict[str, Any]:
        """``GET /api/v5/market/books``: the best ``size`` levels a side and the ``seqId`` they are at."""
        book = market.book
        return {
            "asks": self._levels(market, book.asks.levels(size)),
            "bids": self._levels(market, book.bids.levels(size)),
            "ts": str(time.time_ns() // 1_000_000),
            "seqId": self.wire_id(market.name, market.last_id),
        }

    def _push(
        self,
        market: Market,
        action: str,
        bids: Levels,
        asks: Levels,
        prev: int,
        seq: int,
    ) -> bytes:
        data = {
            "asks": self._levels(market, asks),
            "bids": self._levels(market, bids),
            "ts": str(max(market.last_t_ns // 1_000_000, 1)),
            "checksum": 0,
            "prevSeqId": prev,
            "seqId": seq,
        }
        return orjson.dumps(
            {"arg": {"channel": "books", "instId": market.name}, "action": action, "data": [data]}
        )

    @staticmethod
    def _levels(market: Market, levels: Levels) -> list[list[str]]:
        style = market.style
        return [
            [style.price(tick), style.qty(qty), "0", str(1 + qty % 9 if qty else 0)] for tick, qty in levels
        ]
