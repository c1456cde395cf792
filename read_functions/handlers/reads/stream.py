"""Book streams: one message per published snapshot, and never a backlog for a slow client.

Theory of operation
-------------------
A stream watches its book (a consolidated stream, its books: see
:mod:`read_functions.handlers.reads.consolidated_stream`) in the
:class:`~read_functions.books.cache.BookCache`; every change
only sets a flag, because the cache entry itself always holds the newest snapshot of every
replica. The sender loop waits for the flag, renders the replica it would serve to a read of the
same book, and sends it; while a send is blocked on a slow client, further changes just set the
flag again, so the client receives the newest snapshot next and the ones in between are dropped
(conflated). Memory per stream is one flag and one reference, whatever the publish rate.

A book stream whose sender waits with nothing to do sends a change at once instead, from the change
feed's callback, through its connection's :class:`~read_functions.app.messages.Outlet`: the sender
would only run after the rest of the event loop's turn (the feed's other messages, the requests
that arrived with them), which under load is most of a stream's latency in the read worker.
Whenever the sender is busy, a recheck is due or the client's buffer is full, the change goes
through the sender as above.

The caller's key and entitlement are checked again every ``recheck_s``: a revoked key or a
dropped subscription ends the stream with close code 4000 + the HTTP status (4401, 4403;
:func:`read_functions.app.errors.close_code`). A check the store cannot answer keeps the stream
going (nobody can revoke a key through a store that does not answer, and a shard's failover takes
seconds) for up to ``STORE_GRACE_S``; past that it ends the stream with 4503, which a client takes
as "reconnect".

A drop of the change feed, or of the book's shard, is the cache's to repair (it loads a watched
book again by itself): the stream stays open and goes on once its book is served again.
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass

from book_store.codec import Snapshot
from book_store.schema import BookKey
from control_plane.errors import InvalidRequestError
from control_plane.models import Principal
from ladder_process.clock import now_ms
from ladder_process.errors import LadderError, StoreError
from read_functions.app.api_key import STREAM_PROTOCOL, offered_protocols, presented_key
from read_functions.app.messages import Outlet, Request, Response
from read_functions.app.params import int_param
from read_functions.books.entry import Entry
from read_functions.books.render import BookView, Side
from read_functions.deps import Deps
from read_functions.handlers.reads.rules import authorize_book, deeper_view
from read_functions.tenancy.stream_slots import StreamSlot

STORE_GRACE_S = 60.0
"""How long a stream outlives access checks that fail because the store does not answer."""


@dataclass(frozen=True, slots=True)
class StreamPlan:
    """What an authorized stream serves, and whom, for the rechecks."""

    book: BookKey
    depth: int
    principal: Principal
    key: str | None
    source: str  # the client's address, for the key's recheck


async def open_book_stream(request: Request, deps: Deps) -> Response:
    """``GET /v1/stream`` for one book: validate and authorize; the adapter then upgrades the connection."""
    query = request.query
    exchange, market = query.get("exchange"), query.get("market")
    if not exchange or not market:
        raise InvalidRequestError("exchange and market are required query parameters")
    depth = int_param(query, "depth", lo=1, hi=deps.settings.max_depth) or deps.settings.default_depth
    assert request.principal is not None
    book = (await authorize_book(deps, request.principal, exchange, market)).key
    key = upgrade_key(request)
    plan = StreamPlan(book, depth, request.principal, key, request.peer)
    return Response(101, b"", None, {}, stream=BookStream(deps, plan))


def upgrade_key(request: Request) -> str | None:
    """The key a stream request presented, once it is a WebSocket upgrade offering our subprotocol
    (InvalidRequestError otherwise)."""
    if (request.headers.get("upgrade") or "").lower() != "websocket":
        raise InvalidRequestError("this route needs a WebSocket upgrade (Upgrade: websocket)")
    protocols = offered_protocols(request.headers)
    if protocols and STREAM_PROTOCOL not in protocols:  # never named: a browser's key is among them
        raise InvalidRequestError(f"a stream's subprotocols must include {STREAM_PROTOCOL}")
    return presented_key(request, query_allowed=True)


class CheckedStream(ABC):
    """What every stream owes its caller's access, whatever it sends: it holds one of the tenant's
    stream slots while it runs, and checks the key and what the caller follows again every
    ``recheck_s`` (see the module's doc), when its sender calls :meth:`_recheck`."""

    def __init__(
        self, deps: Deps, principal: Principal, key: str | None, source: str, recheck_s: float
    ) -> None:
        self._deps = deps
        self._principal = principal
        self._key = key
        self._source = source
        self._recheck_s = recheck_s
        self._slot: StreamSlot | None = None
        self._checked_at = self._confirmed_at = time.monotonic()
        self.outlet: Outlet | None = None

    async def admit(self) -> None:
        """Take the tenant's stream slot (TooManyStreamsError past its ``max_streams``); the
        operator's streams are not counted."""
        tenant_id = self._principal.tenant_id
        if tenant_id is not None:
            deps = self._deps
            self._slot = await deps.streams.take(await deps.access.tenant(tenant_id))

    def _release(self) -> None:
        """Give the tenant's slot back (once)."""
        slot, self._slot = self._slot, None
        if slot is not None:
            self._deps.streams.release(slot)

    async def _recheck(self) -> None:
        """The key, then :meth:`_authorize`; a store that does not answer is borne for
        ``STORE_GRACE_S``."""
        self._checked_at = now = time.monotonic()
        try:
            if self._key is not None:
                await self._deps.access.principal(self._key, source=self._source)
            await self._authorize()
        except StoreError:
            if now - self._confirmed_at > STORE_GRACE_S:
                raise
            return
        self._confirmed_at = now

    @abstractmethod
    async def _authorize(self) -> None:
        """Raise the error a read would get now (a LadderError ends the stream)."""


class ConflatingStream(CheckedStream):
    """A stream of one message per change of what it watches, never a backlog (see the module's
    doc): the sender waits for a flag a change sets, renders what a read would serve now
    (:meth:`_message`), and rechecks the caller's key and access every ``recheck_s``."""

    protocol = STREAM_PROTOCOL
    max_text = 0  # the client has nothing to say

    def __init__(
        self, deps: Deps, principal: Principal, key: str | None, source: str, recheck_s: float
    ) -> None:
        super().__init__(deps, principal, key, source, recheck_s)
        self._pending = False  # a change came since the last render
        self._parked = False  # the sender waits on the alarm with nothing to do
        self._closed = False
        self._alarm = Alarm()  # the sender sleeps on it between messages
        self.conflated = 0

    def changed(self, entry: Entry) -> None:
        if self._pending:
            self.conflated += 1
        self._seen(entry)
        self._wake()

    def start(self) -> None:
        self._watch()
        self._wake()  # send the current state at once

    def receive(self, text: bytes) -> None:  # not abstract: no subclass takes messages
        pass  # never called: max_text is 0

    def stop(self) -> None:
        """Stop watching and give the tenant's slot back."""
        self._unwatch()
        self._release()

    def close(self) -> None:
        """The client went away: :meth:`next_message` returns None."""
        self._closed = True
        self._wake()

    def _wake(self) -> None:
        # The sender awaits a bare future, with no task or wait_for in between: a change costs
        # one step of the event loop before it is rendered.
        self._pending = True
        self._alarm.wake()

    async def next_message(self) -> bytes | None:
        """Wait for the next message to send; None once closed (raises a LadderError when the
        caller lost access)."""
        while not self._closed:
            if not self._pending:
                self._parked = True
                try:
                    await self._alarm.sleep(self._checked_at + self._recheck_s - time.monotonic())
                finally:
                    self._parked = False
            if time.monotonic() - self._checked_at >= self._recheck_s:
                await self._recheck()
            if not self._pending or self._closed:
                continue
            self._pending = False
            message = await self._message()
            if message is not None:
                return message
        return None

    # What a kind of conflating stream watches and renders (and checks: _authorize, above).
    @abstractmethod
    def _seen(self, entry: Entry) -> None:
        """Keep ``entry``, the newest state of a watched book."""

    @abstractmethod
    def _watch(self) -> None:
        """Watch the books in the cache (their changes call :meth:`changed`)."""

    @abstractmethod
    def _unwatch(self) -> None:
        """Stop watching them."""

    @abstractmethod
    async def _message(self) -> bytes | None:
        """What a read would serve now; None when nothing may be sent or nothing changed."""


class BookStream(ConflatingStream):
    """The conflating state of one book's stream (a :class:`~read_functions.books.cache.Watcher`)."""

    def __init__(self, deps: Deps, plan: StreamPlan, *, recheck_s: float = 1.0) -> None:
        super().__init__(deps, plan.principal, plan.key, plan.source, recheck_s)
        self._plan = plan
        self._entry: Entry | None = None
        self._sent: BookView | None = None

    def changed(self, entry: Entry) -> None:
        """Send the change from here while the sender waits with nothing to do (see the module's
        doc); otherwise through the sender."""
        outlet = self.outlet
        if (
            outlet is None
            or not self._parked
            or self._closed
            or not outlet.ready()
            or time.monotonic() - self._checked_at >= self._recheck_s
        ):
            super().changed(entry)
            return
        self._seen(entry)
        try:
            message = self._message_now(entry)
        except LadderError:
            self._wake()  # the sender renders what is left to serve, and ends the stream on an error
            return
        if message is not None:
            outlet.send(message)

    def _seen(self, entry: Entry) -> None:
        self._entry = entry

    def _watch(self) -> None:
        self._deps.books.watch(self._plan.book, self)

    def _unwatch(self) -> None:
        self._deps.books.unwatch(self._plan.book, self)

    async def _message(self) -> bytes | None:
        return self._message_now(self._entry or await self._deps.books.entry(self._plan.book))

    def _message_now(self, entry: Entry) -> bytes | None:
        """:meth:`_message` of ``entry``, rendered without waiting for anything."""
        now = now_ms()
        deps, depth = self._deps, self._plan.depth
        head = entry.served(now, deps.settings.max_silence_ms)
        if head is None:
            return None
        view, since = served_view(deps, entry, head, depth, now)
        if same_view(view, self._sent):
            return None
        self._sent = view
        return view.body(max(0, now - since))

    async def _authorize(self) -> None:
        plan = self._plan
        await authorize_book(self._deps, plan.principal, plan.book.exchange, plan.book.market)


def served_view(deps: Deps, entry: Entry, head: Snapshot, depth: int, now: int) -> tuple[BookView, int]:
    """The view of ``head`` (the replica served) a read at ``depth`` answers, deeper when the head is
    truncated and its deep snapshot may be served, and the time its ``age_ms`` counts from."""
    view = entry.view(head, depth, Side.BOTH)
    if not view.truncated:
        return view, view.known_time
    view, since, _ = deeper_view(deps, entry, head, view, depth, Side.BOTH, now)
    return view, since


def same_view(view: BookView, sent: BookView | None) -> bool:
    """``view`` shows what ``sent`` showed (a view is rendered once per snapshot, again only for a
    reloaded entry)."""
    return view is sent or (sent is not None and view.head == sent.head and view.etag == sent.etag)


class Alarm:
    """A sleep that a callback may cut short: a stream's sender waits on it for work to come or
    for its next check. It awaits a bare future, with no task or wait_for in between: a wake costs
    one step of the event loop."""

    __slots__ = ("_waiter",)

    def __init__(self) -> None:
        self._waiter: asyncio.Future[None] | None = None

    def wake(self) -> None:
        if self._waiter is not None:
            _resolve(self._waiter)

    async def sleep(self, seconds: float) -> None:
        loop = asyncio.get_running_loop()
        self._waiter = waiter = loop.create_future()
        timer = loop.call_later(max(0.0, seconds), _resolve, waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            self._waiter = None


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
