"""One venue WebSocket carrying the depth streams of many books, whatever the venue.

Theory of operation
-------------------
The venue's protocol is behind :class:`~ingest_nodes.venues.stream.VenueStream` (its URL, its
handshake, its subscribe messages and its frames); this module knows none of it. A venue lets one
connection carry many streams but only a few incoming control messages per second (pings and
pongs included), so a connection keeps the set of topics its routes want, and a background sender
turns the difference to what it has subscribed into subscribe / unsubscribe batches paced under
that limit, once the venue's handshake (if any) is done. A batch the venue rejects is taken back
and retried later. Frames are parsed at the edge and routed by symbol to the one route (a book
replica) this connection carries for that symbol; two replicas of one book never share a
connection, so one connection's fault never takes every replica of a book down.

A market may be another name of a venue book (the catalogue's ``MarketInfo.alias``: Coinbase's
BTC-USDC is BTC-USD's book, and the venue labels the events of either subscription ``BTC-USD``).
Such a route is carried under the venue book's name (``venue_name``): the connection subscribes
that name and hands the route each of its events renamed to the route's own symbol. Two names of
one venue book never ride one connection (the feed places them apart, as it does two replicas), so
every event the venue labels has one route, and the venue is never asked for one book twice on a
socket (Coinbase would then send the same stream twice, interleaved as it pleases).

A venue that refuses the session itself (bad credentials, a connection limit) is not hammered:
the connection remembers the refusal (``refused``, for the books' status), tells its routes, and
waits ``REFUSED_RETRY_S`` before it tries again.

Endings: when the socket ends (close, reset, no pong) every route hears ``on_disconnect`` (its book
is no longer provably in sync) and the connection reconnects with jittered backoff and subscribes
again. Before that can happen for a known reason, the connection hands its books over instead:
when it reaches ``max_age_s`` (Binance cuts connections at 24 h) or the venue announces a
shutdown, it calls ``on_rollover``; the owner opens a successor, moves the routes there
and, once they are spliced, closes this one. A *retiring* connection no longer changes its
subscriptions and never reconnects.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from typing import Final, Protocol

import websockets
from websockets.asyncio.client import ClientConnection, connect

from ingest_nodes.core.backoff import Backoff
from ingest_nodes.core.errors import VenuePayloadError
from ingest_nodes.core.events import DepthUpdate
from ingest_nodes.ops.stats import ConnectionStats
from ingest_nodes.venues.credentials import Credential
from ingest_nodes.venues.registry import ExchangeSpec
from ingest_nodes.venues.stream import (
    Acked,
    Heartbeat,
    MessagesLost,
    Ready,
    Refused,
    Rejected,
    ShutdownNotice,
)
from ladder_process.clock import now_ms

log = logging.getLogger(__name__)

SUBSCRIBE_BATCH: Final = 500
SUBSCRIBE_RETRY_S: Final = 5.0
REFUSED_RETRY_S: Final = 60.0
HOUR_S: Final = 3600.0


class ConnectPacer:
    """Spaces the connection attempts of one exchange on this node ``1 / per_s`` seconds apart.

    OKX refuses more than 3 connection requests a second per IP and Bybit more than 500 in five
    minutes: a node that starts (or reconnects) every connection at once would be refused.
    """

    def __init__(self, per_s: float) -> None:
        if per_s <= 0:
            raise ValueError(f"per_s must be positive, got {per_s}")
        self._interval = 1.0 / per_s
        self._next = 0.0

    async def wait(self) -> None:
        """Return when this attempt's turn has come."""
        now = time.monotonic()
        turn = max(now, self._next)
        self._next = turn + self._interval
        if turn > now:
            await asyncio.sleep(turn - now)


class Route(Protocol):
    """What a connection delivers to: one book replica (which may listen to two connections)."""

    @property
    def depth(self) -> int:
        """Levels a side the book is kept at (a venue that subscribes a depth subscribes this one)."""

    def on_update(self, update: DepthUpdate, source: StreamConnection) -> None: ...

    def on_disconnect(self, source: StreamConnection) -> None: ...

    def invalidate(self, reason: str) -> None:
        """The book may have missed an event nobody can detect: rebuild it."""

    def heard(self, source: StreamConnection, at_ms: int) -> None:
        """``source``'s venue vouched at ``at_ms`` that everything it sent has arrived (a heartbeat)."""

    def on_refused(self, source: StreamConnection, refusal: Refused) -> None:
        """The venue refused ``source``'s session: the book cannot be served until it accepts one."""

    def begin_handover(self, old: StreamConnection, new: StreamConnection) -> None:
        """``new`` now carries this route too; move over from ``old`` without losing sync."""

    def finish_handover(self, old: StreamConnection) -> None:
        """``old`` closes now: move over whatever the cost."""


