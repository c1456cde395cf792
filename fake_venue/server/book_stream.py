"""What a venue that sends books on the stream shares (Kraken, Coinbase): who listens to which book,
and how one update reaches them through the faults.

Theory of operation. Each update is encoded once when it is made (``encode``: what it means for the
subscribers, before any fault), then the faults decide: the gap fault loses it for everyone
(``lose``: a venue that numbers its messages still spends their numbers), the withhold fault keeps
it for later (``send`` delivers it when the fault ends), and otherwise it goes to every listener
(``deliver``), where a connection's own gap fault may still drop it. Encoding first matters: what a
subscriber is told next is relative to what it was told last, so a lost update must still move
the venue's idea of it on, or the next message would quietly repair the loss.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import deque
from typing import Generic, TypeVar

from fake_venue.config import VenueConfig
from fake_venue.market.markets import Market, Markets, Update
from fake_venue.market.scheduler import Scheduler
from fake_venue.server.connection import Connection

ConnT = TypeVar("ConnT", bound=Connection)
OutT = TypeVar("OutT")
RECENT_UPDATES = 8


class BookStreamVenue(ABC, Generic[ConnT, OutT]):
    """One venue's listeners and update path; a dialect encodes and delivers (module docstring)."""

    name: str
    markets: Markets

    def __init__(self, config: VenueConfig, scheduler: Scheduler) -> None:
        self.config = config
        self.max_connection_age_s = config.max_connection_age_s
        self.scheduler = scheduler
        self.connections: dict[int, ConnT] = {}
        self.events_generated = 0
        self.events_sent = 0
        self._listeners: dict[str, dict[ConnT, None]] = {}
        self._held: dict[tuple[str, int], OutT] = {}
        self._recent: dict[str, deque[OutT]] = {}

    @abstractmethod
    def encode(self, market: Market, update: Update) -> OutT:
        """What ``update`` means for the book's subscribers (the venue's view of them moves on)."""

    @abstractmethod
    def deliver(self, market: Market, out: OutT, conns: list[ConnT]) -> int:
        """Send ``out`` to ``conns``; return how many messages went out."""

    def lose(self, market: Market, out: OutT, conns: list[ConnT]) -> None:
        """The gap fault took ``out`` from ``conns`` (nothing to do unless the venue numbers messages)."""

    # -- listeners

    def register(self, conn: ConnT) -> None:
        self.connections[conn.id] = conn

    def unregister(self, conn: ConnT) -> None:
        self.connections.pop(conn.id, None)
        for listeners in self._listeners.values():
            listeners.pop(conn, None)

    def listen(self, conn: ConnT, symbol: str) -> None:
        self._listeners.setdefault(symbol, {})[conn] = None

    def unlisten(self, conn: ConnT, symbol: str) -> None:
        self._listeners.get(symbol, {}).pop(conn, None)

    def listeners_of(self, symbol: str | None) -> list[ConnT]:
        """Who listens to ``symbol`` (every connection: None), oldest first."""
        if symbol is None:
            return sorted(self.connections.values(), key=lambda conn: conn.id)
        return sorted(self._listeners.get(symbol, {}), key=lambda conn: conn.id)

    # -- the update path

    def emit(self, market: Market) -> None:
        self.send_update(market, market.step())

    def send_update(self, market: Market, update: Update) -> None:
        self.events_generated += 1
        out = self.encode(market, update)
        if market.skip_next > 0:
            market.skip_next -= 1
            self.lose(market, out, self.listeners_of(market.name))
        elif market.withholding(update):
            if market.withheld is not None:
                self._held[(market.name, update.last_id)] = out
            else:
                self.lose(market, out, self.listeners_of(market.name))
        else:
            self._send_out(market, out)

    def send(self, market: Market, update: Update) -> None:
        """Send an update the withhold fault kept, now."""
        out = self._held.pop((market.name, update.last_id), None)
        if out is not None:
            self._send_out(market, out)

    def burst(self, market: Market, count: int) -> None:
        for _ in range(count):
            self.emit(market)

    def duplicate(self, market: Market, only: ConnT | None, back: int = 0) -> int:
        """Send again the update ``back`` updates before the latest; return how many went out."""
        recent = self._recent.get(market.name, ())
        if back >= len(recent):
            return 0
        return self.deliver(market, recent[-1 - back], [only] if only else self.listeners_of(market.name))

    def _send_out(self, market: Market, out: OutT) -> None:
        recent = self._recent.get(market.name)
        if recent is None:
            recent = self._recent[market.name] = deque(maxlen=RECENT_UPDATES)
        recent.append(out)
        self.events_sent += self.deliver(market, out, self.listeners_of(market.name))

    def _activated(self, market: Market) -> None:
        self.scheduler.add(market, self)
