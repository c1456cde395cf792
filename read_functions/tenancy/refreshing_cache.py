"""A look-up cache whose entries are never older than ``max_age_s`` and rarely make anyone wait.

Theory of operation
-------------------
An entry is served only while it is younger than ``max_age_s`` (its age counts from the moment
its load *started*, so a change made in the store before that moment is always reflected). To
keep readers from paying for a reload, a background task wakes every ``max_age_s / 4`` and
reloads each entry that was used since its last load and is at least ``max_age_s / 2`` old; so
an entry in steady use is reloaded about twice per ``max_age_s``, never expires, and only a first
use, or a use after a quiet spell, waits for the loader. A change in the source therefore reaches
every reader within ``max_age_s`` even without a notification; :meth:`RefreshingCache.forget`
makes a notified change visible at once.

The caller's errors (``ApiError``: an unknown key, a disabled tenant) are cached like values, so
a client retrying a bad key does not turn into store traffic; store failures are not cached.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import time
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

from control_plane.errors import ApiError

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class _Slot(Generic[V]):
    __slots__ = ("error", "loaded_at", "used", "value")

    def __init__(self, value: V | None, error: ApiError | None, loaded_at: float) -> None:
        self.value = value
        self.error = error
        self.loaded_at = loaded_at
        self.used = False


class RefreshingCache(Generic[K, V]):
    """Values of ``load(key)``, at most ``max_age_s`` old, refreshed while in use."""

    def __init__(
        self,
        load: Callable[[K], Awaitable[V]],
        *,
        max_age_s: float = 1.0,
        idle_s: float = 60.0,
        max_entries: int = 100_000,
    ) -> None:
        self._load = load
        self._max_age_s = max_age_s
        self._idle_s = idle_s
        self._max_entries = max_entries
        self._slots: dict[K, _Slot[V]] = {}
        self._loading: dict[K, asyncio.Task[_Slot[V]]] = {}
        self._refresher: asyncio.Task[None] | None = None

    async def get(self, key: K) -> V:
        slot = self._slots.get(key)
        if slot is None or time.monotonic() - slot.loaded_at >= self._max_age_s:
            slot = await asyncio.shield(self._reload(key))
        slot.used = True
        if slot.error is not None:
            raise copy.copy(slot.error)  # a fresh instance: re-raising one would grow its traceback
        return slot.value  # type: ignore[return-value]  # no error means a value was loaded

    def __len__(self) -> int:
        return len(self._slots)

    def __contains__(self, key: K) -> bool:
        """True when ``key`` has an entry, fresh or not (unused ones go after ``idle_s``)."""
        return key in self._slots

    def holds(self, key: K) -> bool:
        """True when :meth:`get` would answer ``key`` from memory (a fresh value or error)."""
        slot = self._slots.get(key)
        return slot is not None and time.monotonic() - slot.loaded_at < self._max_age_s

    def forget(self, key: K) -> None:
        self._slots.pop(key, None)

    def clear(self) -> None:
        self._slots.clear()

    def start(self) -> None:
        if self._refresher is None:
            self._refresher = asyncio.get_running_loop().create_task(self._refresh_loop())

    async def close(self) -> None:
        tasks = [t for t in (self._refresher, *self._loading.values()) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._refresher = None

    def _reload(self, key: K) -> asyncio.Task[_Slot[V]]:
        task = self._loading.get(key)
        if task is None:
            task = self._loading[key] = asyncio.get_running_loop().create_task(self._fill(key))
            task.add_done_callback(lambda _t: self._loading.pop(key, None))
        return task

    async def _fill(self, key: K) -> _Slot[V]:
        started = time.monotonic()
        try:
            slot: _Slot[V] = _Slot(await self._load(key), None, started)
        except ApiError as exc:
            slot = _Slot(None, exc.with_traceback(None), started)
        previous = self._slots.pop(key, None)
        if previous is not None:
            slot.used = previous.used
        self._slots[key] = slot
        while len(self._slots) > self._max_entries:
            del self._slots[next(iter(self._slots))]
        return slot

    async def _refresh_loop(self) -> None:
        while True:
            await asyncio.sleep(self._max_age_s / 4)
            now = time.monotonic()
            due: list[K] = []
            for key, slot in list(self._slots.items()):
                age = now - slot.loaded_at
                if slot.used and age >= self._max_age_s / 2:
                    slot.used = False
                    due.append(key)
                elif not slot.used and age >= self._idle_s:
                    del self._slots[key]
            if due:
                # Failures (a store outage) leave the old entry to expire; readers then retry.
                await asyncio.gather(*(self._reload(key) for key in due), return_exceptions=True)
