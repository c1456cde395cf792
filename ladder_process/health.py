"""What ``/livez`` and ``/readyz`` of a long-running process answer from.

Liveness is the event loop turning: :class:`LoopWatch` stamps each turn of a short sleep, and the
metrics server, which runs on a thread of its own, reads the stamp. A loop blocked for longer than
the bound fails ``/livez`` with a definite 503 while it is blocked, instead of a probe that times
out and cannot say why.

Readiness is what the component the process runs says of itself: an ingest node is ready once it
is registered with the control store, has read its assignments and has its venue connections up;
the control plane once its last scheduling round reached the store, as leader or standby. Each
implements :class:`Readiness` by reading its own state (no I/O: a probe must cost the stores
nothing), and :class:`ReadinessSlot` holds it from the moment it exists; before that the process
is starting, and not ready.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Check:
    """One condition of readiness: whether it holds, and what a person should know about it."""

    name: str
    ok: bool
    detail: str


class Readiness(Protocol):
    """A component that can say whether it is ready; called on its own event loop."""

    def readiness(self) -> list[Check]: ...


class ReadinessSlot:
    """What ``/readyz`` asks: the component, once the process has made it (``fill``)."""

    def __init__(self) -> None:
        self._component: Readiness | None = None

    def fill(self, component: Readiness) -> None:
        self._component = component

    def readiness(self) -> list[Check]:
        if self._component is None:
            return [Check("started", False, "the process is starting")]
        return self._component.readiness()


class LoopWatch:
    """When the event loop last turned, readable from any thread."""

    def __init__(self, max_block_s: float) -> None:
        self.max_block_s = max_block_s
        self.tick_s = min(0.5, max_block_s / 4)
        self._turned_at = time.monotonic()

    async def run(self) -> None:
        """Stamp every turn of a ``tick_s`` sleep until cancelled."""
        while True:
            self._turned_at = time.monotonic()
            await asyncio.sleep(self.tick_s)

    def blocked_s(self) -> float:
        """How long the loop has held up the watch's next stamp (0 while it keeps time)."""
        return max(0.0, time.monotonic() - self._turned_at - self.tick_s)

    @property
    def blocked(self) -> bool:
        return self.blocked_s() > self.max_block_s
