"""Alpaca crypto order books: the symbols, who listens, and the ``"o"`` messages they get.

Theory of operation. Alpaca has no ids and no snapshots: a subscriber first gets the whole book as
one ``"r": true`` message, then diffs. Each update is encoded once as a JSON object and the same
bytes are queued on every listener; each connection wraps what it has queued in one JSON array per
loop turn (Alpaca batches data; control messages always travel alone in an array of one). Prices
and sizes are JSON numbers, written from the exact decimal text so no float ever rounds them::

    [{"T":"o","S":"BTC/USD","t":"2024-03-12T10:38:50.79613221Z",
      "b":[{"p":71859.53,"s":0.27994}],"a":[{"p":71939.7,"s":0}]}]

``t`` is RFC 3339 with up to nine fraction digits, trailing zeros dropped (as Go prints it), and
strictly increasing per symbol, so the truth endpoint can find a state by the ``t`` a client saw.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter, deque
from typing import Any

import orjson
from aiohttp import web

from fake_venue.config import VenueConfig
from fake_venue.market.book import Levels
from fake_venue.market.decimal_text import LevelStyle
from fake_venue.market.markets import Market, Markets, Sequence, Update
from fake_venue.market.scheduler import Scheduler
from fake_venue.market.symbols import SymbolSpec, alpaca_catalogue
from fake_venue.server.connection import Connection
from fake_venue.server.ws_frames import text_frame

CHANNELS = ("trades", "quotes", "orderbooks", "bars", "updatedBars", "dailyBars")
MAX_BATCH_BYTES = 1 << 20
RECENT_MESSAGES = 8


def rfc3339_ns(t_ns: int) -> str:
    seconds, fraction = divmod(t_ns, 1_000_000_000)
    text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    if fraction:
        text += "." + f"{fraction:09d}".rstrip("0")
    return text + "Z"


def style_for(spec: SymbolSpec) -> LevelStyle:
    return LevelStyle(spec.tick_mult, spec.price_decimals, 1, spec.qty_decimals, trim=True, zero_qty="0")


def encode_book_message(market: Market, t_ns: int, bids: Levels, asks: Levels, reset: bool) -> bytes:
    """One ``"o"`` object (not yet in its array)."""
    style = market.style
    message: dict[str, Any] = {
        "T": "o",
        "S": market.name,
        "t": rfc3339_ns(t_ns),
        "b": [_level(style, tick, qty) for tick, qty in bids],
        "a": [_level(style, tick, qty) for tick, qty in asks],
    }
    if reset:
        message["r"] = True
    return orjson.dumps(message)


def _level(style: LevelStyle, tick: int, qty: int) -> dict[str, orjson.Fragment]:
    return {"p": orjson.Fragment(style.price(tick)), "s": orjson.Fragment(style.qty(qty))}


class AlpacaConnection(Connection):
    """An Alpaca stream connection: its auth state, its channels and its batched data."""

    def __init__(
        self, conn_id: int, ws: web.WebSocketResponse, transport: asyncio.Transport, slow: int
    ) -> None:
        super().__init__(conn_id, "alpaca", ws, transport, slow)
        self.key: str | None = None
        self.channels: dict[str, list[str]] = {channel: [] for channel in CHANNELS}
        self._data: list[bytes] = []

    @property
    def authenticated(self) -> bool:
        return self.key is not None

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "authenticated": self.authenticated,
            "orderbooks": self.channels["orderbooks"],
        }

    def send_control(self, message: dict[str, Any]) -> None:
        self._batch_data()
        self.send(text_frame(orjson.dumps([message])))

    def send_error(self, code: int, msg: str) -> None:
        self.send_control({"T": "error", "code": code, "msg": msg})

    def send_data(self, message: bytes) -> None:
        if not self.closing:
            self._data.append(message)
            self.schedule_flush()

    def flush(self) -> None:
        self._batch_data()
        super().flush()

    def on_slow_client(self) -> None:
        """Alpaca says why before it disconnects (if the client ever reads that far)."""
        self._data.clear()
        self.transport.write(text_frame(orjson.dumps([{"T": "error", "code": 407, "msg": "slow client"}])))
        self.close(1008, "slow client", send_queued=False)

    def _batch_data(self) -> None:
        data, self._data = self._data, []
        batch: list[bytes] = []
        size = 0
        for message in data:
            if batch and size + len(message) > MAX_BATCH_BYTES:
                self.send(text_frame(b"[" + b",".join(batch) + b"]"))
                batch, size = [], 0
            batch.append(message)
            size += len(message) + 1
        if batch:
            self.send(text_frame(b"[" + b",".join(batch) + b"]"))


class AlpacaVenue:
    """The ``/v1beta3/crypto/us`` feed."""

    name = "alpaca"

    def __init__(self, config: VenueConfig, scheduler: Scheduler) -> None:
        self.config = config
        self.max_connection_age_s = config.max_connection_age_s
        self._scheduler = scheduler
        self.markets = Markets(
            "alpaca", alpaca_catalogue(config.alpaca_symbols), Sequence(), style_for, config, self._activated
        )
        self.connections: dict[int, AlpacaConnection] = {}
        self.keys_in_use: Counter[str] = Counter()
        self.events_generated = 0
        self.events_sent = 0
        self.connection_limit = config.alpaca_connection_limit
        self.symbol_limit = config.alpaca_symbol_limit
        self._listeners: dict[str, dict[AlpacaConnection, None]] = {}
        self._everything: dict[AlpacaConnection, None] = {}
        self._recent: dict[str, deque[bytes]] = {}

    def register(self, conn: AlpacaConnection) -> None:
        self.connections[conn.id] = conn

    def unregister(self, conn: AlpacaConnection) -> None:
        self.connections.pop(conn.id, None)
        if conn.key is not None:
            self.keys_in_use[conn.key] -= 1
        self.set_books(conn, [])

    def set_books(self, conn: AlpacaConnection, symbols: list[str]) -> list[str]:
        """Make ``symbols`` the connection's order-book set; return the ones it did not have."""
        before = set(conn.channels["orderbooks"])
        conn.channels["orderbooks"] = symbols
        for symbol in before - set(symbols):
            listeners = self._everything if symbol == "*" else self._listeners.get(symbol, {})
            listeners.pop(conn, None)
        added = [symbol for symbol in symbols if symbol not in before]
        for symbol in added:
            if symbol == "*":
                self._everything[conn] = None
            else:
                self._listeners.setdefault(symbol, {})[conn] = None
        return added

    def listeners_of(self, symbol: str | None) -> list[AlpacaConnection]:
        if symbol is None:
            return sorted(self.connections.values(), key=lambda conn: conn.id)
        found = {**self._listeners.get(symbol, {}), **self._everything}
        return sorted(found, key=lambda conn: conn.id)

    def emit(self, market: Market) -> None:
        self.send_update(market, market.step())

    def send_update(self, market: Market, update: Update) -> None:
        self.events_generated += 1
        if market.skip_next > 0 or market.withholding(update):
            market.skip_next = max(market.skip_next - 1, 0)
            return
        self.send(market, update)

    def send(self, market: Market, update: Update) -> None:
        """Send an update made earlier (or just now) to the symbol's listeners."""
        message = encode_book_message(market, update.t_ns, update.bids, update.asks, reset=False)
        recent = self._recent.get(market.name)
        if recent is None:
            recent = self._recent[market.name] = deque(maxlen=RECENT_MESSAGES)
        recent.append(message)
        self._deliver(market.name, message, self.listeners_of(market.name))

    def burst(self, market: Market, count: int) -> None:
        for _ in range(count):
            self.emit(market)

    def duplicate(self, market: Market, only: AlpacaConnection | None, back: int = 0) -> int:
        """Send again the message ``back`` messages before the latest; return how many were sent."""
        recent = self._recent.get(market.name, ())
        if back >= len(recent):
            return 0
        self._deliver(market.name, recent[-1 - back], [only] if only else self.listeners_of(market.name))
        return 1

    def reset(self, market: Market, conns: list[AlpacaConnection], count: int = 1) -> None:
        """Send the whole book (``r: true``) now; ``count`` > 1 is a storm: that many resets, each
        followed by one update."""
        for index in range(count):
            self._deliver(market.name, self._full_book(market), conns)
            if index + 1 < count:
                self.emit(market)

    def assets(self) -> list[dict[str, Any]]:
        """``GET /v2/assets?asset_class=crypto``: every listed pair, tradable while it trades."""
        return [
            {
                "id": f"fake-{index:08d}",
                "class": "crypto",
                "exchange": "CRYPTO",
                "symbol": name,
                "name": f"{spec.base} / {spec.quote}",
                "status": "active" if self.markets.statuses[name] == "TRADING" else "inactive",
                "tradable": self.markets.statuses[name] == "TRADING",
            }
            for index, (name, spec) in enumerate(self.markets.specs.items())
        ]

    def tend(self, now: float) -> None:
        for conn in list(self.connections.values()):
            late = now - conn.opened_at > self.config.alpaca_auth_timeout_s
            if not conn.authenticated and not conn.closing and late:
                conn.send_error(404, "auth timeout")
                conn.close(1008, "auth timeout")
            conn.tend(now, 0.0, float("inf"), self.max_connection_age_s)

    def _deliver(self, symbol: str, message: bytes, conns: list[AlpacaConnection]) -> None:
        for conn in conns:
            if conn.skip and conn.take_skip(symbol):
                continue
            conn.send_data(message)
            self.events_sent += 1

    def send_full_books(self, conn: AlpacaConnection, symbols: list[str]) -> None:
        """The first message of each newly subscribed book: the whole book, ``r: true``."""
        names = list(self.markets.specs) if "*" in symbols else symbols
        for name in names:
            market = self.markets.get(name)
            if market is not None:
                conn.send_data(self._full_book(market))

    @staticmethod
    def _full_book(market: Market) -> bytes:
        book = market.book
        return encode_book_message(
            market, market.last_t_ns, book.bids.levels(), book.asks.levels(), reset=True
        )

    def _activated(self, market: Market) -> None:
        self._scheduler.add(market, self)
