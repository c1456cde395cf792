"""Coinbase Advanced Trade's ``level2`` books: a snapshot, then updates, every message numbered.

Theory of operation. Each connection numbers every message it is sent (``sequence_num``), whatever
the channel: the subscription answers, the heartbeats and the books alike. An update of a product
is encoded once, as the message with a hole where its number goes, and each listener fills in its
own next number. The gap fault and the lose-message fault take messages away but not their numbers,
as a venue that numbers its connections would show a loss; the duplicate fault sends a message
again with its original number::

    {"channel":"l2_data","client_id":"","timestamp":"2024-03-12T10:38:50.796132141Z",
     "sequence_num":7,"events":[{"type":"update","product_id":"BTC-USD","updates":[
       {"side":"bid","event_time":"2024-03-12T10:38:50.796132141Z","price_level":"67030.05",
        "new_quantity":"0.5"}]}]}

Prices and sizes are strings at the product's precision; ``"0"`` removes a level. A snapshot is the
whole book (``level2`` has no depth limit). ``timestamp`` is the update's time, at least a
millisecond after the product's previous one, so the truth can be asked for by the millisecond a
client saw; a snapshot carries the time of the book's latest update.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from typing import Any

import orjson
from aiohttp import web

from fake_venue.config import VenueConfig
from fake_venue.market.decimal_text import LevelStyle, fixed
from fake_venue.market.markets import Market, Markets, Sequence, Update
from fake_venue.market.scheduler import Scheduler
from fake_venue.market.symbols import SymbolSpec, coinbase_catalogue
from fake_venue.server.book_stream import RECENT_UPDATES, BookStreamVenue
from fake_venue.server.connection import Connection
from fake_venue.server.ws_frames import text_frame

Numbered = tuple[bytes, bytes]
"""A message's bytes before and after its ``sequence_num``."""
EPOCH = "1970-01-01T00:00:00Z"


def rfc3339_ns(t_ns: int) -> str:
    seconds, fraction = divmod(t_ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{fraction:09d}Z"


def style_for(spec: SymbolSpec) -> LevelStyle:
    return LevelStyle(spec.tick_mult, spec.price_decimals, 1, spec.qty_decimals, trim=True, zero_qty="0")


def numbered(channel: str, t_ns: int, events: list[Any]) -> Numbered:
    head = b'{"channel":"%b","client_id":"","timestamp":"%b","sequence_num":' % (
        channel.encode(),
        rfc3339_ns(t_ns).encode(),
    )
    return head, b',"events":' + orjson.dumps(events) + b"}"


class CoinbaseConnection(Connection):
    """An Advanced Trade connection: its numbering, its channels, the faults on its messages."""

    def __init__(
        self, conn_id: int, ws: web.WebSocketResponse, transport: asyncio.Transport, slow: int
    ) -> None:
        super().__init__(conn_id, "coinbase", ws, transport, slow)
        self.sequence = 0
        """The number the next message takes."""
        self.products: list[str] = []
        self.heartbeats = False
        self.heartbeat_counter = 0
        self.lose_next = 0
        """Messages still to be lost with their numbers (the lose-message fault)."""
        self.recent: dict[str, deque[bytes]] = {}

    @property
    def subscribed(self) -> bool:
        return self.heartbeats or bool(self.products)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "products": list(self.products), "sequence": self.sequence}

    def send_numbered(self, message: Numbered, product: str | None = None) -> bool:
        """Send ``message`` with this connection's next number (unless a fault loses it)."""
        number = self.sequence
        self.sequence += 1
        if self.lose_next > 0:
            self.lose_next -= 1
            return False
        frame = text_frame(b"%b%d%b" % (message[0], number, message[1]))
        self.send(frame)
        if product is not None:
            recent = self.recent.get(product)
            if recent is None:
                recent = self.recent[product] = deque(maxlen=RECENT_UPDATES)
            recent.append(frame)
        return True

    def send_error(self, message: str, reason: str) -> None:
        self.send(text_frame(orjson.dumps({"type": "error", "message": message, "reason": reason})))


