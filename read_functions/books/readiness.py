"""Whether this worker can serve, checked in the background so that ``GET /readyz`` costs nothing.

A probe that pinged the store on every call would let anyone who can reach the port turn probes
into store traffic. So one task per worker pings the store every ``interval_s`` (each ping may take
``timeout_s``) and keeps the answer; ``/readyz`` reports it, with the feed's state read from
memory. A store that stops answering shows within ``interval_s + timeout_s``. After each answered
ping the task also runs ``also`` (the catalog states' refresh), so ``/readyz`` can say which
exchange's market list is missing without reaching the store itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from redis.exceptions import RedisError

from book_store.connect import StoreClient
from ladder_process.errors import StoreError

log = logging.getLogger(__name__)


class StoreReadiness:
    """The last answer of the store to a background ``PING``: ``reachable`` until one fails."""

    def __init__(
        self,
        client: StoreClient,
        *,
        interval_s: float = 1.0,
        timeout_s: float = 1.0,
        also: Callable[[], Awaitable[object]] | None = None,
    ) -> None:
        self._client = client
        self._also = also
        self._interval_s = interval_s
        self._timeout_s = timeout_s
        self.reachable = False
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    async def start(self) -> None:
        """Ping once (the first answer is known before the worker serves), then keep pinging."""
        await self._ping()
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def close(self) -> None:
        self._closed = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        # The loop also ends on the flag: a cancellation that meets a ping's own timeout can come
        # out of it as the TimeoutError the ping expects (asyncio.timeout with redis-py, CPython
        # 3.11: about one close in thirty with pings timing out), and a worker's or a test's
        # shutdown then waited for this task for ever.
        while not self._closed:
            await asyncio.sleep(self._interval_s)
            await self._ping()

    async def _ping(self) -> None:
        try:
            async with asyncio.timeout(self._timeout_s):
                await self._client.ping()
        except (RedisError, OSError, TimeoutError) as exc:
            if self.reachable:
                log.warning("the store stopped answering (%s): /readyz says 503", exc)
            self.reachable = False
        else:
            self.reachable = True
            if self._also is not None:
                with contextlib.suppress(StoreError, TimeoutError):
                    async with asyncio.timeout(self._timeout_s):
                        await self._also()
