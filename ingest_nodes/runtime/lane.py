"""One sync engine and the way it gets snapshots: the start gate, the grant, the answer.

Theory of operation
-------------------
A ``Lane`` feeds venue events to one :class:`~ingest_nodes.core.engine.BookEngine` and keeps the
rules of its snapshot requests. It calls nobody: each of its methods returns what the engine did
(an :class:`~ingest_nodes.core.engine.EngineResult`), and a snapshot it needs is left in ``ask``
(seconds to wait before asking) for its owner to place with the exchange's
:class:`~ingest_nodes.runtime.snapshots.SnapshotScheduler`. The owner (``replica.BookReplica``)
is also the scheduler's requester and hands each grant and answer to the lane, so every result
travels one way, back to the caller as a return value.

Start gate: an engine that holds nothing (machine ``IDLE``: a new book, or one thrown away after a
disconnect or a crossed book) does not start buffering while it waits for its turn in the weight
budget. The lane keeps only the latest event and asks for a snapshot; when the grant comes it
feeds that event (the machine starts buffering and asks for the snapshot) and the snapshot is
fetched at once. Events dropped before the grant are older than the snapshot, so the machine would
have dropped them too; and if anything is missing in between, the machine's id rules see the gap.

An engine that is already buffering (a gap in a synced book, a snapshot that came back too old)
keeps buffering while its request waits; such books were serving, so their requests are urgent.
A *background* lane (a served book's refresh or audit, see ``replica.BookReplica``) queues behind
every sync: its book keeps serving meanwhile.
A failed fetch is asked for again after a jittered backoff (the venue's ``Retry-After`` closes the
shared budget itself, so nobody fetches before it passes).

A lane without ``snapshots`` (a venue that sends whole books on the stream, Alpaca) has no gate and
never asks: every event goes straight to its engine.
"""

from __future__ import annotations

import asyncio
from typing import Final

from ingest_nodes.core.backoff import Backoff
from ingest_nodes.core.engine import BookEngine, EngineResult
from ingest_nodes.core.events import DepthSnapshot, DepthUpdate
from ingest_nodes.core.sync import SyncState
from ingest_nodes.ops.stats import ReplicaStats
from ingest_nodes.runtime.snapshots import Priority

# After a snapshot that turned out too old, wait this long before the next one: the stream has to
# move past it, and asking again at once costs weight for nothing.
MIN_REFETCH_S: Final = 0.25

_WANTS_SNAPSHOT: Final = frozenset({SyncState.IDLE, SyncState.BUFFERING})


class Lane:
    """Feeds one engine and keeps its snapshot requests' rules (see the module docstring)."""

    __slots__ = (
        "_attempts",
        "_background",
        "_backoff",
        "_closed",
        "_fetching",
        "_held",
        "_last_answer",
        "_queued",
        "_snapshots",
        "ask",
        "engine",
        "ever_synced",
        "snapshot_limit",
        "stats",
        "symbol",
    )

    def __init__(
        self,
        engine: BookEngine,
        symbol: str,
        *,
        snapshot_limit: int,
        stats: ReplicaStats | None = None,
        backoff: Backoff | None = None,
        background: bool = False,
        snapshots: bool = True,
    ) -> None:
        """``stats`` counts delivered snapshots (a ``background`` lane's apart: its requests queue
        last); ``snapshots`` False: the venue has none to ask for."""
        self.engine = engine
        self.symbol = symbol
        self.snapshot_limit = snapshot_limit
        self.ever_synced = False
        self.stats = stats or ReplicaStats()
        self.ask: float | None = None
        """A snapshot request for the owner to place, after this many seconds (None: none). The
        owner takes it (``take_ask``) after each call."""
        self._backoff = backoff or Backoff()
        self._background = background
        self._snapshots = snapshots
        self._held: DepthUpdate | None = None
        self._queued = False
        """An ask was left and not granted yet: the scheduler holds it (asking again changes
        nothing there, so the lane does not)."""
        self._fetching = False
        self._closed = False
        self._attempts = 0
        self._last_answer = -1e9

    @property
    def priority(self) -> Priority:
        if self._background:
            return Priority.BACKGROUND
        return Priority.URGENT if self.ever_synced else Priority.FRESH

    @property
    def synced(self) -> bool:
        return self.engine.synced

    def take_ask(self) -> float | None:
        """The request left in ``ask``, which is cleared."""
        ask, self.ask = self.ask, None
        return ask

    def _ask(self, delay_s: float) -> None:
        """Leave a request in ``ask`` unless one waits in the scheduler already."""
        if not self._queued:
            self._queued = True
            self.ask = delay_s

    def feed(self, update: DepthUpdate) -> EngineResult | None:
        """One event of the lane's symbol, in arrival order (None: held until the grant)."""
        if self._snapshots and self.engine.machine.state is SyncState.IDLE and not self._fetching:
            self._held = update
            if not self._queued:  # ``_ask(0.0)`` inline: every held event of a waiting book passes
                self._queued = True
                self.ask = 0.0
            return None
        return self._handle(self.engine.on_update(update))

    def disconnect(self) -> EngineResult:
        """The stream feeding this lane was lost: the engine starts over."""
        self._held = None
        return self._handle(self.engine.on_disconnect())

    def invalidate(self, reason: str) -> EngineResult:
        """The book was found wrong (or must be rebuilt) for ``reason``: the engine starts over."""
        self._held = None
        return self._handle(self.engine.invalidate(reason))

    def serving(self) -> None:
        """The lane's book is served from now on (a shadow replacing the main): its later requests
        are no longer background ones."""
        self._background = False

    def close(self) -> None:
        """Stop asking for snapshots; answers still in flight are ignored."""
        self._closed = True
        self._held = None
        self.ask = None

    def _handle(self, result: EngineResult) -> EngineResult:
        if not self.ever_synced and self.engine.synced:
            self.ever_synced = True
        if result.need_snapshot and not self._fetching:
            self._ask(self._last_answer + MIN_REFETCH_S - asyncio.get_running_loop().time())
        return result

    # -- the scheduler's side, through the owner ------------------------------------------------

    def snapshot_granted(self) -> tuple[bool, EngineResult | None]:
        """The weight is paid: whether the snapshot is still wanted, and what feeding the held
        event did (the machine starts buffering at the grant)."""
        self._queued = False
        if self._closed or self.engine.machine.state not in _WANTS_SNAPSHOT:
            return False, None
        held, self._held = self._held, None
        result = None
        if self.engine.machine.state is SyncState.IDLE:
            if held is None:
                return False, None  # the engine was reset since it asked; its next event asks again
            self._fetching = True
            result = self._handle(self.engine.on_update(held))
        self._fetching = True
        return True, result

    def snapshot_arrived(self, snapshot: DepthSnapshot) -> EngineResult | None:
        """The snapshot asked for (None: the lane was closed meanwhile)."""
        self._answered()
        if self._closed:
            return None
        self._attempts = 0
        if self._background:
            self.stats.background_snapshots += 1
        else:
            self.stats.snapshots += 1
        return self._handle(self.engine.on_snapshot(snapshot))

    def snapshot_failed(self) -> None:
        """The fetch failed: ask again after a backoff while the engine still buffers."""
        self._answered()
        self.stats.snapshot_failures += 1
        if self._closed or self.engine.machine.state is not SyncState.BUFFERING:
            return
        self._ask(self._backoff.compute(self._attempts))
        self._attempts += 1

    def _answered(self) -> None:
        self._fetching = False
        self._last_answer = asyncio.get_running_loop().time()
