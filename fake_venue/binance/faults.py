"""Venue-wide faults set at run time through ``POST /_fake/control``.

Faults that act on one symbol's stream (gap, stall, cross, rate) live on its ``Market``; faults that
act on one connection (its share of a gap) live on the ``Connection``. What is left is here: the
REST answers a Binance venue gives (forced statuses, slow or stale snapshots) and the delay of its
SUBSCRIBE acks. Per-symbol settings override the venue-wide one (stored under ``None``).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class ForcedStatus:
    status: int
    retry_after: int


@dataclass(slots=True)
class VenueFaults:
    forced: deque[ForcedStatus] = field(default_factory=deque)
    """Statuses the next REST answers get instead of their own, one each, in order."""
    snapshot_delay_ms: dict[str | None, int] = field(default_factory=dict)
    snapshot_lag: dict[str | None, int] = field(default_factory=dict)
    """Serve depth snapshots as of this many updates ago."""
    ack_delay_ms: int = 0
    """Hold SUBSCRIBE/UNSUBSCRIBE acks this long, so data overtakes them."""
    snapshot_in_hole: bool = False
    """Futures: report a snapshot ``lastUpdateId`` one past the last update, inside an id hole."""

    def force(self, status: int, count: int, retry_after: int) -> None:
        self.forced.extend(ForcedStatus(status, retry_after) for _ in range(count))

    def take_forced(self) -> ForcedStatus | None:
        return self.forced.popleft() if self.forced else None

    def delay_ms(self, symbol: str) -> int:
        return self.snapshot_delay_ms.get(symbol, self.snapshot_delay_ms.get(None, 0))

    def lag(self, symbol: str) -> int:
        return self.snapshot_lag.get(symbol, self.snapshot_lag.get(None, 0))

    def clear(self) -> None:
        self.forced.clear()
        self.snapshot_delay_ms.clear()
        self.snapshot_lag.clear()
        self.ack_delay_ms = 0
        self.snapshot_in_hole = False
