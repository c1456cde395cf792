"""Stopping tasks when a cancellation can be lost.

On Python 3.11, ``asyncio.wait_for`` drops a cancellation that arrives just as the call it waits
for completes (CPython gh-86296, fixed in 3.12 by rebuilding it on ``asyncio.timeout``). redis-py 8
sends every command through ``wait_for`` when a socket timeout is set, as Ladder's store clients
do, so a loop cancelled while one of its store calls returns carries on as if nothing happened,
and whoever waits for it to end waits forever. :func:`cancel_and_wait` cancels again, a few times
a second, whatever has not ended yet: a lost cancellation costs one interval, not the process.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any, Final

AGAIN_S: Final = 0.1
"""How long a cancelled task is given before it is cancelled again."""


async def cancel_and_wait(tasks: Iterable[asyncio.Task[Any]], timeout_s: float) -> set[asyncio.Task[Any]]:
    """Cancel ``tasks`` and wait for them to end, cancelling again every ``AGAIN_S`` those still
    running, for ``timeout_s`` at most; the tasks still running then (none, normally)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    running = {task for task in tasks if not task.done()}
    while running:
        for task in running:
            task.cancel()
        left = deadline - loop.time()
        if left <= 0:
            break
        _done, running = await asyncio.wait(running, timeout=min(AGAIN_S, left))
    return running
