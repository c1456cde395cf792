"""Waiting in a test for something that happens in the background (a message, a sync)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


async def wait_until(
    predicate: Callable[[], bool], timeout_s: float, what: str, poll_s: float = 0.02
) -> None:
    """Poll ``predicate`` until it holds; AssertionError naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        await asyncio.sleep(poll_s)


async def away_from_minute_edge() -> None:
    """A venue's weight budget counts per calendar minute (and grants nothing in a minute's last
    quarter second): keep a test's spending inside one minute."""
    into_minute = time.time() % 60
    if into_minute > 54:
        await asyncio.sleep(60.5 - into_minute)
