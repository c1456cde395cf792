"""One book replica's pure engine: a sync machine plus the order book it governs.

Theory of operation
-------------------
The async driver owns sockets, clocks and fetches; it hands every parsed event of one book to
its ``BookEngine`` and reads back an ``EngineResult``. The engine asks the machine what to do and
executes the answer on the book: load a snapshot, apply an update, clear the book. After a call
that changed a synced book it checks integrity: a crossed or locked book (best bid >= best ask)
cannot come from a correct sync, so the engine invalidates the machine (reason ``"crossed"``),
clears the book and reports the resync. A level the book cannot read (a non-numeric price, say)
does the same with reason ``"bad_level"``, and a book whose best levels do not give the venue's
checksum (a machine's ``VerifyChecksum``) with reason ``"checksum"``. Either way the next event
starts a new sync. The last checksum verified, and whether it matched, stay readable
(``checksum``, ``checksum_matched``) for what the book's readers are shown.

The driver publishes when ``changed`` is set, fetches a snapshot when ``need_snapshot`` is set,
and marks the book as resyncing when ``resync_reason`` is set. No I/O, no clock.

``synced`` and ``update_id`` are the machine's, kept as plain attributes (every call that can
change them goes through the engine, which copies them after it): the event path reads them
several times an event, where a property of a property is a few function calls each time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from ingest_nodes.core.book import OrderBook
from ingest_nodes.core.errors import VenuePayloadError
from ingest_nodes.core.events import DepthSnapshot, DepthUpdate
from ingest_nodes.core.sync import (
    Action,
    ApplyUpdate,
    FetchSnapshot,
    LoadSnapshot,
    SyncMachine,
    Truncate,
    VerifyChecksum,
)


@dataclass(frozen=True, slots=True)
class EngineResult:
    """What one engine call means for the driver."""

    changed: bool
    """The served book changed: publish it."""
    need_snapshot: bool
    """Fetch a REST snapshot now and pass it to ``on_snapshot``."""
    resync_reason: str | None
    """Set when the book (or the buffered sync progress) was just thrown away, and why."""


_NOTHING: Final = EngineResult(changed=False, need_snapshot=False, resync_reason=None)
_CHANGED: Final = EngineResult(changed=True, need_snapshot=False, resync_reason=None)


class BookEngine:
    """Executes one machine's actions on one ``OrderBook``; see the module docstring."""

    __slots__ = ("book", "checksum", "checksum_matched", "event_time", "ingest_time", "machine", "synced",
                 "update_id")  # fmt: skip

    def __init__(self, machine: SyncMachine) -> None:
        self.machine = machine
        self.synced = machine.synced
        """True while the book is valid and may be served."""
        self.update_id = machine.update_id
        """The venue update id the book is at (Alpaca: 0); None unless synced."""
        self.book = OrderBook()
        self.event_time: int | None = None
        """Venue time of the last applied event or snapshot (None for a spot snapshot)."""
        self.ingest_time: int | None = None
        """When the last applied event or snapshot reached the process."""
        self.checksum: int | None = None
        """The venue's checksum last verified against the book (None: the venue sends none)."""
        self.checksum_matched: bool | None = None
        """Whether the book gave that checksum (a mismatch threw the book away)."""

    def on_update(self, update: DepthUpdate) -> EngineResult:
        """One parsed diff event of this book's symbol."""
        return self._run(self.machine.receive_update(update))

    def on_snapshot(self, snapshot: DepthSnapshot) -> EngineResult:
        """The REST snapshot fetched after ``need_snapshot``."""
        return self._run(self.machine.receive_snapshot(snapshot))

    def on_disconnect(self) -> EngineResult:
        """The stream connection carrying this book was lost."""
        return self._run(self.machine.receive_disconnect())

    def invalidate(self, reason: str) -> EngineResult:
        """Throw the book away for a reason found outside the engine (e.g. a stale stream)."""
        return self._run(self.machine.invalidate(reason))

    def _run(self, actions: list[Action]) -> EngineResult:
        result = self._execute(actions)
        machine = self.machine
        self.synced, self.update_id = machine.synced, machine.update_id
        return result

    def _execute(self, actions: list[Action]) -> EngineResult:
        changed = False
        need_snapshot = False
        resync_reason: str | None = None
        try:
            for action in actions:
                if isinstance(action, ApplyUpdate):
                    self._apply(action.update)
                    changed = True
                elif isinstance(action, LoadSnapshot):
                    self._load(action.snapshot)
                    changed = True
                elif isinstance(action, FetchSnapshot):
                    need_snapshot = True
                elif isinstance(action, Truncate):
                    self.book.truncate(action.depth)
                elif isinstance(action, VerifyChecksum):
                    if not self._verify(action):
                        return self._fail("checksum", need_snapshot)
                else:
                    self._clear()
                    changed = False
                    resync_reason = action.reason
        except VenuePayloadError:
            return self._fail("bad_level", need_snapshot)
        if changed and self.book.is_crossed():
            return self._fail("crossed", need_snapshot)
        if need_snapshot or resync_reason is not None:
            return EngineResult(changed=changed, need_snapshot=need_snapshot, resync_reason=resync_reason)
        return _CHANGED if changed else _NOTHING

    def _apply(self, update: DepthUpdate) -> None:
        if update.reset:
            limit = update.limit
            self.book.load(
                update.bids,
                update.asks,
                bids_complete=not limit or len(update.bids) < limit,
                asks_complete=not limit or len(update.asks) < limit,
            )
        else:
            self.book.apply(update.bids, update.asks)
        self.event_time = update.event_time
        self.ingest_time = update.ingest_time

    def _verify(self, action: VerifyChecksum) -> bool:
        bids, asks = self.book.best_levels(action.levels)
        self.checksum = action.checksum
        self.checksum_matched = action.digest(bids, asks) == action.checksum
        return self.checksum_matched

    def _load(self, snapshot: DepthSnapshot) -> None:
        self.book.load(
            snapshot.bids,
            snapshot.asks,
            bids_complete=snapshot.bids_complete,
            asks_complete=snapshot.asks_complete,
        )
        self.event_time = snapshot.event_time
        self.ingest_time = snapshot.ingest_time

    def _clear(self) -> None:
        self.book.clear()
        self.event_time = None
        self.ingest_time = None

    def _fail(self, reason: str, need_snapshot: bool) -> EngineResult:
        # The machine is synced here (it only asks to load or apply once synced), so it answers
        # ResyncRequired(reason); executing that answer is exactly this clear.
        self.machine.invalidate(reason)
        self._clear()
        return EngineResult(changed=False, need_snapshot=need_snapshot, resync_reason=reason)
