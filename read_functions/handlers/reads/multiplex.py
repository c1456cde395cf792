"""The multiplexed stream: many books on one WebSocket, subscribed and unsubscribed by message, each
in ``snapshot`` or ``diff`` mode (``GET /v1/stream`` with the subprotocol ``ladder.v2``).

Theory of operation
-------------------
One :class:`MultiStream` per socket. Each book it follows is a :class:`Subscription` that follows the
book's shared :class:`~read_functions.books.diffs.diff_feed.BookFeed` (one per book in the worker, one diff
per change and depth for every client: never a diff per client). When a book moves, its feed tells
the subscription, which only marks itself *due*: a socket holds at most one pending entry per
book, whatever the publish rate or however slowly its client reads. The sender asks for the next
message only while the socket can take it (:mod:`read_functions.server.websocket.connection` waits
for the transport to drain), and then, in the order books became due, renders for each what takes
the client from what it last sent to the book now: nothing, the change's shared ``diff``, one
merged diff when it missed a few (exact: a merged diff is the diff of the two heads), a
``snapshot`` when it missed too many or the chain broke, a ``status`` when the book stopped being
served. So a slow consumer costs its socket one flag per book and gets fewer, larger messages,
never a growing backlog and never a dropped change.

What the client sends (:mod:`.stream_ops`) is answered before any book message: each op is queued
when it arrives (at most :data:`MAX_WAITING_OPS`; the frame reader already limits how many a client
sends a second and how large) and handled by the sender, in order. Each book of a ``subscribe`` is
authorized as a read of it is (unknown market, not subscribed, limits: the same error codes) and
acknowledged or refused on its own. A socket follows at most ``max_stream_books`` books, and takes
one of its tenant's ``max_streams`` slots, as a one-book stream does.

The key and each book's entitlement are checked again every ``recheck_s``, as for a one-book stream:
a revoked key ends the socket (4401), a book the tenant no longer subscribes to is dropped alone
with an ``unsubscribed`` message saying why.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

import orjson

from book_store.schema import BookKey
from control_plane.errors import InvalidRequestError, LimitExceededError, NotFoundError, RateLimitedError
from control_plane.models import Principal
from ladder_process.clock import now_ms
from ladder_process.errors import LadderError, StoreError
from read_functions.app.api_key import MULTI_STREAM_PROTOCOL, offered_protocols, presented_key
from read_functions.app.messages import Request, Response
from read_functions.books.diffs.book_diffs import render_status
from read_functions.books.diffs.diff_feed import BookFeed
from read_functions.books.render import BookView
from read_functions.deps import Deps
from read_functions.handlers.reads.rules import authorize_book, best_status
from read_functions.handlers.reads.stream import (
    Alarm,
    CheckedStream,
    open_book_stream,
    same_view,
    served_view,
)
from read_functions.handlers.reads.stream_ops import (
    MAX_OP_BYTES,
    Mode,
    Wanted,
    ack,
    error_item,
    error_message,
    named,
    read_op,
    refused_id,
)

MAX_WAITING_OPS = 32
"""Messages from the client waiting to be handled; one more ends the socket (4429): a client that
sends ops and never reads their answers holds no more than this."""


async def open_stream(request: Request, deps: Deps) -> Response:
    """``GET /v1/stream``: the multiplexed stream when the client offers ``ladder.v2``, else one book's."""
    if MULTI_STREAM_PROTOCOL not in offered_protocols(request.headers):
        return await open_book_stream(request, deps)
    if (request.headers.get("upgrade") or "").lower() != "websocket":
        raise InvalidRequestError("this route needs a WebSocket upgrade (Upgrade: websocket)")
    if request.query.get("exchange") or request.query.get("market"):
        raise InvalidRequestError(f"{MULTI_STREAM_PROTOCOL} takes its books by message, not in the query")
    assert request.principal is not None
    key = presented_key(request, query_allowed=True)
    return Response(101, b"", None, {}, stream=MultiStream(deps, request.principal, key, request.peer))


