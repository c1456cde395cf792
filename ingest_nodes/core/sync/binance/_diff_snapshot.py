"""The diff-stream-plus-snapshot protocol shared by Binance spot and futures, as a pure state machine.

Theory of operation
-------------------
The venue streams diff events per symbol, each covering a range of update ids ``[U, u]``, and
serves REST snapshots stamped with the id they reflect (``lastUpdateId``). A replica is valid
when it equals one snapshot plus every event after it with no id lost in between. The machine
only decides; the caller executes its actions (see ``actions.py``). No I/O, no clock.

Venue differences are four predicates, kept as data in ``DiffSnapshotRules`` (``spot.py``,
``futures.py``, each quoting its venue's rules):

    is_stale(ev, lid)      before the first applied event: the snapshot already holds ev
    bridges(ev, lid)       the first event kept after a snapshot may be applied on top of it
    is_duplicate(ev, id)   once applying: ev was already applied (replay); drop it quietly
    continues(ev, id)      once applying: ev follows the book's id with nothing lost

Transitions (``receive_update`` and ``receive_snapshot`` pick the row by state):

    state          update                                   snapshot          disconnect/invalidate
    IDLE           buffer it; FetchSnapshot -> BUFFERING    ignored           nothing to drop
    BUFFERING      buffer it; buffer full ->                bridge (below)    ResyncRequired -> IDLE
                   ResyncRequired("buffer_overflow") -> IDLE
    SNAPSHOT_HELD  stale: dropped; otherwise buffer it and  ignored           ResyncRequired -> IDLE
                   bridge the held snapshot
    SYNCED         duplicate: dropped; continues:           ignored           ResyncRequired -> IDLE
                   ApplyUpdate; otherwise ResyncRequired("gap")
                   + FetchSnapshot -> BUFFERING with ev buffered

Bridging a snapshot with the buffer: drop the stale events. Nothing left: hold the snapshot
(SNAPSHOT_HELD) until an event continues it. The first event left does not bridge: the snapshot
is too old (or its id fell in a hole between events), so FetchSnapshot again and keep buffering.
Otherwise LoadSnapshot, then ApplyUpdate for the first event and every later one that continues
the chain. A break inside the buffer means events were lost while buffering: the book is left
untouched, the events from the break on stay buffered, and FetchSnapshot again.

``ResyncRequired`` means the machine threw a valid book or its buffer away and starts again from
the stream. Failed bridging attempts only ask for another snapshot: nothing valid was lost.
A snapshot nobody is waiting for (in IDLE, SNAPSHOT_HELD or SYNCED) is ignored, and one that
arrives while BUFFERING is judged by its ids alone, so a late answer to an abandoned request can
never corrupt a book. The machine asks for a snapshot only when an event or a snapshot arrives:
after ``FetchSnapshot`` the caller must keep trying until it delivers one (or ``invalidate``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from ingest_nodes.core.events import DepthSnapshot, DepthUpdate
from ingest_nodes.core.sync.actions import Action, ApplyUpdate, FetchSnapshot, LoadSnapshot, ResyncRequired
from ingest_nodes.core.sync.state import SyncState

IdTest = Callable[[DepthUpdate, int], bool]


@dataclass(frozen=True, slots=True)
class DiffSnapshotRules:
    """A venue's id tests; see the module docstring for what each one decides."""

    is_stale: IdTest
    bridges: IdTest
    is_duplicate: IdTest
    continues: IdTest


def already_applied(update: DepthUpdate, update_id: int) -> bool:
    """Both Binance markets: an event ending at or before the book's id brings nothing new."""
    return update.final_update_id <= update_id


