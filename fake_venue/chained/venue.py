"""The part OKX and Bybit share: books sent whole on subscribe, then updates chained by id.

Theory of operation. A subscriber of a book first gets the book itself (the venue's *snapshot*,
its best ``depth`` levels a side), then every update as it is made, each carrying ids that chain it
to the one before (OKX ``prevSeqId`` -> ``seqId``, Bybit ``u`` + 1). Each update is encoded once per
depth its listeners asked for and the same bytes are queued on each of them. The updates carry
every change of the book, at any depth: a client that keeps only the snapshot's levels must not
trust what lies past its edge (the real venues may keep the window themselves; a client that is
right for this is right for that too).

Ids on the wire are the market's own ids less an offset per symbol: a venue whose ids *restart*
(OKX after maintenance, Bybit after a restart of its service) starts an epoch with a larger offset,
so the wire ids drop while the market's ids, and the history the truth endpoint reads, keep
growing. ``internal_id`` turns a wire id back, in the epoch it belongs to. A dialect says how
messages look (``encode_*``), what a restart sends, and whether quiet books get heartbeats.
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable
from typing import Any

from aiohttp import web

from fake_venue.config import VenueConfig
from fake_venue.market.decimal_text import LevelStyle
from fake_venue.market.markets import IdSource, Market, Markets, Update
from fake_venue.market.scheduler import Scheduler
from fake_venue.market.symbols import SymbolSpec
from fake_venue.server.connection import Connection, next_connection_id
from fake_venue.server.ws_frames import text_frame

RECENT_MESSAGES = 8


class ChainedConnection(Connection):
    """A connection with the books it subscribed (symbol -> depth) and its recent activity."""

    def __init__(
        self, conn_id: int, venue: str, ws: web.WebSocketResponse, transport: asyncio.Transport, slow: int
    ) -> None:
        super().__init__(conn_id, venue, ws, transport, slow)
        self.books: dict[str, int] = {}
        self.requests: deque[float] = deque()
        """When the client's recent subscribe/unsubscribe requests came (for hourly quotas)."""
        self.request_count = 0
        self.active_at = self.opened_at
        """When something last went either way (a venue cuts connections quiet for too long)."""

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "books": sorted(self.books)}

    def received(self) -> None:
        self.active_at = time.monotonic()

    def send(self, frame: bytes) -> None:
        self.active_at = time.monotonic()
        super().send(frame)

    def send_text(self, payload: bytes) -> None:
        self.send(text_frame(payload))


