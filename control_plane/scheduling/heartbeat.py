"""The node's heartbeat to the control store, on a thread of its own, so a busy node never looks dead.

Theory of operation
-------------------
Past what its machine holds, a node's event loop is busy for long turns: each reads whatever the
venue sockets hold, applies it and publishes what changed. A heartbeat sent from that loop needs a
few turns for its round trip, so it arrives seconds late; the control plane then judges the node
dead and moves thousands of replicas, whose resyncs cost more CPU still (overload cascades). So the
heartbeat runs on a thread with its own event loop and its own connection to the control store: it
needs the interpreter for microseconds every period, which a busy main thread hands over within
the switch interval (5 ms), however long the main loop's turns are.

A heartbeat still says that the node works, not only that its process exists: the main loop stamps
``progress`` every ``TICK_S``, and the thread heartbeats only while that stamp is younger than
``stall_limit_s``. A loop stuck longer (a deadlock, a computation that never ends) stops the
heartbeats and the node is judged dead, as before. A loop that is merely slow keeps its replicas;
its books carry their own publish times, which is how readers judge whether they are current.

``reached_at`` is when the last heartbeat that got through was sent (``time.monotonic``); the
node's writer fence and its readiness read it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable

from book_store.connect import StoreClient
from control_plane.models import NodeInfo
from control_plane.scheduling.assignments import AssignmentClient
from ladder_process.errors import StoreError

log = logging.getLogger(__name__)

TICK_S = 0.1
"""How often the main loop stamps its progress."""


class HeartbeatThread:
    """Heartbeats ``node`` every ``period_s`` from a thread, while the main loop makes progress."""

    def __init__(
        self,
        connect: Callable[[], StoreClient],
        node_id: str,
        registrations: dict[str, NodeInfo],
        *,
        period_s: float,
        timeout_s: float,
        stall_limit_s: float,
        load: Callable[[], float],
    ) -> None:
        """``connect`` makes the thread's own client to the control store (called on the thread);
        ``registrations`` are the node's own client's (``AssignmentClient.registrations``), to register it
        again if the registry forgot it;
        ``load`` is read on the thread (it must be safe to call from there: a length, a counter)."""
        self._connect = connect
        self._node_id = node_id
        self._registrations = registrations
        self._period_s = period_s
        self._timeout_s = timeout_s
        self._stall_limit_s = stall_limit_s
        self._load = load
        self.reached_at = time.monotonic()
        self.progress = time.monotonic()
        """When the main loop last ran its tick."""
        self.sent = 0
        """Heartbeats that got through (for tests and counters)."""
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._tick: asyncio.TimerHandle | None = None

    def start(self) -> None:
        """Start ticking on the running (main) loop and heartbeating on the thread."""
        self._stamp()
        self._thread = threading.Thread(target=self._run, name=f"heartbeat-{self._node_id}", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop heartbeating (the thread ends after its current round trip, within ``timeout_s``)."""
        self._stopping.set()
        if self._tick is not None:
            self._tick.cancel()
        if self._thread is not None:
            self._thread.join(timeout_s)

    def _stamp(self) -> None:
        self.progress = time.monotonic()
        self._tick = asyncio.get_running_loop().call_later(TICK_S, self._stamp)

    def _run(self) -> None:
        asyncio.run(self._beat())

    async def _beat(self) -> None:
        client = self._connect()
        assignments = AssignmentClient(client, registrations=self._registrations)
        stalled = False
        try:
            while not self._stopping.is_set():
                sent_at = time.monotonic()
                if sent_at - self.progress > self._stall_limit_s:
                    if not stalled:
                        log.error("the event loop has made no progress for %.1f s: heartbeats stop",
                                  sent_at - self.progress)  # fmt: skip
                    stalled = True
                else:
                    stalled = False
                    await self._send(assignments, sent_at)
                await asyncio.sleep(max(0.0, self._period_s - (time.monotonic() - sent_at)))
        finally:
            with contextlib.suppress(Exception):
                await client.aclose()

    async def _send(self, assignments: AssignmentClient, sent_at: float) -> None:
        try:
            # A store that does not answer at all (a partition) must not hold the thread forever.
            await asyncio.wait_for(assignments.heartbeat(self._node_id, load=self._load()), self._timeout_s)
        except (StoreError, TimeoutError) as exc:
            log.warning("control plane unreachable (%s); keeping current replicas", type(exc).__name__)
        else:
            self.reached_at = sent_at
            self.sent += 1
