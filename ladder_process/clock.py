"""Ladder's one clock: integer milliseconds since the epoch, injectable (``Clock``) for tests."""

from __future__ import annotations

import time
from collections.abc import Callable

Clock = Callable[[], int]


def now_ms() -> int:
    return time.time_ns() // 1_000_000
