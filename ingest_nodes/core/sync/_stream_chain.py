"""The snapshot-on-the-stream protocol shared by OKX, Bybit, Kraken and Coinbase, as a pure machine.

Theory of operation
-------------------
Some venues need no REST snapshot to start a book: subscribing a book's channel makes the venue
send its book (a *snapshot*) over the WebSocket first, and every later message of that channel
carries ids that chain it to the message before it. A replica is valid when it equals the last
snapshot plus every message after it with none lost in between; the chain proves that, message by
message. A snapshot may come at any time (the venue restarted, or was asked again) and replaces
the book whatever its ids. The machine only decides; the caller executes its actions (see
``actions.py``). No I/O, no clock.

Venue differences are two predicates on a message and the last one applied, kept as data in
``ChainRules`` (``okx.py``, ``bybit.py``, each quoting its venue's rules):

    continues(ev, last)     ev follows ``last`` with nothing lost in between
    repeats(ev, last)       ev is ``last`` sent again: drop it quietly

A venue that numbers no book's messages (Kraken, Coinbase) has nothing to chain by: its rules are
``IN_ORDER`` (every message continues, in-order delivery on one connection is the chain, and
``update_id`` counts the messages applied since the machine was made, since the venue gives none;
Coinbase numbers the connection instead, which ``coinbase.py`` checks for all of its books at
once). And a venue may ask more of the book after each message it applies: a subclass's
``checks(ev)`` actions follow every ``ApplyUpdate`` (Kraken: trim to the subscribed depth, verify
the checksum); none by default.

Transitions (``_ON_UPDATE`` below is this table as data):

    state   snapshot                 delta                                   disconnect/invalidate
    IDLE    ApplyUpdate -> SYNCED    dropped (no book to apply it to)        nothing to drop
    SYNCED  ApplyUpdate (replaces    continues: ApplyUpdate; repeats:        ResyncRequired -> IDLE
            the book)                dropped; otherwise ResyncRequired("gap")
                                     -> IDLE

A chain break never repairs itself: only a new snapshot can, and the venue sends one when the
book's channel is subscribed again. So ``ResyncRequired`` here tells the caller to resubscribe that
one book (never the connection, never another book), and the machine waits in IDLE, dropping the
deltas still on their way, until the snapshot arrives. The machine never asks for a REST snapshot
(``receive_snapshot`` ignores one): a REST book can audit a synced one, never start it.

Only an exact repeat of the last message is dropped as a duplicate. An older message sent again
looks like a gap and costs a resubscribe: ids may start over lower after a venue's maintenance,
so "older" cannot be told from "after a restart whose first message was lost", and taking the
second for the first would keep a dead book synced.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar, Final

from ingest_nodes.core.events import DepthSnapshot, DepthUpdate
from ingest_nodes.core.sync.actions import Action, ApplyUpdate, ResyncRequired
from ingest_nodes.core.sync.state import SyncState

ChainTest = Callable[[DepthUpdate, DepthUpdate], bool]


@dataclass(frozen=True, slots=True)
class ChainRules:
    """A venue's chain tests, each of a message and the last one applied (module docstring)."""

    continues: ChainTest
    repeats: ChainTest
    numbered: bool = True
    """False: the venue's messages carry no ids, and ``update_id`` counts the messages applied."""


def _always(update: DepthUpdate, last: DepthUpdate) -> bool:
    return True


def _never(update: DepthUpdate, last: DepthUpdate) -> bool:
    return False


IN_ORDER: Final = ChainRules(continues=_always, repeats=_never, numbered=False)
"""The rules of a venue that numbers no book's messages (module docstring)."""


class StreamChainMachine:
    """One book's sync state for a snapshot-on-the-stream venue; subclasses only pick the rules."""

    rules: ClassVar[ChainRules]
    __slots__ = ("_last", "applied", "state")

    def __init__(self, *, max_buffer: int = 10_000) -> None:
        """``max_buffer`` is accepted so every machine is built alike; this one never buffers."""
        if max_buffer < 1:
            raise ValueError(f"max_buffer must be at least 1, got {max_buffer}")
        self._last: DepthUpdate | None = None
        self.applied = 0
        """Messages applied since the machine was made (the ``update_id`` of unnumbered venues)."""
        self.state = SyncState.IDLE

    @property
    def synced(self) -> bool:
        """True while the book the caller keeps from the actions is valid."""
        return self.state is SyncState.SYNCED

    @property
    def update_id(self) -> int | None:
        """The id of the last message applied (the venue's own, or the count of messages applied
        where the venue numbers none); None unless synced."""
        last = self._last
        if last is None:
            return None
        return last.final_update_id if self.rules.numbered else self.applied

    @property
    def last(self) -> DepthUpdate | None:
        """The last message applied while synced (what the next one must continue)."""
        return self._last

    @property
    def buffered(self) -> int:
        """Always 0: nothing waits for a snapshot, the stream brings it."""
        return 0

    def receive_update(self, update: DepthUpdate) -> list[Action]:
        """Feed one message of this book's channel, in arrival order (``reset``: a snapshot)."""
        return _ON_UPDATE[self.state](self, update)

    def receive_snapshot(self, snapshot: DepthSnapshot) -> list[Action]:
        """A REST snapshot cannot start or repair a chained book: ignored."""
        return []

    def receive_disconnect(self) -> list[Action]:
        """The stream connection was lost: wait for the snapshot the resubscribe brings."""
        return self._discard("disconnect")

    def invalidate(self, reason: str) -> list[Action]:
        """The caller found the book wrong (e.g. crossed): wait for a new snapshot."""
        return self._discard(reason)

    def follows(self, update: DepthUpdate) -> bool:
        """True when ``update`` may be applied to the synced book as it is now: a snapshot, or a
        message that continues (or repeats) the last one. A handover splices on this, so where the
        venue numbers nothing (``IN_ORDER``) only a snapshot may: another connection's message
        continues nothing this connection delivered."""
        last = self._last
        if update.reset:
            return True
        if not self.rules.numbered:
            return False
        return last is not None and (self.rules.continues(update, last) or self.rules.repeats(update, last))

    def checks(self, update: DepthUpdate) -> list[Action]:
        """What the venue asks of the book after ``update`` was applied (module docstring)."""
        return []

    def _await_snapshot(self, update: DepthUpdate) -> list[Action]:
        if not update.reset:
            return []
        self.state = SyncState.SYNCED
        return self._apply(update)

    def _follow(self, update: DepthUpdate) -> list[Action]:
        last = self._last
        assert last is not None, "SYNCED always has a last message"
        if update.reset or self.rules.continues(update, last):
            return self._apply(update)
        if self.rules.repeats(update, last):
            return []
        return self._discard("gap")

    def _apply(self, update: DepthUpdate) -> list[Action]:
        self._last = update
        self.applied += 1
        checks = self.checks(update)
        return [ApplyUpdate(update), *checks] if checks else [ApplyUpdate(update)]

    def _discard(self, reason: str) -> list[Action]:
        if self.state is SyncState.IDLE:
            return []
        self._last = None
        self.state = SyncState.IDLE
        return [ResyncRequired(reason)]


_ON_UPDATE: Final[Mapping[SyncState, Callable[[StreamChainMachine, DepthUpdate], list[Action]]]] = (
    MappingProxyType(
        {SyncState.IDLE: StreamChainMachine._await_snapshot, SyncState.SYNCED: StreamChainMachine._follow}
    )
)
