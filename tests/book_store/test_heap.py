"""Survivors are frozen out of full collections, cycles made afterwards are still collected, and a
thawing round collects what was frozen."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import weakref

from ladder_process.heap import freeze_survivors
from tests.waiting import wait_until


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


async def test_a_thawing_round_collects_cycles_that_were_frozen_alive() -> None:
    cycle = Node()
    cycle.other = cycle
    alive = weakref.ref(cycle)
    gc.freeze()
    del cycle
    task = asyncio.get_running_loop().create_task(freeze_survivors(0.05, thaw_every_s=1.0))
    try:
        await asyncio.sleep(0.2)  # rounds that only freeze cannot reach it
        assert alive() is not None
        await wait_until(lambda: alive() is None, 5, "a thawing round walked the whole heap")
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        gc.unfreeze()


async def test_the_rounds_are_the_only_collections_while_they_run() -> None:
    assert gc.isenabled()
    task = asyncio.get_running_loop().create_task(freeze_survivors(0.05))
    try:
        await asyncio.sleep(0)
        assert not gc.isenabled(), "young collections would walk what a round walks anyway"
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        gc.unfreeze()
    assert gc.isenabled(), "the automatic collector is back once the rounds stop"
