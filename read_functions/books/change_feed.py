"""One pub/sub connection to the book store, owned outright so that a drop is never hidden.

Theory of operation
-------------------
The book cache is only true while every change message of every cached book reaches it. A client
library that reconnects and re-subscribes by itself would silently lose the messages published
while it was away, so this module speaks the few RESP2 commands pub/sub needs over its own
socket: ``SUBSCRIBE``, ``UNSUBSCRIBE`` and ``PING``, parsing replies as bytes arrive
(:mod:`read_functions.books.resp_parser`), with no await per message. When the socket fails, or a
``PING`` goes unanswered for a whole interval, it calls ``on_reset`` (the cache drops everything), fails the
subscriptions still waiting for their confirmation, and reconnects with a back-off.

:meth:`ChangeFeed.subscribe` returns once the server has confirmed every channel, so a reader
that subscribes first and fetches afterwards cannot miss a publish in between.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable

from book_store.connect import command, open_connection, opening
from ladder_process.errors import StoreUnavailableError
from read_functions.books.resp_parser import RespError, RespParser

log = logging.getLogger(__name__)

_STABLE_S = 1.0
"""A connection that lasted this long was up; one closed sooner counts as a failed connect."""

MessageHandler = Callable[[bytes, bytes | memoryview], None]
"""``(channel, payload)``: the payload is often a view into the received data (see
read_functions.books.resp_parser)."""


class ChangeFeed:
    """Delivers ``on_message(channel, data)`` for subscribed channels; ``on_reset()`` after a drop."""

    def __init__(
        self,
        redis_url: str,
        on_message: MessageHandler,
        on_reset: Callable[[], None],
        *,
        standing: Iterable[str] = (),
        ping_interval_s: float = 5.0,
        connect_timeout_s: float = 5.0,
        on_dropped: Callable[[bytes], None] | None = None,
        next_url: Callable[[], str] | None = None,
    ) -> None:
        """``standing`` channels are subscribed on every (re)connection, before anything else.

        With ``on_dropped`` the feed is *sharded*: one node of a cluster, ``SSUBSCRIBE`` one channel
        per command (a command's channels must share a slot), and ``on_dropped(channel)`` when the
        node ends a subscription it was not asked to end (its slot moved, or the node is a primary
        no more). ``next_url()``, when given, names the node of each connection attempt instead of
        ``redis_url`` (any node of a cluster will do for channels that are not sharded)."""
        self._url = redis_url
        self._next_url = next_url
        self._standing = [c.encode() for c in standing]
        self._on_dropped = on_dropped
        self._subscribed: set[bytes] = set()  # sharded only: what the node has not been asked to end
        self._ending: dict[bytes, int] = {}
        """Sharded only: per channel, the ``SUNSUBSCRIBE`` sent and not answered yet. Their replies
        end nothing of a subscription made since, which the node has not been asked to end."""
        self._on_message = on_message
        self._on_reset = on_reset
        self._ping_interval_s = ping_interval_s
        self._connect_timeout_s = connect_timeout_s
        self._transport: asyncio.WriteTransport | None = None
        self._waiting: dict[bytes, asyncio.Future[None]] = {}
        self._pong_due = False
        self._connected = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self.resets = 0

    @property
    def connected(self) -> bool:
        return self._transport is not None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="ladder-change-feed")

    async def wait_connected(self, timeout_s: float) -> bool:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._connected.wait(), timeout_s)
        return self.connected

    async def close(self) -> None:
        # The flag and the abort end the loop too: a cancellation that meets a connect's timeout
        # can come out as the TimeoutError the loop retries on (see read_functions/books/readiness.py).
        self._closed = True
        if self._transport is not None:
            self._transport.abort()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def subscribe(self, channels: Iterable[str]) -> None:
        """Subscribe and wait for the server's confirmation of every channel."""
        names = [c.encode() for c in channels]
        transport = self._transport
        # A connection the server just closed is still ours until its loss is processed.
        if transport is None or transport.is_closing():
            raise StoreUnavailableError("change feed is not connected")
        try:
            if self._on_dropped is None:
                transport.write(command(b"SUBSCRIBE", *names))
            else:
                self._subscribed.update(names)
                transport.write(b"".join(command(b"SSUBSCRIBE", name) for name in names))
        except (OSError, RuntimeError) as exc:  # uvloop: "the handler is closed"
            raise StoreUnavailableError("change feed connection lost") from exc
        loop = asyncio.get_running_loop()
        futures = []
        for name in names:  # no await since the write: no confirmation can have come yet
            future = self._waiting.get(name)
            if future is None:
                future = self._waiting[name] = loop.create_future()
            futures.append(future)
        # Every future is awaited to the end, so a lost connection's error is retrieved once each.
        for outcome in await asyncio.gather(*futures, return_exceptions=True):
            if isinstance(outcome, BaseException):
                raise outcome

    def unsubscribe(self, channels: Iterable[str]) -> None:
        """Stop receiving ``channels`` (no confirmation awaited; late messages are ignored)."""
        names = [c.encode() for c in channels]
        if not names or self._transport is None:
            return
        if self._on_dropped is None:
            self._transport.write(command(b"UNSUBSCRIBE", *names))
        else:
            self._subscribed.difference_update(names)
            for name in names:
                self._ending[name] = self._ending.get(name, 0) + 1
            self._transport.write(b"".join(command(b"SUNSUBSCRIBE", name) for name in names))

    async def _run(self) -> None:
        backoff = 0.05
        while not self._closed:
            try:
                protocol = await asyncio.wait_for(self._open(), self._connect_timeout_s)
            except (OSError, TimeoutError) as exc:
                log.warning("change feed: cannot connect (%s); retrying in %.2f s", exc, backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 2.0)
                continue
            opened_at = asyncio.get_running_loop().time()
            self._transport = protocol.transport
            self._pong_due = False
            self._connected.set()
            pinger = asyncio.get_running_loop().create_task(self._ping(protocol.transport))
            try:
                problem = await protocol.closed
            finally:
                pinger.cancel()
                self._drop(protocol.transport)
            log.warning("change feed: connection lost (%s); dropping cached books", problem or "closed")
            # A connection closed at once (a server still starting, a proxy with nothing behind it)
            # is a failed connect, not a lost one: back off as for a refused one.
            if asyncio.get_running_loop().time() - opened_at < _STABLE_S:
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 2.0)
            else:
                backoff = 0.05

    def _drop(self, transport: asyncio.WriteTransport) -> None:
        self._transport = None
        self._connected.clear()
        transport.abort()
        self._subscribed.clear()
        self._ending.clear()
        waiting, self._waiting = self._waiting, {}
        for future in waiting.values():
            if not future.done():
                future.set_exception(StoreUnavailableError("change feed connection lost"))
        self.resets += 1
        self._on_reset()

    async def _open(self) -> _FeedProtocol:
        url = self._url if self._next_url is None else self._next_url()
        protocol = await open_connection(url, lambda: _FeedProtocol(self))
        for first in opening(url):  # AUTH: its reply (+OK, or an error that closes us) comes in order
            protocol.transport.write(first)
        if self._standing:
            protocol.transport.write(command(b"SUBSCRIBE", *self._standing))
        return protocol

    def on_reply(self, reply: object) -> None:
        """One reply from the server: a message, a subscription confirmation, or a pong."""
        if isinstance(reply, list):
            kind = reply[0]
            if kind == b"message" or kind == b"smessage":
                self._on_message(reply[1], reply[2])
            elif kind == b"subscribe" or kind == b"ssubscribe":
                future = self._waiting.pop(reply[1], None)
                if future is not None and not future.done():
                    future.set_result(None)
            elif kind == b"pong":
                self._pong_due = False
            elif kind == b"sunsubscribe" and self._on_dropped is not None:
                self._ended(reply[1])
        elif reply == b"PONG":  # PING while subscribed to nothing gets the plain reply
            self._pong_due = False

    def _ended(self, channel: bytes) -> None:
        """The node ended a sharded subscription: the answer to an unsubscribe of ours, or the node's
        own doing (its slot moved), which only a channel still subscribed can be."""
        ending = self._ending.get(channel, 0)
        if ending:
            if ending == 1:
                del self._ending[channel]
            else:
                self._ending[channel] = ending - 1
        elif channel in self._subscribed:
            self._subscribed.discard(channel)
            assert self._on_dropped is not None
            self._on_dropped(channel)

    async def _ping(self, transport: asyncio.WriteTransport) -> None:
        while True:
            await asyncio.sleep(self._ping_interval_s)
            if self._pong_due:
                log.warning("change feed: no answer to PING within %.1f s", self._ping_interval_s)
                transport.abort()
                return
            self._pong_due = True
            transport.write(command(b"PING"))


class _FeedProtocol(asyncio.Protocol):
    """The socket side: parses what arrives and hands every reply to the feed."""

    def __init__(self, feed: ChangeFeed) -> None:
        self._feed = feed
        self._parser = RespParser()
        self.transport: asyncio.WriteTransport
        self.closed: asyncio.Future[BaseException | None] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # a stream transport

    def data_received(self, data: bytes) -> None:
        try:
            for reply in self._parser.feed(data):
                self._feed.on_reply(reply)
        except RespError as exc:
            self._finish(exc)
            self.transport.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        self._finish(exc)

    def _finish(self, problem: BaseException | None) -> None:
        if not self.closed.done():
            self.closed.set_result(problem)
