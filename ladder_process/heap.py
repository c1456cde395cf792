"""Short full collections for long-running servers that hold hundreds of thousands of objects.

CPython's cyclic garbage collector walks every tracked object on a full (generation 2) pass. A
read worker holds thousands of cached books (entries, snapshots, rendered views); an ingest node
holds every replica's book, two sorted dicts of levels each, whose entries a pass visits one by
one. A full pass stopped a read worker's event loop for tens of milliseconds and an ingest node's,
with all of Binance's books, for hundreds of milliseconds, which landed straight in the
read and stream p99. Those objects die by reference counting when they are replaced; the
collector is only needed for reference cycles.

So every ``period_s`` :func:`freeze_survivors` collects what is not frozen (cheap: only what was
made since the last round and is still alive) and freezes the survivors (``gc.freeze``), which
later passes skip. The price: an object frozen while alive that later ends up in an unreachable
cycle is never reclaimed. What lives long in these servers (cache entries, snapshots, views,
keys, replicas, lanes, books, long-running tasks) forms no such cycles, and a test holds the
ingest node to it (tests/ingest_nodes/test_runtime_heap.py).
"""

from __future__ import annotations

import asyncio
import gc

FREEZE_EVERY_S = 10.0


async def freeze_survivors(period_s: float = FREEZE_EVERY_S) -> None:
    """Run until cancelled: each round, collect the unfrozen objects, then freeze the survivors."""
    while True:
        await asyncio.sleep(period_s)
        gc.collect()
        gc.freeze()
