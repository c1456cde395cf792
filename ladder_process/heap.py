"""Short full collections for long-running servers that cache thousands of objects.

CPython's cyclic garbage collector walks every tracked object on a full (generation 2) pass. A
read worker holds thousands of cached books (entries, snapshots, rendered views), and a full pass
over them stopped its event loop for tens of milliseconds (over a hundred on a busy host), which
landed straight in the request p99. Those objects die by reference counting when they are
replaced; the collector is only needed for reference cycles.

So every ``period_s`` :func:`freeze_survivors` collects what is not frozen (cheap: only what was
made since the last round and is still alive) and freezes the survivors (``gc.freeze``), which
later passes skip. The price: an object frozen while alive that later ends up in an unreachable
cycle is never reclaimed. What lives long in these servers (cache entries, snapshots, views,
keys, long-running tasks) forms no such cycles.
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
