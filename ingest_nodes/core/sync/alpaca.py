"""Alpaca crypto order-book sync: the venue's rules, and the machine that follows them.

What the venue's crypto market-data stream docs (v1beta3 ``orderbooks`` channel) say, in our words:

  - A message with ``r: true`` carries the whole server-side book: clear both sides and load it.
    It is typically the first message after subscribing, but may come at any time.
  - Any other message sets each listed level to its absolute size; size 0 removes the level.
  - There are no sequence numbers and no snapshot to stitch to: only in-order delivery on one
    connection keeps a book right.

So Ladder trusts nothing until a reset: updates before the first ``r: true`` (after start, a
disconnect or an invalidation) are dropped, and after a disconnect the book is gone until the
next reset. This machine never asks for a snapshot; after ``invalidate`` the caller has to
resubscribe the symbol to make the venue send a fresh reset.

The venue has no update ids, so this machine's ``update_id`` is its own: the number of messages it
has applied since it was made, resets included. It only grows, so a reader sees a replica's book
move forward, but it says nothing across replicas (each counts from when it subscribed).

Transitions (``_ON_UPDATE`` below is this table as data):

    state   update                                snapshot   disconnect/invalidate
    IDLE    reset: ApplyUpdate -> SYNCED;         ignored    nothing to drop
            otherwise dropped (untrusted)
    SYNCED  ApplyUpdate (a reset replaces all)    ignored    ResyncRequired -> IDLE
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Final

from ingest_nodes.core.events import DepthSnapshot, DepthUpdate
from ingest_nodes.core.sync.actions import Action, ApplyUpdate, ResyncRequired
from ingest_nodes.core.sync.state import SyncState


class AlpacaSyncMachine:
    """Keeps one Alpaca book's sync state; its update id counts the messages it applied."""

    __slots__ = ("applied", "state")

    def __init__(self, *, max_buffer: int = 10_000) -> None:
        """``max_buffer`` is accepted so every machine is built alike; Alpaca never buffers."""
        if max_buffer < 1:
            raise ValueError(f"max_buffer must be at least 1, got {max_buffer}")
        self.state = SyncState.IDLE
        self.applied = 0

    @property
    def synced(self) -> bool:
        """True once a reset was applied and nothing has invalidated the book since."""
        return self.state is SyncState.SYNCED

    @property
    def update_id(self) -> int | None:
        """Messages applied so far while synced (Alpaca has no ids), None otherwise."""
        return self.applied if self.state is SyncState.SYNCED else None

    @property
    def buffered(self) -> int:
        """Always 0: Alpaca books are never buffered."""
        return 0

    def receive_update(self, update: DepthUpdate) -> list[Action]:
        """Feed one ``"o"`` message of this book's symbol, in arrival order."""
        return _ON_UPDATE[self.state](self, update)

    def receive_snapshot(self, snapshot: DepthSnapshot) -> list[Action]:
        """Alpaca has no snapshot to stitch to the stream: ignored."""
        return []

    def receive_disconnect(self) -> list[Action]:
        """Messages may have been lost: wait for the next reset."""
        return self._discard("disconnect")

    def invalidate(self, reason: str) -> list[Action]:
        """The caller found the book wrong: wait for the next reset (resubscribe to get one)."""
        return self._discard(reason)

    def _await_reset(self, update: DepthUpdate) -> list[Action]:
        if not update.reset:
            return []
        self.state = SyncState.SYNCED
        self.applied += 1
        return [ApplyUpdate(update)]

    def _follow(self, update: DepthUpdate) -> list[Action]:
        self.applied += 1
        return [ApplyUpdate(update)]

    def _discard(self, reason: str) -> list[Action]:
        if self.state is SyncState.IDLE:
            return []
        self.state = SyncState.IDLE
        return [ResyncRequired(reason)]


_ON_UPDATE: Final[Mapping[SyncState, Callable[[AlpacaSyncMachine, DepthUpdate], list[Action]]]] = (
    MappingProxyType(
        {SyncState.IDLE: AlpacaSyncMachine._await_reset, SyncState.SYNCED: AlpacaSyncMachine._follow}
    )
)
