"""Sweeps over thousands of objects that leave the event loop its turns.

A node keeps thousands of replicas, and several of its loops visit every one of them: the
keepalive, the stall checks' scan, the counters it reports. Done in one go, each such visit holds
the event loop for milliseconds (tens with a contended CPU), and every venue event that arrives
meanwhile waits: the sweeps were what a stream's latency p99 was made of. :func:`in_slices` hands
out a sweep's items a slice at a time and lets the loop run between slices, so a sweep's cost is
spread over many turns and no event waits for more than one slice. Whatever a sweep does to an
item must hold if the item changed (or went) between slices: callers check.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Final, TypeVar

T = TypeVar("T")

SLICE: Final = 256
"""Items a sweep visits per loop turn: some hundred microseconds of work for the usual visit."""


async def in_slices(items: Sequence[T], size: int = SLICE) -> AsyncIterator[Sequence[T]]:
    """``items`` a slice of ``size`` at a time, with a turn of the event loop before each slice
    after the first."""
    for start in range(0, len(items), size):
        if start:
            await asyncio.sleep(0)
        yield items[start : start + size]
