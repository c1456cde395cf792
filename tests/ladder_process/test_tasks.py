"""cancel_and_wait: tasks end even when a cancellation is lost on the way."""

from __future__ import annotations

import asyncio

from ladder_process.tasks import cancel_and_wait


def _current() -> asyncio.Task[object]:
    task = asyncio.current_task()
    assert task is not None
    return task


async def _loses_one_cancellation(stopped: list[str]) -> None:
    """A loop whose first cancellation is lost, as one is when it lands in Python 3.11's
    ``asyncio.wait_for`` just as the store call it waits for completes (the caller sees the call's
    result instead, and carries on)."""
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:
        _current().uncancel()  # what wait_for returning the call's result amounts to
    try:
        await asyncio.sleep(30)  # the loop's next turn
    finally:
        stopped.append("stopped")


async def test_a_lost_cancellation_is_made_again() -> None:
    stopped: list[str] = []
    task = asyncio.create_task(_loses_one_cancellation(stopped))
    await asyncio.sleep(0)
    assert await cancel_and_wait([task], 2.0) == set()
    assert task.cancelled() and stopped == ["stopped"]


async def test_what_still_runs_at_the_deadline_is_returned() -> None:
    stubborn_runs = True

    async def ignores_every_cancellation() -> None:
        while stubborn_runs:
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                _current().uncancel()

    stubborn = asyncio.create_task(ignores_every_cancellation())
    plain = asyncio.create_task(asyncio.sleep(30))
    done = asyncio.create_task(asyncio.sleep(0))
    await asyncio.sleep(0.01)
    assert await cancel_and_wait([stubborn, plain, done], 0.3) == {stubborn}
    assert plain.cancelled() and done.done() and not done.cancelled()
    stubborn_runs = False  # the test leaves nothing behind
    stubborn.cancel()
    await asyncio.wait([stubborn], timeout=1.0)
    assert stubborn.done()