class Subscription:
    """One book a socket follows (a :class:`~read_functions.books.diffs.diff_feed.Follower`)."""

    __slots__ = ("book", "depth", "down", "epoch", "feed", "mode", "owner", "sent", "seq")

    def __init__(self, owner: MultiStream, book: BookKey, depth: int, mode: Mode) -> None:
        self.owner = owner
        self.book = book
        self.depth = depth
        self.mode = mode
        self.feed: BookFeed | None = None
        self.epoch = -1  # the feed's chain the client holds (-1: none: it needs a snapshot)
        self.seq = -1
        self.down = False  # a status message was sent: the book may not be served
        self.sent: BookView | None = None  # snapshot mode: the view last sent

    def ready(self) -> None:
        self.owner.due(self)

    @property
    def chain_depth(self) -> int | None:
        return self.depth if self.mode is Mode.DIFF else None


class MultiStream(CheckedStream):
    """One socket's books, what it owes each, and its client's ops (see the module's doc)."""

    protocol = MULTI_STREAM_PROTOCOL
    max_text = MAX_OP_BYTES

    def __init__(
        self, deps: Deps, principal: Principal, key: str | None, source: str, *, recheck_s: float = 1.0
    ) -> None:
        super().__init__(deps, principal, key, source, recheck_s)
        self.subscriptions: dict[BookKey, Subscription] = {}
        self._due: dict[Subscription, None] = {}  # books to send, in the order they became due
        self._ops: deque[bytes] = deque()
        self._replies: deque[bytes] = deque()
        self._closed = False
        self._started = False
        self._flooded = False
        self._alarm = Alarm()
        self.merged = 0
        """Messages that carried more than one change of a book (the client was behind)."""
        self.snapshots = 0

    # -- the Stream protocol -------------------------------------------------------------------
    def start(self) -> None:
        self._started = True

    def receive(self, text: bytes) -> None:
        if len(self._ops) >= MAX_WAITING_OPS:
            self._flooded = True
        else:
            self._ops.append(text)
        self._wake()

    def close(self) -> None:
        self._closed = True
        self._wake()

    def stop(self) -> None:
        """Stop following every book and give the tenant's slot back."""
        for subscription in list(self.subscriptions.values()):
            self._drop(subscription)
        self._release()

    async def next_message(self) -> bytes | None:
        """The next message to send: an answer, else a due book's; None once closed."""
        while not self._closed:
            if self._flooded:
                raise RateLimitedError(f"more than {MAX_WAITING_OPS} messages waiting to be answered", 1.0)
            if self._replies:
                return self._replies.popleft()
            if time.monotonic() - self._checked_at >= self._recheck_s:
                await self._recheck()
                continue
            if self._ops:
                await self._handle(self._ops.popleft())
                continue
            if self._due:
                subscription = next(iter(self._due))
                del self._due[subscription]
                message = self._render(subscription)
                if message is not None:
                    return message
                continue
            await self._alarm.sleep(self._checked_at + self._recheck_s - time.monotonic())
        return None

    # -- books -----------------------------------------------------------------------------------
    @property
    def waiting(self) -> int:
        """Books that moved since the socket last sent them."""
        return len(self._due)

    def due(self, subscription: Subscription) -> None:
        self._due[subscription] = None
        self._wake()

    def _wake(self) -> None:
        self._alarm.wake()

    def _render(self, subscription: Subscription) -> bytes | None:
        feed = subscription.feed
        if feed is None:
            return None
        now = now_ms()
        head = feed.head
        if head is None:
            if subscription.down or feed.entry is None:
                return None  # said already, or not loaded yet (the snapshot follows)
            subscription.down, subscription.epoch, subscription.sent = True, -1, None
            entry = feed.entry
            status = best_status(entry.replicas, now, self._deps.settings.max_silence_ms, entry.heartbeats)
            return render_status(feed.names, status)
        subscription.down = False
        if subscription.mode is Mode.SNAPSHOT:
            assert feed.entry is not None  # a head came from it
            view, since = served_view(self._deps, feed.entry, head, subscription.depth, now)
            if same_view(view, subscription.sent):
                return None
            subscription.sent = view
            return b'{"type":"book",' + view.body(max(0, now - since))[1:]
        if subscription.epoch == feed.epoch and subscription.seq == feed.seq:
            return None
        message = None
        if subscription.epoch == feed.epoch:
            message = feed.catch_up(subscription.depth, subscription.epoch, subscription.seq)
            if message is not None and feed.seq - subscription.seq > 1:
                self.merged += 1
        if message is None:
            message = feed.snapshot(subscription.depth)
            self.snapshots += 1
        if message is None:
            return None
        subscription.epoch, subscription.seq = feed.epoch, feed.seq
        return message.body(now)

    def _follow(self, wanted: Wanted) -> bool:
        """Follow the book ``wanted`` names (replacing how it was followed); True when it resumes."""
        assert wanted.book is not None
        old = self.subscriptions.get(wanted.book)
        if old is not None:
            self._drop(old)
        subscription = self.subscriptions[wanted.book] = Subscription(
            self, wanted.book, wanted.depth, wanted.mode
        )
        feed = subscription.feed = self._deps.diffs.follow(
            wanted.book, subscription, subscription.chain_depth
        )
        resumed = False
        if wanted.resume is not None:
            seq = feed.resume(wanted.depth, *wanted.resume)
            if seq is not None:
                subscription.epoch, subscription.seq, resumed = feed.epoch, seq, True
        self.due(subscription)
        return resumed

    def _drop(self, subscription: Subscription) -> None:
        self.subscriptions.pop(subscription.book, None)
        self._due.pop(subscription, None)
        if subscription.feed is not None:
            self._deps.diffs.unfollow(subscription.feed, subscription, subscription.chain_depth)
            subscription.feed = None

    # -- what the client sends ---------------------------------------------------------------
    async def _handle(self, text: bytes) -> None:
        settings = self._deps.settings
        try:
            op = read_op(text, settings.max_depth, settings.default_depth)
        except InvalidRequestError as exc:
            self._replies.append(error_message(refused_id(exc), exc))
            return
        if op.op == "subscribe":
            results = [await self._subscribe(wanted) for wanted in op.books]
        else:
            results = [self._unsubscribe(wanted) for wanted in op.books]
        self._replies.append(ack(op, results))

    async def _subscribe(self, wanted: Wanted) -> dict[str, Any]:
        try:
            if wanted.error is not None:
                raise wanted.error
            assert wanted.book is not None
            book = wanted.book
            await authorize_book(self._deps, self._principal, book.exchange, book.market)
            limit = self._deps.settings.max_stream_books
            if book not in self.subscriptions and len(self.subscriptions) >= limit:
                raise LimitExceededError(f"a stream follows at most {limit} books (max_stream_books)")
            resumed = self._follow(wanted)
        except LadderError as exc:
            return {**named(wanted), "result": "refused", "error": error_item(exc)}
        result = "resumed" if resumed else "subscribed"
        return {**book.to_json(), "result": result, "depth": wanted.depth, "mode": wanted.mode.value}

    def _unsubscribe(self, wanted: Wanted) -> dict[str, Any]:
        subscription = None if wanted.book is None else self.subscriptions.get(wanted.book)
        if subscription is None:
            error = wanted.error or NotFoundError("this stream does not follow that book")
            return {**named(wanted), "result": "refused", "error": error_item(error)}
        self._drop(subscription)
        return {**subscription.book.to_json(), "result": "unsubscribed"}

    async def _authorize(self) -> None:
        """Each book's entitlement, again (see the module's doc): a book the tenant may no longer
        read is dropped alone, with an ``unsubscribed`` message saying why."""
        for book, subscription in list(self.subscriptions.items()):
            try:
                await authorize_book(self._deps, self._principal, book.exchange, book.market)
            except StoreError:
                raise  # the recheck's to bear or end the socket with
            except LadderError as exc:
                if self.subscriptions.get(book) is subscription:
                    self._drop(subscription)
                    self._replies.append(
                        orjson.dumps({"type": "unsubscribed", **book.to_json(), "error": error_item(exc)})
                    )
