"""Kraken's books on WebSocket v2: each subscriber's view of its depth, and the checksum.

Theory of operation. A subscriber at depth D holds the top D levels of each side. Each update is
turned, once per depth in use, into the message that moves that view on: every level of the new
view that is new or changed, and a removal for every level of the old view that left the book. A
level merely pushed past D gets nothing (the client trims), and one that comes back into view is
sent again whole. The views are the venue's record of what each depth was told; they move on even
when a fault loses the message. Every message carries the CRC32 of the book's top 10
(``checksum.py``), which the corrupt-checksum fault spoils for the next messages of a symbol::

    {"channel":"book","type":"update","data":[{"symbol":"BTC/USD",
      "bids":[{"price":67040.1,"qty":0.50000000}],"asks":[{"price":67040.2,"qty":0}],
      "checksum":2439117997,"timestamp":"2024-03-12T10:38:50.796132Z"}]}

Prices and quantities are JSON numbers at the pair's fixed precision, trailing zeros kept; a
removal's quantity is ``0``. ``timestamp`` (microseconds) is the update's time, at least a
millisecond after the symbol's previous one, so the truth can be asked for by the millisecond a
client saw; a snapshot carries the time of the book's latest update.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import orjson
from aiohttp import web

from fake_venue.config import VenueConfig
from fake_venue.kraken.checksum import book_checksum
from fake_venue.market.decimal_text import LevelStyle
from fake_venue.market.markets import Market, Markets, Sequence, Update
from fake_venue.market.scheduler import Scheduler
from fake_venue.market.symbols import SymbolSpec, kraken_catalogue
from fake_venue.server.book_stream import BookStreamVenue
from fake_venue.server.connection import Connection
from fake_venue.server.ws_frames import text_frame

DEPTHS = (10, 25, 100, 500, 1000)
Levels = list[tuple[int, int]]
View = tuple[Levels, Levels]
"""Bids and asks, best first, as ``(tick, qty)``."""


def rfc3339_us(t_ns: int) -> str:
    seconds, fraction = divmod(t_ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{fraction // 1000:06d}Z"


def style_for(spec: SymbolSpec) -> LevelStyle:
    return LevelStyle(spec.tick_mult, spec.price_decimals, 1, spec.qty_decimals, trim=False, zero_qty="0")


class KrakenConnection(Connection):
    """A v2 connection: the depth each of its books is subscribed at."""

    def __init__(
        self, conn_id: int, ws: web.WebSocketResponse, transport: asyncio.Transport, slow: int
    ) -> None:
        super().__init__(conn_id, "kraken", ws, transport, slow)
        self.books: dict[str, int] = {}
        self.lose_next = 0
        """Book messages still to be lost, snapshots included (the lose-message fault)."""

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "books": dict(self.books)}

    def send_json(self, message: dict[str, Any]) -> None:
        self.send(text_frame(orjson.dumps(message)))

    def send_book(self, frame: bytes) -> bool:
        """Send a book message (unless a fault loses it)."""
        if self.lose_next > 0:
            self.lose_next -= 1
            return False
        self.send(frame)
        return True


class KrakenVenue(BookStreamVenue[KrakenConnection, dict[int, bytes]]):
    """``wss://ws.kraken.com/v2``'s book channel and ``GET /0/public/AssetPairs``."""

    name = "kraken"

    def __init__(self, config: VenueConfig, scheduler: Scheduler) -> None:
        super().__init__(config, scheduler)
        self.markets = Markets(
            "kraken", kraken_catalogue(config.kraken_symbols), Sequence(), style_for, config, self._activated,
            time_step_ns=1_000_000,
        )  # fmt: skip
        self.corrupt_next: dict[str, int] = {}
        """Per symbol, messages still to carry a wrong checksum (the corrupt-checksum fault)."""
        self._views: dict[tuple[str, int], View] = {}
        scheduler.every(config.heartbeat_s, self._heartbeats)

    # -- subscriptions

    def subscribe(self, conn: KrakenConnection, market: Market, depth: int) -> None:
        """Add the book at ``depth``: the answer has been sent; the snapshot follows now."""
        conn.books[market.name] = depth
        self.listen(conn, market.name)
        view = self._view(market, depth)
        self._views[(market.name, depth)] = view
        data = self._data(market, view, book_checksum(market), market.last_t_ns)
        conn.send_book(text_frame(orjson.dumps({"channel": "book", "type": "snapshot", "data": [data]})))

    def unsubscribe(self, conn: KrakenConnection, name: str) -> int | None:
        """Drop the book; return the depth it had (None: it was not subscribed)."""
        depth = conn.books.pop(name, None)
        if depth is not None:
            self.unlisten(conn, name)
            self._forget_unused(name)
        return depth

    def unregister(self, conn: KrakenConnection) -> None:
        super().unregister(conn)
        for name in list(conn.books):
            self._forget_unused(name)

    # -- the update path (see ``book_stream``)

    def encode(self, market: Market, update: Update) -> dict[int, bytes]:
        checksum = book_checksum(market)
        left = self.corrupt_next.get(market.name, 0)
        if left:
            checksum ^= 0x5A5A5A5A
            self.corrupt_next[market.name] = left - 1
        out: dict[int, bytes] = {}
        for depth in {conn.books[market.name] for conn in self.listeners_of(market.name)}:
            old = self._views.get((market.name, depth))
            new = self._view(market, depth)
            self._views[(market.name, depth)] = new
            if old is None:
                continue
            moved = (self._moved(old[0], new[0], market, True), self._moved(old[1], new[1], market, False))
            data = self._data(market, moved, checksum, update.t_ns)
            out[depth] = text_frame(orjson.dumps({"channel": "book", "type": "update", "data": [data]}))
        return out

    def deliver(self, market: Market, out: dict[int, bytes], conns: list[KrakenConnection]) -> int:
        sent = 0
        for conn in conns:
            frame = out.get(conn.books.get(market.name, 0))
            if frame is None or (conn.skip and conn.take_skip(market.name)):
                continue
            sent += conn.send_book(frame)
        return sent

    # -- REST

    def asset_pairs(self) -> dict[str, Any]:
        """``GET /0/public/AssetPairs``: every pair, under the v1 names REST keeps (``XBT/USD``)."""
        result = {}
        for name, spec in self.markets.specs.items():
            base, quote = _V1_NAMES.get(spec.base, spec.base), _V1_NAMES.get(spec.quote, spec.quote)
            status = self.markets.statuses[name]
            result[base + quote] = {
                "altname": base + quote,
                "wsname": f"{base}/{quote}",
                "base": base,
                "quote": quote,
                "pair_decimals": spec.price_decimals,
                "lot_decimals": spec.qty_decimals,
                "status": "online" if status == "TRADING" else status.lower(),
            }
        return {"error": [], "result": result}

    def tend(self, now: float) -> None:
        for conn in list(self.connections.values()):
            conn.tend(now, 0.0, float("inf"), self.max_connection_age_s)

    # -- helpers

    @staticmethod
    def _view(market: Market, depth: int) -> View:
        return market.book.bids.levels(depth), market.book.asks.levels(depth)

    @staticmethod
    def _moved(old: Levels, new: Levels, market: Market, bids: bool) -> Levels:
        """What moves a side's view from ``old`` to ``new`` (module docstring)."""
        side = market.book.side(bids)
        known = dict(old)
        shown = {tick for tick, _ in new}
        gone = [(tick, 0) for tick, _ in old if tick not in shown and side.get(tick) == 0]
        return gone + [(tick, qty) for tick, qty in new if known.get(tick) != qty]

    @staticmethod
    def _data(market: Market, view: View, checksum: int, t_ns: int) -> dict[str, Any]:
        style = market.style

        def levels(side: Levels) -> list[dict[str, orjson.Fragment]]:
            return [{"price": orjson.Fragment(style.price(tick)), "qty": orjson.Fragment(style.qty(qty))}
                    for tick, qty in side]  # fmt: skip

        return {
            "symbol": market.name,
            "bids": levels(view[0]),
            "asks": levels(view[1]),
            "checksum": checksum,
            "timestamp": rfc3339_us(t_ns),
        }

    def _forget_unused(self, name: str) -> None:
        in_use = {conn.books[name] for conn in self.listeners_of(name) if name in conn.books}
        for depth in DEPTHS:
            if depth not in in_use:
                self._views.pop((name, depth), None)

    def _heartbeats(self) -> None:
        beat = text_frame(b'{"channel":"heartbeat"}')
        for conn in self.connections.values():
            if conn.books:
                conn.send(beat)


_V1_NAMES = {"BTC": "XBT", "DOGE": "XDG"}
"""Assets REST and WebSocket v1 name differently from v2."""