class CoinbaseVenue(BookStreamVenue[CoinbaseConnection, Numbered]):
    """``wss://advanced-trade-ws.coinbase.com`` and ``GET /api/v3/brokerage/market/products``."""

    name = "coinbase"

    def __init__(self, config: VenueConfig, scheduler: Scheduler) -> None:
        super().__init__(config, scheduler)
        self.markets = Markets(
            "coinbase", coinbase_catalogue(config.coinbase_symbols), Sequence(), style_for, config,
            self._activated, time_step_ns=1_000_000,
        )  # fmt: skip
        scheduler.every(config.heartbeat_s, self._heartbeats)

    # -- subscriptions

    def answer(self, conn: CoinbaseConnection, adding: list[str] | None = None) -> None:
        """The subscription set (with the products ``adding`` is about to add), numbered like
        everything else."""
        subscriptions: dict[str, list[str]] = {}
        if conn.products or adding:
            subscriptions["level2"] = [*conn.products, *(adding or [])]
        if conn.heartbeats:
            subscriptions["heartbeats"] = ["heartbeats"]
        conn.send_numbered(numbered("subscriptions", time.time_ns(), [{"subscriptions": subscriptions}]))

    def add_books(self, conn: CoinbaseConnection, markets: list[Market]) -> None:
        """Listen to ``markets`` (answered already): each one's snapshot goes out now."""
        for market in markets:
            conn.products.append(market.name)
            self.listen(conn, market.name)
            book = market.book
            levels = [*self._levels(market, book.bids.levels(), "bid", EPOCH),
                      *self._levels(market, book.asks.levels(), "offer", EPOCH)]  # fmt: skip
            event = {"type": "snapshot", "product_id": market.name, "updates": levels}
            conn.send_numbered(numbered("l2_data", market.last_t_ns, [event]), market.name)

    def drop_books(self, conn: CoinbaseConnection, names: list[str]) -> None:
        for name in names:
            if name in conn.products:
                conn.products.remove(name)
                self.unlisten(conn, name)

    # -- the update path (see ``book_stream``)

    def encode(self, market: Market, update: Update) -> Numbered:
        stamp = rfc3339_ns(update.t_ns)
        levels = [
            *self._levels(market, update.bids, "bid", stamp),
            *self._levels(market, update.asks, "offer", stamp),
        ]
        return numbered(
            "l2_data", update.t_ns, [{"type": "update", "product_id": market.name, "updates": levels}]
        )

    def deliver(self, market: Market, out: Numbered, conns: list[CoinbaseConnection]) -> int:
        sent = 0
        for conn in conns:
            if conn.skip and conn.take_skip(market.name):
                conn.sequence += 1  # lost on the way: the number is gone with it
            else:
                sent += conn.send_numbered(out, market.name)
        return sent

    def lose(self, market: Market, out: Numbered, conns: list[CoinbaseConnection]) -> None:
        for conn in conns:
            conn.sequence += 1

    def duplicate(self, market: Market, only: CoinbaseConnection | None, back: int = 0) -> int:
        """Send again, with its original number, the message ``back`` before each connection's latest."""
        sent = 0
        for conn in [only] if only else self.listeners_of(market.name):
            recent = conn.recent.get(market.name, ())
            if back < len(recent):
                conn.send(recent[-1 - back])
                sent += 1
        return sent

    # -- REST

    def products(self) -> dict[str, Any]:
        """``GET /api/v3/brokerage/market/products``: every spot product."""
        listed = []
        for name, spec in self.markets.specs.items():
            trading = self.markets.statuses[name] == "TRADING"
            listed.append({
                "product_id": name, "base_currency_id": spec.base, "quote_currency_id": spec.quote,
                "status": "online" if trading else "delisted", "trading_disabled": not trading,
                "is_disabled": False, "cancel_only": False, "product_type": "SPOT",
                "price_increment": fixed(spec.tick_mult, spec.price_decimals),
                "base_increment": fixed(1, spec.qty_decimals),
            })  # fmt: skip
        return {"products": listed, "num_products": len(listed)}

    def tend(self, now: float) -> None:
        timeout = self.config.coinbase_subscribe_timeout_s
        for conn in list(self.connections.values()):
            if not conn.subscribed and not conn.closing and now - conn.opened_at > timeout:
                conn.close(1000, "no subscription within the time limit")
            conn.tend(now, 0.0, float("inf"), self.max_connection_age_s)

    # -- helpers

    @staticmethod
    def _levels(market: Market, levels: list[tuple[int, int]], side: str, stamp: str) -> list[dict[str, str]]:
        style = market.style
        return [
            {
                "side": side,
                "event_time": stamp,
                "price_level": style.price(tick),
                "new_quantity": style.qty(qty),
            }
            for tick, qty in levels
        ]

    def _heartbeats(self) -> None:
        now_ns = time.time_ns()
        for conn in self.connections.values():
            if conn.heartbeats:
                conn.heartbeat_counter += 1
                event = {"current_time": rfc3339_ns(now_ns), "heartbeat_counter": str(conn.heartbeat_counter)}
                conn.send_numbered(numbered("heartbeats", now_ns, [event]))