class ChainedVenue(ABC):
    """One venue of books sent on subscribe and chained updates (see the module docstring)."""

    name: str
    quiet_close_s: float
    """A connection with nothing sent either way for this long is closed (the venue's rule)."""

    def __init__(
        self,
        config: VenueConfig,
        scheduler: Scheduler,
        catalogue: list[SymbolSpec],
        ids: IdSource,
        style_for: Callable[[SymbolSpec], LevelStyle],
    ) -> None:
        self.config = config
        self.max_connection_age_s = config.max_connection_age_s
        self._scheduler = scheduler
        self.markets = Markets(self.name, catalogue, ids, style_for, config, self._activated)
        self.connections: dict[int, ChainedConnection] = {}
        self.events_generated = 0
        self.events_sent = 0
        self.epochs: dict[str, list[tuple[int, int]]] = {}
        """Per symbol, the id restarts: (the market's first id of each, its wire offset), oldest first."""
        self.last_sent: dict[str, float] = {}
        """Per symbol, when its last message went out (monotonic), for heartbeats."""
        self._listeners: dict[str, dict[ChainedConnection, int]] = {}
        self._recent: dict[str, deque[tuple[int, bytes]]] = {}
        self.connect_times: deque[float] = deque()
        self.refused_connects = 0
        self.subscribe_requests = 0
        self.max_requests_per_connection = 0

    # -- the dialect --------------------------------------------------------------------------

    @abstractmethod
    def encode_update(self, market: Market, update: Update, depth: int) -> bytes:
        """One update as the venue writes it for a listener of ``depth`` levels."""

    @abstractmethod
    def encode_snapshot(self, market: Market, depth: int) -> bytes:
        """The book now, its best ``depth`` levels a side, as the venue's snapshot message."""

    @abstractmethod
    def restart_ids(self, market: Market) -> None:
        """The venue's ids of ``market`` start over (and whatever the venue sends when they do)."""

    def heartbeat(self, market: Market, depth: int) -> bytes | None:
        """What a quiet book gets now and then (None: nothing)."""
        return None

    heartbeat_s: float = 0.0
    """How long a book is quiet before its heartbeat (0: no heartbeats)."""

    # -- ids on the wire ------------------------------------------------------------------------

    def restart_at(self, symbol: str, internal: int, offset: int) -> None:
        """From the market's update ``internal`` on, wire ids are ``offset`` below the market's."""
        self.epochs.setdefault(symbol, [(0, 0)]).append((internal, offset))

    def wire_id(self, symbol: str, internal: int) -> int:
        for start, offset in reversed(self.epochs.get(symbol, ())):
            if internal >= start:
                return internal - offset
        return internal

    def internal_id(self, symbol: str, wire: int, latest: int) -> int:
        """The market's id of a wire id, read in the newest id epoch it fits (each epoch ends at the
        state the next one starts from, which both name; the newest at ``latest``, the market's)."""
        epochs = self.epochs.get(symbol, [(0, 0)])
        for index in range(len(epochs) - 1, -1, -1):
            start, offset = epochs[index]
            end = epochs[index + 1][0] if index + 1 < len(epochs) else latest
            internal = wire + offset
            if start <= internal <= end:
                return internal
        return wire + epochs[-1][1]

    # -- connections and subscriptions ----------------------------------------------------------

    def accept_connect(self, per_window: int, window_s: float) -> bool:
        """Count one connection attempt; False when more than ``per_window`` came in ``window_s``."""
        now = time.monotonic()
        attempts = self.connect_times
        while attempts and attempts[0] <= now - window_s:
            attempts.popleft()
        if len(attempts) >= per_window:
            self.refused_connects += 1
            return False
        attempts.append(now)
        return True

    def count_request(self, conn: ChainedConnection) -> None:
        """One subscribe or unsubscribe request of ``conn`` (for the stats)."""
        conn.request_count += 1
        self.subscribe_requests += 1
        self.max_requests_per_connection = max(self.max_requests_per_connection, conn.request_count)

    def new_connection(self, ws: web.WebSocketResponse, transport: asyncio.Transport) -> ChainedConnection:
        return ChainedConnection(
            next_connection_id(), self.name, ws, transport, self.config.slow_client_bytes
        )

    def register(self, conn: ChainedConnection) -> None:
        self.connections[conn.id] = conn

    def unregister(self, conn: ChainedConnection) -> None:
        self.connections.pop(conn.id, None)
        for symbol in list(conn.books):
            self.unsubscribe(conn, symbol)

    def subscribe(self, conn: ChainedConnection, symbol: str, depth: int) -> Market | None:
        """Add a book to the connection and send it its snapshot; None if not listed."""
        market = self.markets.get(symbol)
        if market is None:
            return None
        conn.books[symbol] = depth
        self._listeners.setdefault(symbol, {})[conn] = depth
        conn.send_text(self.encode_snapshot(market, depth))
        return market

    def unsubscribe(self, conn: ChainedConnection, symbol: str) -> None:
        conn.books.pop(symbol, None)
        listeners = self._listeners.get(symbol)
        if listeners is not None:
            listeners.pop(conn, None)

    def listeners_of(self, symbol: str | None) -> list[ChainedConnection]:
        if symbol is None:
            return sorted(self.connections.values(), key=lambda conn: conn.id)
        return sorted(self._listeners.get(symbol, {}), key=lambda conn: conn.id)

    # -- updates --------------------------------------------------------------------------------

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
        listeners = self._listeners.get(market.name, {})
        encoded: dict[int, bytes] = {}
        recent = self._recent.setdefault(market.name, deque(maxlen=RECENT_MESSAGES))
        for conn, depth in list(listeners.items()):
            message = encoded.get(depth)
            if message is None:
                message = encoded[depth] = self.encode_update(market, update, depth)
                recent.append((depth, message))
            self._deliver(market.name, message, conn)
        if not encoded:
            recent.append((0, b""))
        self.last_sent[market.name] = time.monotonic()

    def burst(self, market: Market, count: int) -> None:
        for _ in range(count):
            self.emit(market)

    def duplicate(self, market: Market, only: ChainedConnection | None, back: int = 0) -> int:
        """Send again the message ``back`` messages before the latest; return how many were sent."""
        recent = self._recent.get(market.name, ())
        if back >= len(recent):
            return 0
        depth, message = recent[-1 - back]
        sent = 0
        for conn in [only] if only else self.listeners_of(market.name):
            if message and self._listeners.get(market.name, {}).get(conn) == depth:
                self._deliver(market.name, message, conn)
                sent += 1
        return sent

    def resend_books(self, market: Market, conns: list[ChainedConnection]) -> None:
        """Send the book as a snapshot now, as a venue does when it has had a problem."""
        for conn in conns:
            depth = conn.books.get(market.name)
            if depth is not None:
                conn.send_text(self.encode_snapshot(market, depth))
                self.events_sent += 1

    def server_shutdown(self, conns: list[ChainedConnection]) -> None:
        """The venue's notice that a connection will close soon, then the close (OKX only)."""
        raise NotImplementedError(f"{self.name} sends no shutdown notice")

    def tend(self, now: float) -> None:
        for conn in list(self.connections.values()):
            if not conn.closing and now - conn.active_at > self.quiet_close_s:
                conn.close(1000, "no activity")
            conn.tend(now, 0.0, float("inf"), self.max_connection_age_s)
        if self.heartbeat_s > 0:
            for symbol, listeners in self._listeners.items():
                if listeners and now - self.last_sent.get(symbol, now) >= self.heartbeat_s:
                    self._heartbeat(symbol, listeners)

    def _heartbeat(self, symbol: str, listeners: dict[ChainedConnection, int]) -> None:
        market = self.markets.active.get(symbol)
        if market is None:
            return
        for conn, depth in list(listeners.items()):
            message = self.heartbeat(market, depth)
            if message is not None:
                self._deliver(symbol, message, conn)
        self.last_sent[symbol] = time.monotonic()

    def _deliver(self, symbol: str, message: bytes, conn: ChainedConnection) -> None:
        if conn.skip and conn.take_skip(symbol):
            return
        conn.send_text(message)
        self.events_sent += 1

    def _activated(self, market: Market) -> None:
        self.last_sent[market.name] = time.monotonic()
        self._scheduler.add(market, self)
