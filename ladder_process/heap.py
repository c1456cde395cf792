"""Short full collections for long-running servers that hold hundreds of thousands of objects.

CPython's cyclic garbage collector walks every tracked object on a full (generation 2) pass. A
read worker holds thousands of cached books (entries, snapshots, rendered views); an ingest node
holds every replica's book, two sorted dicts of levels each, whose entries a pass visits one by
one. A full pass stopped a read worker's event loop for tens of milliseconds and an ingest node's,
with all of Binance's books, for hundreds of milliseconds, which landed straight in the
read and stream p99. Those objects die by reference counting when they are replaced; the
collector is only needed for reference cycles.

So every ``period_s`` :func:`freeze_survivors` collects what is not frozen (only what was made
since the last round and is still alive) and freezes the survivors (``gc.freeze``), which later
passes skip. A round walks every object made since the last one that is still alive, and each
object's references (a list of a book's levels costs a memory fetch per level). Rounds closer
together than the objects' lifetimes walk nearly everything made meanwhile; objects replaced within
a period die by reference counting before any round sees them, so a round walks at most the live
objects that turned over since the last one. Rarer rounds cost less in all, and a round's pause
stops growing once the period outlasts the objects it would walk. Each process picks its period
between the two: pauses short and rare enough to stay out of its p99 (figures: docs/scale.md).

While the rounds run, they are the only collections: the automatic collector is off. Its young
collections do not stay small here: it counts allocations net of deallocations, so a new snapshot
that replaces an old one leaves the count where it was while the youngest generation keeps
growing, until a burst makes the next young pass walk all of it. In a read worker following a
quarter of Binance those passes took 0.6 ms on average and up to 20 ms, on top of the rounds; a
round walks the same survivors, so they bought nothing. A reference cycle made between rounds
lives until the next one, which bounds what cycles can hold to what a period allocates.

The price: an object frozen while alive that later ends up in an unreachable cycle is never
reclaimed by a round. What this code keeps long (cache entries, snapshots, views, keys,
replicas, lanes, books, connections) is freed by reference counting, and tests hold the ingest
node and the read worker to it (tests/ingest_nodes/runtime/test_heap.py,
tests/read_functions/server/test_worker_heap.py). Libraries are not all so careful (the socket
transports of CPython's own event loop are cycles), so every ``thaw_every_s`` a round first
unfreezes everything and walks the whole heap: one long pause that bounds what such cycles can hold.
"""

from __future__ import annotations

import asyncio
import gc
import time


async def freeze_survivors(period_s: float, thaw_every_s: float | None = None) -> None:
    """Run until cancelled, the automatic collector off meanwhile: every ``period_s`` (each process
    says its own: how much its rounds may walk), collect the unfrozen objects, then freeze the
    survivors; every ``thaw_every_s`` (if given), collect everything, frozen or not, first."""
    thawed = time.monotonic()
    gc.disable()
    try:
        while True:
            await asyncio.sleep(period_s)
            if thaw_every_s is not None and time.monotonic() - thawed >= thaw_every_s:
                gc.unfreeze()
                thawed = time.monotonic()
            gc.collect()
            gc.freeze()
    finally:
        gc.enable()
