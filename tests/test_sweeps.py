"""Sweeps hand out every item once and let other work run between slices."""

from __future__ import annotations

import asyncio

from ladder_process.sweeps import in_slices


async def test_every_item_comes_once_in_order_and_other_tasks_run_between_slices() -> None:
    seen: list[int] = []
    ticks: list[int] = []

    async def ticker() -> None:
        while True:
            ticks.append(len(seen))
            await asyncio.sleep(0)

    task = asyncio.get_running_loop().create_task(ticker())
    await asyncio.sleep(0)
    async for part in in_slices(list(range(10)), size=4):
        seen.extend(part)
    task.cancel()
    assert seen == list(range(10))
    assert 4 in ticks and 8 in ticks  # the ticker ran after the first and after the second slice


async def test_a_sweep_of_nothing_yields_nothing() -> None:
    nothing: list[int] = []
    assert [part async for part in in_slices(nothing, size=4)] == []