RolloverHandler = Callable[["StreamConnection", str], None]


class StreamConnection:
    """A self-healing, multiplexed diff-depth connection to one exchange."""

    def __init__(
        self,
        spec: ExchangeSpec,
        *,
        name: str,
        max_streams: int,
        backoff: Backoff | None = None,
        max_age_s: float | None = None,
        on_rollover: RolloverHandler | None = None,
        subscribe_batch: int = SUBSCRIBE_BATCH,
        credential: Credential | None = None,
        pacer: ConnectPacer | None = None,
    ) -> None:
        """``max_age_s``: hand over (or reconnect, without ``on_rollover``) at this socket age;
        ``credential``: what the venue's handshake authenticates with (one connection per key);
        ``pacer``: the exchange's spacing of connection attempts, if the venue limits them."""
        self.spec = spec
        self.venue = spec.stream(credential)
        self.credential = credential
        self.name = name
        self.max_streams = max_streams
        self.stats = ConnectionStats()
        self.retiring = False
        self.refused: Refused | None = None
        """The venue's last refusal of this connection's session (None once one was accepted)."""
        self._max_age_s = max_age_s
        self._on_rollover = on_rollover
        self._batch = min(subscribe_batch, self.venue.topics_per_request or subscribe_batch)
        self._pacer = pacer
        self._requests: deque[float] = deque()
        """When this socket sent its recent requests (a venue may allow so many an hour)."""
        self._routes: dict[str, Route] = {}
        self._names: dict[str, str] = {}
        """Each route's venue book name, by symbol (module docstring)."""
        self._by_name: dict[str, tuple[str, Route]] = {}
        """Each route with its symbol, by the venue book name its events carry."""
        self._subscribed: set[str] = set()
        self._again: set[str] = set()
        self._pending: dict[int, tuple[str, list[str]]] = {}
        self._changed = asyncio.Event()
        self._ready = asyncio.Event()
        self._emptied = asyncio.Event()
        self._backoff = backoff or Backoff()
        self._next_id = 1
        self._task: asyncio.Task[None] | None = None
        self._ws: ClientConnection | None = None
        self._closer: asyncio.Task[None] | None = None

    # -- routes ---------------------------------------------------------------------------------

    def carries(self, venue_name: str) -> bool:
        """True when a route of the venue book ``venue_name`` (under any of its names) rides here."""
        return venue_name in self._by_name

    @property
    def has_room(self) -> bool:
        return not self.retiring and len(self._routes) < self.max_streams

    def __len__(self) -> int:
        return len(self._routes)

    @property
    def connected(self) -> bool:
        """Connected, and the session accepted by the venue (where it has a handshake)."""
        return self._ready.is_set()

    def routes(self) -> list[tuple[str, Route]]:
        """The routes carried now (a copy: handing over changes them)."""
        return list(self._routes.items())

    def add(self, symbol: str, route: Route, venue_name: str | None = None) -> None:
        """Carry ``symbol``'s stream to ``route`` (subscribed with the next paced batch) under the
        venue book's name ``venue_name`` (None: its own); another name of that book may not ride here."""
        name = symbol if venue_name is None else venue_name
        held = self._by_name.get(name)
        if held is not None and held[0] != symbol:
            raise ValueError(f"{self.name}: {held[0]} already carries the venue book {name}, not {symbol}")
        self._routes[symbol] = route
        self._names[symbol] = name
        self._by_name[name] = (symbol, route)
        self._emptied.clear()
        self._changed.set()

    def venue_name(self, symbol: str) -> str:
        """The name the venue gives the book ``symbol`` rides under here (its own, unless an alias)."""
        return self._names.get(symbol, symbol)

    def remove(self, symbol: str) -> None:
        """Stop carrying ``symbol`` (a retiring connection keeps its subscription until it closes)."""
        self._routes.pop(symbol, None)
        self._by_name.pop(self._names.pop(symbol, symbol), None)
        if not self._routes:
            self._emptied.set()
        if not self.retiring:
            self._changed.set()

    def resubscribe(self, symbol: str) -> None:
        """Unsubscribe ``symbol`` and subscribe it again: a venue without REST snapshots (Alpaca,
        Kraken, Coinbase) sends the whole book on a subscribe, so this is how such a book is rebuilt."""
        route = self._routes.get(symbol)
        if route is not None and not self.retiring:
            self._again.add(self.venue.topic(self._names[symbol], route.depth))
            self._changed.set()

    def depth_changed(self) -> None:
        """A route's depth changed: where the venue subscribes a depth, its topic did too."""
        if not self.retiring:
            self._changed.set()

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"ws-{self.name}")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    def retire(self) -> None:
        """A successor took over: keep delivering until closed, but never reconnect or resubscribe."""
        self.retiring = True
        if not self._routes:
            self._emptied.set()

    async def wait_empty(self, timeout_s: float) -> bool:
        """Wait until no route is left (True) or ``timeout_s`` passed (False)."""
        try:
            await asyncio.wait_for(self._emptied.wait(), timeout_s)
        except TimeoutError:
            return False
        return True

    async def _run(self) -> None:
        attempt = 0
        while True:
            if self._pacer is not None:
                await self._pacer.wait()
            try:
                async with connect(
                    self.venue.url,
                    max_size=2**24,
                    open_timeout=10,
                    ping_interval=20,
                    ping_timeout=60,
                    close_timeout=2,
                    compression=None,
                ) as ws:
                    attempt = 0
                    self.stats.connects += 1
                    self._ws = ws
                    await self._serve(ws)
            except (OSError, TimeoutError, websockets.WebSocketException) as exc:
                log.warning("%s: connection lost (%s: %s)", self.name, type(exc).__name__, exc)
            finally:
                self._lost()
            if self.retiring:
                return
            await asyncio.sleep(REFUSED_RETRY_S if self.refused else self._backoff.compute(attempt))
            attempt += 1

    def _lost(self) -> None:
        if self._ws is not None:
            self._ws = None
            self.stats.disconnects += 1
        self._subscribed.clear()
        self._pending.clear()
        self._requests.clear()
        self._ready.clear()
        for _symbol, route in self.routes():
            route.on_disconnect(self)

    async def _serve(self, ws: ClientConnection) -> None:
        loop = asyncio.get_running_loop()
        sender = loop.create_task(self._send_subscriptions(ws))
        keepalive = None if self.venue.keepalive is None else loop.create_task(self._keep_alive(ws))
        timer = None if self._max_age_s is None else loop.call_later(self._max_age_s, self._roll, "max_age")
        self._changed.set()
        try:
            for message in self.venue.opening():
                await ws.send(message)
            if not self.venue.handshake:
                self._ready.set()
            async for raw in ws:
                self._receive(raw)
        finally:
            if timer is not None:
                timer.cancel()
            sender.cancel()
            if keepalive is not None:
                keepalive.cancel()
            await asyncio.gather(sender, *(() if keepalive is None else (keepalive,)), return_exceptions=True)

    def _receive(self, raw: str | bytes) -> None:
        self.stats.frames += 1
        received = now_ms()
        try:
            events = self.venue.read(raw, received)
        except VenuePayloadError as exc:
            # A lost depth event shows up as a gap in the update ids of its book; without ids, any
            # book of this connection may have lost it.
            self.stats.unreadable_frames += 1
            log.warning("%s: unreadable frame skipped: %s", self.name, exc)
            if not self.venue.sequenced:
                for _symbol, carried in self.routes():
                    carried.invalidate("unreadable_frame")
            return
        for event in events:
            if type(event) is DepthUpdate:
                routed = self._by_name.get(event.symbol)
                if routed is not None:
                    symbol, route = routed
                    route.on_update(event if symbol == event.symbol else replace(event, symbol=symbol), self)
            elif isinstance(event, Acked):
                if event.request_id is not None:
                    self._pending.pop(event.request_id, None)
            elif isinstance(event, Rejected):
                self._rejected(event)
            elif isinstance(event, Ready):
                self._accepted()
            elif isinstance(event, Refused):
                self._refused(event)
            elif isinstance(event, ShutdownNotice):
                self.stats.shutdown_notices += 1
                log.info("%s: venue announced a shutdown", self.name)
                self._roll("server_shutdown")
            elif isinstance(event, MessagesLost):
                self._lost_messages(event)
            elif isinstance(event, Heartbeat):
                for _symbol, route in self.routes():
                    route.heard(self, received)

    def _lost_messages(self, event: MessagesLost) -> None:
        """The venue's numbering of this connection broke: the numbers say no more than that some
        message is missing, so every book of the connection starts over."""
        self.stats.sequence_breaks += 1
        log.warning("%s: message number %s where %s was due; resyncing its %d books",
                    self.name, event.received, event.expected, len(self._routes))  # fmt: skip
        for _symbol, route in self.routes():
            route.invalidate("gap")

    def _accepted(self) -> None:
        if self.refused is not None:
            log.info("%s: the venue accepts the session again", self.name)
        self.refused = None
        self._ready.set()

    def _refused(self, refusal: Refused) -> None:
        """Log a refusal once (not again while it lasts), tell the routes, and wait long to retry."""
        if self.refused != refusal:
            log.error("%s: the venue refused the session (%s %s: %s); retrying in %.0f s",
                      self.name, refusal.reason, refusal.code, refusal.msg, REFUSED_RETRY_S)  # fmt: skip
        self.refused = refusal
        self.stats.refusals += 1
        for _symbol, route in self.routes():
            route.on_refused(self, refusal)

    def _roll(self, reason: str) -> None:
        """Time to leave this socket: hand over to a successor, or reconnect when nobody can."""
        if self.retiring:
            return
        if self._on_rollover is not None:
            self._on_rollover(self, reason)
        elif self._ws is not None:
            self._closer = asyncio.get_running_loop().create_task(self._ws.close(1000, "rollover"))

    def _rejected(self, frame: Rejected) -> None:
        log.warning("%s: venue error %s: %s", self.name, frame.code, frame.msg)
        if frame.topic is not None:
            if frame.topic in self._subscribed:  # one topic refused; the rest of its request stands
                self._subscribed.discard(frame.topic)
                self.stats.subscribe_errors += 1
                asyncio.get_running_loop().call_later(SUBSCRIBE_RETRY_S, self._changed.set)
            return
        sent = self._pending.pop(frame.request_id, None) if frame.request_id is not None else None
        if sent is None:
            return
        method, streams = sent
        self.stats.subscribe_errors += 1
        if method == "SUBSCRIBE":
            self._subscribed.difference_update(streams)
        else:
            self._subscribed.update(streams)
        asyncio.get_running_loop().call_later(SUBSCRIBE_RETRY_S, self._changed.set)

    async def _send_subscriptions(self, ws: ClientConnection) -> None:
        """Turn the difference between wanted and subscribed streams into paced batches."""
        pause = 1.0 / max(1, self.venue.control_messages_per_s - 2)  # leave room for a ping and a pong
        await self._ready.wait()
        while True:
            await self._changed.wait()
            self._changed.clear()
            if self.retiring:
                continue
            names = self._names
            wanted = {self.venue.topic(names[symbol], route.depth) for symbol, route in self._routes.items()}
            again, self._again = self._again & self._subscribed & wanted, set()
            gone = (self._subscribed - wanted) | again
            await self._send_batches(ws, subscribe=False, topics=gone, pause=pause)
            await self._send_batches(ws, subscribe=True, topics=wanted - self._subscribed, pause=pause)

    async def _keep_alive(self, ws: ClientConnection) -> None:
        """Send the venue's keepalive message at its interval (OKX and Bybit cut silent clients)."""
        keepalive = self.venue.keepalive
        assert keepalive is not None
        interval_s, message = keepalive
        while True:
            await asyncio.sleep(interval_s)
            await ws.send(message)

    async def _within_hourly_quota(self) -> None:
        """Wait until one more request fits the venue's hourly quota for this socket."""
        quota = self.venue.requests_per_hour
        if quota is None:
            return
        requests = self._requests
        while True:
            now = asyncio.get_running_loop().time()
            while requests and now - requests[0] >= HOUR_S:
                requests.popleft()
            if len(requests) < quota:
                requests.append(now)
                return
            self.stats.quota_waits += 1
            await asyncio.sleep(HOUR_S - (now - requests[0]))

    async def _send_batches(
        self, ws: ClientConnection, *, subscribe: bool, topics: set[str], pause: float
    ) -> None:
        method = "SUBSCRIBE" if subscribe else "UNSUBSCRIBE"
        ordered = sorted(topics)
        for start in range(0, len(ordered), self._batch):
            batch = ordered[start : start + self._batch]
            await self._within_hourly_quota()
            request_id = self._next_id
            self._next_id += 1
            self._pending[request_id] = (method, batch)
            for message in self.venue.requests(subscribe, batch, request_id):
                await ws.send(message)
            if subscribe:
                self._subscribed.update(batch)
            else:
                self._subscribed.difference_update(batch)
            await asyncio.sleep(pause)


def rollover_age(max_age_s: float, jitter: float, rng: random.Random | None = None) -> float:
    """A connection's age at rollover: ``max_age_s`` less up to ``jitter`` of it, at random.

    Connections opened together (a node starting) then hand over at different times, so their books
    never need the venue, or the weight budget, all at once.
    """
    return max_age_s * (1.0 - jitter * (rng or random).random())
