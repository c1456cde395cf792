"""One sync engine and the way it gets snapshots: the start gate, the grant, the answer.

Theory of operation
-------------------
A ``Lane`` feeds venue events to one :class:`~ingest_nodes.core.engine.BookEngine` and serves the
engine's snapshot requests through the exchange's :class:`~ingest_nodes.runtime.snapshots.SnapshotScheduler`.

Start gate: an engine that holds nothing (machine ``IDLE``: a new book, or one thrown away after a
disconnect or a crossed book) does not start buffering while it waits for its turn in the weight
budget. The lane keeps only the latest event and queues a request; when the grant comes it feeds
that event (the machine starts buffering and asks for the snapshot) and the snapshot is fetched at
once. Events dropped before the grant are older than the snapshot, so the machine would have
dropped them too; and if anything is missing in between, the machine's id rules see the gap.

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
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Final

from ingest_nodes.core.backoff import Backoff
from ingest_nodes.core.engine import BookEngine, EngineResult
from ingest_nodes.core.events import DepthSnapshot, DepthUpdate
from ingest_nodes.core.sync import SyncState
from ingest_nodes.ops.stats import ReplicaStats
from ingest_nodes.runtime.snapshots import Priority, SnapshotError, SnapshotScheduler

# After a snapshot that turned out too old, wait this long before the next one: the stream has to
# move past it, and asking again at once costs weight for nothing.
MIN_REFETCH_S: Final = 0.25

_WANTS_SNAPSHOT: Final = frozenset({SyncState.IDLE, SyncState.BUFFERING})


def _ignore(result: EngineResult) -> None:
    """Where a closed lane's results go."""


class Lane:
    """Feeds one engine and fetches its snapshots (see the module docstring)."""

    __slots__ = (
        "_attempts",
        "_background",
        "_backoff",
        "_closed",
        "_fetching",
        "_held",
        "_last_answer",
        "_on_result",
        "_scheduler",
        "_snapshots",
        "_trace",
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
        scheduler: SnapshotScheduler,
        on_result: Callable[[EngineResult], None],
        stats: ReplicaStats | None = None,
        trace: Callable[[], AbstractContextManager[None]] = nullcontext,
        backoff: Backoff | None = None,
        background: bool = False,
        snapshots: bool = True,
    ) -> None:
        """``on_result`` hears every engine result; ``stats`` counts delivered snapshots (a
        ``background`` lane's apart: its requests queue last); ``trace()`` wraps each request;
        ``snapshots`` False: the venue has none to ask for."""
        self.engine = engine
        self.symbol = symbol
        self.snapshot_limit = snapshot_limit
        self.ever_synced = False
        self.stats = stats or ReplicaStats()
        self._scheduler = scheduler
        self._on_result = on_result
        self._trace = trace
        self._backoff = backoff or Backoff()
        self._background = background
        self._snapshots = snapshots
        self._held: DepthUpdate | None = None
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

    def feed(self, update: DepthUpdate) -> None:
        """One event of the lane's symbol, in arrival order."""
        if self._snapshots and self.engine.machine.state is SyncState.IDLE and not self._fetching:
            self._held = update
            self._scheduler.request(self)
            return
        self._handle(self.engine.on_update(update))

    def disconnect(self) -> None:
        """The stream feeding this lane was lost: the engine starts over."""
        self._held = None
        self._handle(self.engine.on_disconnect())

    def invalidate(self, reason: str) -> None:
        """The book was found wrong (or must be rebuilt) for ``reason``: the engine starts over."""
        self._held = None
        self._handle(self.engine.invalidate(reason))

    def retarget(self, on_result: Callable[[EngineResult], None], *, background: bool) -> None:
        """Send the engine's results somewhere else from now on (a shadow lane becoming the main,
        whose later requests are no longer background ones)."""
        self._on_result = on_result
        self._background = background

    def close(self) -> None:
        """Stop asking for snapshots; answers still in flight are ignored.

        A closed lane lets go of its replica (its result callback and trace are the replica's):
        without that cycle a retired lane, its engine and its book are freed by reference counting,
        which the node relies on because it keeps its heap out of the collector
        (``ladder_process.heap``)."""
        self._closed = True
        self._held = None
        self._scheduler.cancel(self)
        self._on_result = _ignore
        self._trace = nullcontext

    def _handle(self, result: EngineResult) -> None:
        if self.engine.synced:
            self.ever_synced = True
        if result.need_snapshot and not self._fetching:
            delay = self._last_answer + MIN_REFETCH_S - asyncio.get_running_loop().time()
            self._scheduler.request(self, delay_s=delay)
        self._on_result(result)

    # -- the scheduler's side (SnapshotRequester) ------------------------------------------------

    def snapshot_granted(self) -> bool:
        if self._closed or self.engine.machine.state not in _WANTS_SNAPSHOT:
            return False
        held, self._held = self._held, None
        if self.engine.machine.state is SyncState.IDLE:
            if held is None:
                return False  # the engine was reset since it asked; its next event asks again
            self._fetching = True
            self._handle(self.engine.on_update(held))
        self._fetching = True
        return True

    def fetching(self) -> AbstractContextManager[None]:
        return self._trace()

    def snapshot_arrived(self, snapshot: DepthSnapshot) -> None:
        self._answered()
        if self._closed:
            return
        self._attempts = 0
        if self._background:
            self.stats.background_snapshots += 1
        else:
            self.stats.snapshots += 1
        self._handle(self.engine.on_snapshot(snapshot))

    def snapshot_failed(self, error: SnapshotError) -> None:
        self._answered()
        self.stats.snapshot_failures += 1
        if self._closed or self.engine.machine.state is not SyncState.BUFFERING:
            return
        delay = self._backoff.compute(self._attempts)
        self._attempts += 1
        self._scheduler.request(self, delay_s=delay)

    def _answered(self) -> None:
        self._fetching = False
        self._last_answer = asyncio.get_running_loop().time()
