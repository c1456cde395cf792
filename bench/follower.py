"""A read worker's book cache in a process of its own, following books while a benchmark publishes them.

A read worker keeps every book it serves true from the change channel: each change message of a
cached book is decoded and applied to its entry (:class:`~read_functions.books.cache.BookCache`, as
``ladder read`` builds it). This process runs
that cache over the books it is given and nothing else, so that its CPU time per change message is
what one read worker pays to follow a book, and the bytes it receives are what the store sends each
worker that caches the book. Every followed book counts as read: after each change its view at
``depth`` is asked for (as a reader between two changes would), so every change renders it.

The benchmark starts it (:func:`start`), which returns once every book is loaded; :meth:`Follower.begin`
and :meth:`Follower.end` bracket what is measured.
"""

from __future__ import annotations

import asyncio
import multiprocessing.connection
import time
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.process import BaseProcess

import redis.asyncio as redis

from bench import forked
from book_store.schema import BookKey
from ladder_process.clock import now_ms
from read_functions.books.cache import BookCache
from read_functions.books.entry import Entry
from read_functions.books.render import Side

ANSWER_S = 60.0
"""How long the follower may take to answer ``end`` (it answers between two turns of its loop)."""
MAX_SILENCE_MS = 3_600_000
"""The follower serves whatever it holds (a benchmark's quiet spells are not outages)."""


@dataclass
class Followed:
    """What the follower measured between :meth:`Follower.begin` and :meth:`Follower.end`."""

    messages: int
    payload_bytes: int
    cpu_seconds: float
    wall_seconds: float

    @property
    def cpu_us_per_message(self) -> float:
        return self.cpu_seconds / self.messages * 1e6 if self.messages else 0.0

    @property
    def bytes_per_message(self) -> float:
        return self.payload_bytes / self.messages if self.messages else 0.0


class _CountingCache(BookCache):
    """The read worker's cache, counting the change messages' bytes as they arrive, and reading
    each changed book at ``depth`` after its change."""

    payload_bytes = 0
    depth = 0

    def _on_message(self, channel: bytes, data: bytes | memoryview) -> None:
        self.payload_bytes += len(data)
        super()._on_message(channel, data)
        entry = self._by_channel.get(channel)
        if entry is not None:
            _read_again(entry, self.depth)


def _read_again(entry: Entry, depth: int) -> None:
    """What a reader of the book does between two changes: ask for its view at ``depth``."""
    served = entry.served(now_ms(), MAX_SILENCE_MS)
    if served is not None:
        entry.view(served, depth, Side.BOTH)


async def _follow(
    redis_url: str, books: Sequence[BookKey], depth: int, pipe: multiprocessing.connection.Connection
) -> None:
    client = redis.Redis.from_url(redis_url)
    cache = _CountingCache(client, redis_url)
    cache.depth = depth
    await cache.start()
    for entry in await cache.entries(list(books)):
        _read_again(entry, depth)
    pipe.send("ready")
    loop = asyncio.get_running_loop()
    while await loop.run_in_executor(None, pipe.recv) == "begin":
        messages, payload = cache.messages, cache.payload_bytes
        cpu, wall = time.process_time(), time.perf_counter()
        await loop.run_in_executor(None, pipe.recv)  # end
        pipe.send(
            Followed(
                cache.messages - messages,
                cache.payload_bytes - payload,
                time.process_time() - cpu,
                time.perf_counter() - wall,
            )
        )
    await cache.close()
    await client.aclose()


def _main(
    redis_url: str, books: Sequence[BookKey], depth: int, pipe: multiprocessing.connection.Connection
) -> None:
    import uvloop

    uvloop.run(_follow(redis_url, books, depth, pipe))


class Follower:
    """A running follower process (see the module docstring)."""

    def __init__(self, process: BaseProcess, pipe: multiprocessing.connection.Connection) -> None:
        self.process = process
        self._pipe = pipe

    @property
    def pid(self) -> int:
        assert self.process.pid is not None
        return self.process.pid

    def begin(self) -> None:
        self._pipe.send("begin")

    def end(self) -> Followed:
        self._pipe.send("end")
        followed: Followed = forked.message(self.process, self._pipe, ANSWER_S, "the follower")
        return followed

    def stop(self) -> None:
        self._pipe.send("stop")
        self.process.join(5)
        if self.process.is_alive():
            self.process.kill()
        self.process.join(5)


def start(redis_url: str, books: Sequence[BookKey], depth: int, timeout_s: float = 60.0) -> Follower:
    """A follower of ``books``, read at ``depth``, once it has loaded all of them."""
    process, ours = forked.start(_main, redis_url, list(books), depth)
    if forked.message(process, ours, timeout_s, "the follower, loading its books") != "ready":
        process.kill()
        raise RuntimeError("the follower did not say it was ready")
    return Follower(process, ours)
