"""One Binance market (spot or futures): its symbols, its streams and who listens to them.

Theory of operation. Connections subscribe to stream names; the venue keeps, per stream name, the
connections listening. When the clock makes an update of a symbol, the venue looks at each of the
symbol's stream forms that has listeners: the per-update form is sent at once, merged forms add
the update to the symbol's open window, which is sent when the form's window closes. Sending
encodes the event once per wanted variant (raw or combined, ms or µs), frames it once, and
queues the same bytes on every listener; nothing is encoded per connection.

A gap withheld from everyone (``skip_next``) still happens: the update is in the book and in
history, and a merged window in progress is abandoned, so the next event shows the hole through
``U`` (spot) or ``pu`` (futures). A gap for one connection is that connection's ``skip`` count.
The withhold fault does the same for every update for a while (a silent stall: the book moves,
the socket stays up), then either resumes with the gap or sends the withheld updates first.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import deque
from collections.abc import Iterable
from functools import partial
from typing import Any

import orjson
from aiohttp import web

from fake_venue.binance.dialect import BinanceDialect
from fake_venue.binance.faults import VenueFaults
from fake_venue.binance.streams import Window, combined, split_stream
from fake_venue.binance.weights import WeightLedger
from fake_venue.config import VenueConfig
from fake_venue.market.markets import Market, Markets, Update
from fake_venue.market.scheduler import Scheduler
from fake_venue.server.connection import Connection
from fake_venue.server.ws_frames import text_frame

COMBINED = 1
MICRO = 2
RECENT_EVENTS = 8


class BinanceConnection(Connection):
    """A Binance stream connection: its streams and the payload variant it wants."""

    def __init__(
        self,
        conn_id: int,
        venue: str,
        ws: web.WebSocketResponse,
        transport: asyncio.Transport,
        slow_client_bytes: int,
        combined: bool,
        micro: bool,
    ) -> None:
        super().__init__(conn_id, venue, ws, transport, slow_client_bytes)
        self.combined = combined
        self.micro = micro
        self.streams: dict[str, None] = {}

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "combined": self.combined, "streams": list(self.streams)}

    @property
    def variant(self) -> int:
        return (COMBINED if self.combined else 0) | (MICRO if self.micro else 0)

    def send_json(self, message: object) -> None:
        self.send(text_frame(orjson.dumps(message)))


class BinanceVenue:
    """Spot or futures, according to its dialect."""

    def __init__(self, dialect: BinanceDialect, config: VenueConfig, scheduler: Scheduler) -> None:
        self.dialect = dialect
        self.name = dialect.venue
        self.config = config
        self.max_connection_age_s = config.max_connection_age_s
        self.faults = VenueFaults()
        self.weights = WeightLedger(
            dialect.limits.weight_limit, config.weight_window_s, config.ban_base_s, config.ban_max_s
        )
        self._scheduler = scheduler
        rng = random.Random(f"{config.seed}:{dialect.venue}:ids")
        self.markets = Markets(
            dialect.venue,
            dialect.catalogue(),
            dialect.id_source(rng),
            dialect.style_for,
            config,
            self._activated,
            config.deep_symbols,
        )
        self.connections: dict[int, BinanceConnection] = {}
        self.events_generated = 0
        self.events_sent = 0
        self.rest_requests = 0
        self._listeners: dict[str, dict[BinanceConnection, None]] = {}
        self._names: dict[str, list[str]] = {}
        self._windows: list[dict[str, Window]] = [{} for _ in dialect.forms]
        self._recent: dict[tuple[str, int], deque[Update]] = {}
        """Per symbol and stream form, the last few events sent, for the duplicate/replay fault."""
        for index, form in enumerate(dialect.forms):
            if form.window_ms:
                scheduler.every(form.window_ms / 1000, partial(self._close_windows, index))

    # -- connections and subscriptions

    def register(self, conn: BinanceConnection) -> None:
        self.connections[conn.id] = conn

    def unregister(self, conn: BinanceConnection) -> None:
        self.connections.pop(conn.id, None)
        for stream in conn.streams:
            self._remove_listener(stream, conn)
        conn.streams.clear()

    def valid_stream(self, stream: str) -> bool:
        _, suffix = split_stream(stream)
        return self.dialect.form_for(suffix) is not None

    def subscribe(self, conn: BinanceConnection, stream: str) -> None:
        """Listen to ``stream``; a listed symbol starts moving (soon), an unknown one stays silent."""
        if stream in conn.streams:
            return
        conn.streams[stream] = None
        self._listeners.setdefault(stream, {})[conn] = None
        name = self.markets.by_lower.get(split_stream(stream)[0])
        if name is not None:
            self.markets.request(name)

    def unsubscribe(self, conn: BinanceConnection, stream: str) -> None:
        if stream in conn.streams:
            del conn.streams[stream]
            self._remove_listener(stream, conn)

    def listeners_of(self, symbol: str | None) -> list[BinanceConnection]:
        """Connections listening to any stream of ``symbol`` (all connections when None), oldest first."""
        if symbol is None:
            found: Iterable[BinanceConnection] = self.connections.values()
        else:
            streams = self._stream_names(symbol)
            found = {conn: None for stream in streams for conn in self._listeners.get(stream, {})}
        return sorted(found, key=lambda conn: conn.id)

    def _remove_listener(self, stream: str, conn: BinanceConnection) -> None:
        listeners = self._listeners.get(stream)
        if listeners is not None:
            listeners.pop(conn, None)
            if not listeners:
                del self._listeners[stream]

    # -- updates

    def emit(self, market: Market) -> None:
        self.publish(market, market.step())

    def burst(self, market: Market, count: int) -> None:
        """``count`` updates at once: on the per-update stream they leave as ``count`` frames together."""
        for _ in range(count):
            self.emit(market)

    def publish(self, market: Market, update: Update) -> None:
        self.events_generated += 1
        if market.skip_next > 0 or market.withholding(update):
            market.skip_next = max(market.skip_next - 1, 0)
            for windows in self._windows:
                windows.pop(market.name, None)
            return
        self.send(market, update)

    def send(self, market: Market, update: Update) -> None:
        """Send an update made earlier (or just now) on every stream form that has listeners."""
        names = self._stream_names(market.name)
        for index, form in enumerate(self.dialect.forms):
            if names[index] not in self._listeners:
                continue
            if not form.window_ms:
                self._send(market, index, update)
                continue
            window = self._windows[index].get(market.name)
            if window is None:
                self._windows[index][market.name] = Window(update)
            else:
                window.add(update)

    def duplicate(self, market: Market, only: BinanceConnection | None, back: int = 0) -> int:
        """Send again, on each stream form, the event ``back`` events before the latest (0: the
        latest itself, a duplicate; more: an old event replayed after newer ones). Return how many
        were resent."""
        resent = 0
        for index in range(len(self.dialect.forms)):
            recent = self._recent.get((market.name, index), ())
            if back < len(recent):
                self._send(market, index, recent[-1 - back], only)
                resent += 1
        return resent

    def server_shutdown(self, conns: list[BinanceConnection]) -> None:
        """The ``serverShutdown`` notice, in each connection's shape, then a close."""
        raw = orjson.dumps({"e": "serverShutdown", "E": int(time.time() * 1000)})
        for conn in conns:
            conn.send(text_frame(combined("!serverShutdown", raw) if conn.combined else raw))
            conn.close(1001, "server shutdown")

    def _close_windows(self, index: int) -> None:
        windows, self._windows[index] = self._windows[index], {}
        now_ms = int(time.time() * 1000)
        for name, window in windows.items():
            self._send(self.markets.active[name], index, window.event(now_ms))

    def _send(self, market: Market, index: int, event: Update, only: BinanceConnection | None = None) -> None:
        stream = self._stream_names(market.name)[index]
        listeners = self._listeners.get(stream)
        if only is None:
            recent = self._recent.get((market.name, index))
            if recent is None:
                recent = self._recent[(market.name, index)] = deque(maxlen=RECENT_EVENTS)
            recent.append(event)
        if not listeners or (only is not None and only not in listeners):
            return
        frames: dict[int, bytes] = {}
        raws: dict[bool, bytes] = {}
        sent = 0
        for conn in (only,) if only is not None else listeners:
            if conn.skip and conn.take_skip(market.name):
                continue
            variant = conn.variant
            frame = frames.get(variant)
            if frame is None:
                micro = bool(variant & MICRO)
                raw = raws.get(micro)
                if raw is None:
                    raw = raws[micro] = self.dialect.encode_event(market, event, micro)
                frame = frames[variant] = text_frame(combined(stream, raw) if variant & COMBINED else raw)
            conn.send(frame)
            sent += 1
        self.events_sent += sent

    def _stream_names(self, symbol: str) -> list[str]:
        names = self._names.get(symbol)
        if names is None:
            lower = symbol.lower()
            names = self._names[symbol] = [lower + form.suffix for form in self.dialect.forms]
        return names

    def _activated(self, market: Market) -> None:
        self._scheduler.add(market, self)

    # -- periodic duties

    def tend(self, now: float) -> None:
        limits = self.dialect.limits
        for conn in list(self.connections.values()):
            conn.tend(now, limits.ping_interval_s, limits.pong_timeout_s, self.max_connection_age_s)
