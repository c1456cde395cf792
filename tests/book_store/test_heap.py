"""Survivors are frozen out of full collections, and cycles made afterwards are still collected."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import weakref

from ladder_process.heap import freeze_survivors


class Node:
    """A GC-tracked object that can point at itself."""

    def __init__(self) -> None:
        self.other: Node | None = None


async def test_survivors_are_frozen_and_later_cycles_are_still_collected() -> None:
    before = gc.get_freeze_count()
    kept = [Node() for _ in range(1000)]
    task = asyncio.get_running_loop().create_task(freeze_survivors(0.05))
    try:
        await asyncio.sleep(0.12)
        assert gc.get_freeze_count() >= before + len(kept)

        cycle = Node()
        cycle.other = cycle
        alive = weakref.ref(cycle)
        del cycle
        await asyncio.sleep(0.12)  # the next round collects before it freezes
        assert alive() is None
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        gc.unfreeze()
