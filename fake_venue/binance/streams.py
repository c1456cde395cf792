"""Binance diff-depth stream forms, and the merging of updates for the slower ones.

A stream name is ``<lowercase symbol>@depth[@100ms|@500ms]``. The fastest form of a venue sends
every update as its own event, so ``--rate`` sets its cadence and a burst of k updates arrives as
k frames. Slower forms merge the updates of a window (1000 ms for spot ``@depth``, 250 ms and
500 ms on futures) into one event: ``U`` is the first update's, ``u`` the last's, ``pu`` the ``u``
of the update before the window, and a level changed twice keeps its last quantity. Windows follow
each other without holes, so a merged stream keeps spot's ``U == prev u + 1`` and futures' ``pu``
chain exactly like the per-update stream.
"""

from __future__ import annotations

from dataclasses import dataclass

from fake_venue.market.markets import Update


@dataclass(frozen=True, slots=True)
class StreamForm:
    suffix: str
    """What follows the symbol in the stream name, e.g. ``@depth@100ms``."""
    window_ms: int
    """0: one event per update; otherwise updates are merged over windows of this length."""


def split_stream(name: str) -> tuple[str, str]:
    """``"btcusdt@depth@100ms"`` -> ``("btcusdt", "@depth@100ms")``; no ``@`` gives an empty suffix."""
    symbol, at, rest = name.partition("@")
    return symbol, at + rest


def combined(stream: str, raw: bytes) -> bytes:
    """The combined-stream wrapper around an already encoded payload (no re-encoding)."""
    return b'{"stream":"' + stream.encode() + b'","data":' + raw + b"}"


class Window:
    """The updates of one symbol inside one window of a merged stream form."""

    __slots__ = ("asks", "bids", "event_ms", "first_id", "last_id", "prev_id", "t_ns", "txn_ms")

    def __init__(self, update: Update) -> None:
        self.first_id = update.first_id
        self.prev_id = update.prev_id
        self.bids: dict[int, int] = {}
        self.asks: dict[int, int] = {}
        self.last_id = self.event_ms = self.txn_ms = self.t_ns = 0
        self.add(update)

    def add(self, update: Update) -> None:
        self.last_id = update.last_id
        self.event_ms, self.txn_ms, self.t_ns = update.event_ms, update.txn_ms, update.t_ns
        self.bids.update(update.bids)
        self.asks.update(update.asks)

    def event(self, event_ms: int) -> Update:
        """The merged event, stamped when the window closes; bids best first, asks best first."""
        return Update(
            self.first_id,
            self.last_id,
            self.prev_id,
            max(event_ms, self.event_ms),
            self.txn_ms,
            self.t_ns,
            sorted(self.bids.items(), reverse=True),
            sorted(self.asks.items()),
        )
