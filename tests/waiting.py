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