class DiffSnapshotMachine:
    """One book's sync state for a diff-plus-snapshot venue; subclasses only pick the rules."""

    rules: ClassVar[DiffSnapshotRules]
    __slots__ = ("_buffer", "_held", "_max_buffer", "_update_id", "state")

    def __init__(self, *, max_buffer: int = 10_000) -> None:
        if max_buffer < 1:
            raise ValueError(f"max_buffer must be at least 1, got {max_buffer}")
        self._max_buffer = max_buffer
        self._buffer: list[DepthUpdate] = []
        self._held: DepthSnapshot | None = None
        self._update_id: int | None = None
        self.state = SyncState.IDLE

    @property
    def synced(self) -> bool:
        """True while the book the caller keeps from the actions is valid."""
        return self.state is SyncState.SYNCED

    @property
    def update_id(self) -> int | None:
        """The id the valid book is at; None unless synced."""
        return self._update_id

    @property
    def buffered(self) -> int:
        """How many events wait for a snapshot (for metrics)."""
        return len(self._buffer)

    def receive_update(self, update: DepthUpdate) -> list[Action]:
        """Feed one diff event of this book's symbol, in arrival order."""
        state = self.state
        if state is SyncState.SYNCED:  # nearly every event: tested first
            return self._follow(update)
        if state is SyncState.BUFFERING:
            return self._keep(update)
        if state is SyncState.SNAPSHOT_HELD:
            return self._try_held(update)
        return self._start(update)

    def receive_snapshot(self, snapshot: DepthSnapshot) -> list[Action]:
        """Feed the snapshot fetched after a ``FetchSnapshot``; ignored unless one is awaited."""
        if self.state is SyncState.BUFFERING:
            return self._bridge(snapshot)
        return []

    def receive_disconnect(self) -> list[Action]:
        """The stream connection was lost: events may be missing, start over."""
        return self._discard("disconnect")

    def invalidate(self, reason: str) -> list[Action]:
        """The caller found the book wrong (e.g. crossed): start over."""
        return self._discard(reason)

    def _start(self, update: DepthUpdate) -> list[Action]:
        self._buffer = [update]
        self.state = SyncState.BUFFERING
        return [FetchSnapshot()]

    def _keep(self, update: DepthUpdate) -> list[Action]:
        if len(self._buffer) >= self._max_buffer:
            return self._discard("buffer_overflow")
        self._buffer.append(update)
        return []

    def _try_held(self, update: DepthUpdate) -> list[Action]:
        held = self._held
        assert held is not None, "SNAPSHOT_HELD always holds a snapshot"
        if self.rules.is_stale(update, held.last_update_id):
            return []
        self._buffer = [update]
        return self._bridge(held)

    def _follow(self, update: DepthUpdate) -> list[Action]:
        update_id = self._update_id
        assert update_id is not None, "SYNCED always has an update id"
        if self.rules.is_duplicate(update, update_id):
            return []
        if self.rules.continues(update, update_id):
            self._update_id = update.final_update_id
            return [ApplyUpdate(update)]
        self._update_id = None
        self._buffer = [update]
        self.state = SyncState.BUFFERING
        return [ResyncRequired("gap"), FetchSnapshot()]

    def _bridge(self, snapshot: DepthSnapshot) -> list[Action]:
        rules = self.rules
        last_id = snapshot.last_update_id
        pending = [update for update in self._buffer if not rules.is_stale(update, last_id)]
        self._held = None
        if not pending:
            self._buffer = []
            self._held = snapshot
            self.state = SyncState.SNAPSHOT_HELD
            return []
        self.state = SyncState.BUFFERING
        first = pending[0]
        if not rules.bridges(first, last_id):
            self._buffer = pending
            return [FetchSnapshot("snapshot_too_old")]
        actions: list[Action] = [LoadSnapshot(snapshot), ApplyUpdate(first)]
        update_id = first.final_update_id
        for index in range(1, len(pending)):
            update = pending[index]
            if rules.is_duplicate(update, update_id):
                continue
            if not rules.continues(update, update_id):
                self._buffer = pending[index:]
                return [FetchSnapshot("gap_while_buffering")]
            actions.append(ApplyUpdate(update))
            update_id = update.final_update_id
        self._buffer = []
        self._update_id = update_id
        self.state = SyncState.SYNCED
        return actions

    def _discard(self, reason: str) -> list[Action]:
        if self.state is SyncState.IDLE:
            return []
        self._buffer = []
        self._held = None
        self._update_id = None
        self.state = SyncState.IDLE
        return [ResyncRequired(reason)]
