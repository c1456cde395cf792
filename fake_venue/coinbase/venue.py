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
whole book (``level2`` has no depth limit).

Coinbase lists its USDC products as aliases of its USD books: ``BTC-USDC`` has ``"alias":
"BTC-USD"`` and ``BTC-USD`` has ``"alias_to": ["BTC-USDC"]``, one book under two product ids. So
does this venue (:data:`USDC_ALIASES`): a client subscribed to ``BTC-USDC`` gets ``BTC-USD``'s book,
every snapshot and update of it, labelled as the real venue labels them: by the book's own product
id, ``BTC-USD`` (the Advanced Trade docs: "-USDC product IDs other than USDT-USDC and EURC-USDC
return the same data as the matching -USD product"). A connection subscribed to both names gets
every message twice, once for each subscription, each with its own number, as the real venue is
reported to send "the same BTC-USD stream twice". ``timestamp`` is the update's time, at least a
millisecond after the product's previous one, so the truth can be asked for by the millisecond a
client saw; a snapshot carries the time of the book's latest update.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from typing import Any, Final

import orjson
from aiohttp import web

from fake_venue.config import VenueConfig
from fake_venue.market.book import Levels
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
USDC_ALIASES: Final = {"BTC-USDC": "BTC-USD"}
"""Products listed as another name of a USD book (when that book is listed), after every book."""


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
        self.aliases = {alias: book for alias, book in USDC_ALIASES.items() if book in self.markets.specs}
        """Alias product -> the product whose book it is."""
        self._aliases_of: dict[str, list[str]] = {}
        for alias, book in self.aliases.items():
            self._aliases_of.setdefault(book, []).append(alias)
        scheduler.every(config.heartbeat_s, self._heartbeats)

    def market_of(self, product: str) -> Market | None:
        """The market whose book ``product`` is (an alias's: the book it names); None: not listed."""
        return self.markets.get(self.aliases.get(product, product))

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

    def add_books(self, conn: CoinbaseConnection, products: list[tuple[str, Market]]) -> None:
        """Listen to ``products`` (answered already; each with the market whose book it is): each
        one's snapshot goes out now."""
        for product, market in products:
            conn.products.append(product)
            self.listen(conn, product)
            book = market.book
            levels = [*self._levels(market, book.bids.levels(), "bid", EPOCH),
                      *self._levels(market, book.asks.levels(), "offer", EPOCH)]  # fmt: skip
            event = {"type": "snapshot", "product_id": market.name, "updates": levels}
            conn.send_numbered(numbered("l2_data", market.last_t_ns, [event]), product)

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
        """To ``conns`` (the book's listeners), and as it is, labelled with the book's product id, to
        its aliases' listeners."""
        sent = self._deliver(market.name, out, conns)
        for alias in self._aliases_of.get(market.name, ()):
            sent += self._deliver(alias, out, self.listeners_of(alias))
        return sent

    def _deliver(self, product: str, out: Numbered, conns: list[CoinbaseConnection]) -> int:
        sent = 0
        for conn in conns:
            if conn.skip and conn.take_skip(product):
                conn.sequence += 1  # lost on the way: the number is gone with it
            else:
                sent += conn.send_numbered(out, product)
        return sent

    def lose(self, market: Market, out: Numbered, conns: list[CoinbaseConnection]) -> None:
        aliases = self._aliases_of.get(market.name, ())
        for conn in [*conns, *(c for alias in aliases for c in self.listeners_of(alias))]:
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
        """``GET /api/v3/brokerage/market/products``: every spot product, the aliases last."""
        listed = [self._product(name, name) for name in self.markets.specs]
        listed += [self._product(alias, book) for alias, book in self.aliases.items()]
        return {"products": listed, "num_products": len(listed)}

    def _product(self, product: str, book: str) -> dict[str, Any]:
        """``product``'s row; an alias (``product`` is not ``book``) has its own quote, ``USDC``."""
        spec = self.markets.specs[book]
        trading = self.markets.statuses[book] == "TRADING"
        return {
            "product_id": product, "base_currency_id": spec.base,
            "quote_currency_id": product.rpartition("-")[2] if product != book else spec.quote,
            "status": "online" if trading else "delisted", "trading_disabled": not trading,
            "is_disabled": False, "cancel_only": False, "product_type": "SPOT",
            "price_increment": fixed(spec.tick_mult, spec.price_decimals),
            "base_increment": fixed(1, spec.qty_decimals),
            "alias": book if product != book else "", "alias_to": self._aliases_of.get(product, []),
        }  # fmt: skip

    def tend(self, now: float) -> None:
        timeout = self.config.coinbase_subscribe_timeout_s
        for conn in list(self.connections.values()):
            if not conn.subscribed and not conn.closing and now - conn.opened_at > timeout:
                conn.close(1000, "no subscription within the time limit")
            conn.tend(now, 0.0, float("inf"), self.max_connection_age_s)

    # -- helpers

    @staticmethod
    def _levels(market: Market, levels: Levels, side: str, stamp: str) -> list[dict[str, str]]:
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
