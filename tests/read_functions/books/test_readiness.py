"""The readiness task ends when closed, whatever its pings are doing: a close that waited for ever
hung a test's teardown (and, before pytest-timeout, a whole CI run)."""

from __future__ import annotations

import asyncio
import random

from book_store.connect import StoreClient
from read_functions.books.readiness import StoreReadiness
from tests.stores import pause


async def test_close_ends_the_task_even_when_a_ping_times_out_at_that_moment(
    redis_client: StoreClient,
) -> None:
    """Pings that time out every few milliseconds (the store paused), closed at random moments: a
    cancellation meeting a ping's own timeout used to come out as a TimeoutError, which the ping
    takes for an unreachable store, and the task went on (about one close in thirty)."""
    rng = random.Random(35)
    hung = 0
    for round_ in range(120):
        readiness = StoreReadiness(redis_client, interval_s=0.001, timeout_s=0.005)
        await readiness.start()
        await asyncio.sleep(rng.uniform(0, 0.02))
        if round_ % 2:
            await pause(redis_client, 50)
            await asyncio.sleep(rng.uniform(0, 0.01))
        try:
            await asyncio.wait_for(asyncio.shield(readiness.close()), 2.0)
        except TimeoutError:
            hung += 1
    assert hung == 0
