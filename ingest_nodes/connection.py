"""One venue WebSocket carrying the diff streams of many books.

Theory of operation
-------------------
Binance lets one connection carry up to 1024 streams but only a few incoming control messages per
second, so a connection keeps a *wanted* set of streams and a background sender that turns the
difference to what the venue has acknowledged into paced ``SUBSCRIBE``/``UNSUBSCRIBE`` batches.
Frames are parsed at the edge and routed by symbol to the one route (a book replica) that this
connection carries for that symbol; two replicas of one book never share a connection, so one
connection's fault never takes every replica of a book down.

When the socket ends for any reason (close, reset, no pong, ``serverShutdown``) every route hears
``on_disconnect()`` (its book is no longer provably in sync) and the connection reconnects with
jittered backoff and subscribes again; each route then resyncs from a fresh snapshot.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Protocol

import orjson
import websockets
from websockets.asyncio.client import ClientConnection, connect

from ingest_nodes.backoff import Backoff
from ingest_nodes.events import DepthUpdate
from ingest_nodes.exchanges import ExchangeSpec
from ingest_nodes.rest import now_ms
from ingest_nodes.venues.binance.parse import parse_futures_frame, parse_spot_frame
from ingest_nodes.venues.binance.schemas import ServerShutdown, VenueErrorFrame
from ingest_nodes.venues.errors import VenuePayloadError

log = logging.getLogger(__name__)

SUBSCRIBE_BATCH = 200


class Route(Protocol):
    """What a connection delivers to: one book replica."""

    def on_update(self, update: DepthUpdate) -> None: ...

    def on_disconnect(self) -> None: ...


class StreamConnection:
    """A self-healing, multiplexed diff-depth connection to one exchange."""

    def __init__(
        self,
        spec: ExchangeSpec,
        *,
        name: str,
        max_streams: int,
        backoff: Backoff | None = None,
        on_connected: Callable[[], None] | None = None,
    ) -> None:
        self.spec = spec
        self.name = name
        self.max_streams = max_streams
        self.connects = 0
        self._routes: dict[str, Route] = {}
        self._acked: set[str] = set()
        self._changed = asyncio.Event()
        self._backoff = backoff or Backoff()
        self._parse = parse_futures_frame if spec.is_futures else parse_spot_frame
        self._next_id = 1
        self._on_connected = on_connected
        self._task: asyncio.Task[None] | None = None

    # -- routes ---------------------------------------------------------------------------------

    def carries(self, symbol: str) -> bool:
        return symbol in self._routes

    @property
    def has_room(self) -> bool:
        return len(self._routes) < self.max_streams

    def __len__(self) -> int:
        return len(self._routes)

    def add(self, symbol: str, route: Route) -> None:
        """Carry ``symbol``'s stream to ``route`` (subscribed on the next paced batch)."""
        self._routes[symbol] = route
        self._changed.set()

    def remove(self, symbol: str) -> None:
        self._routes.pop(symbol, None)
        self._changed.set()

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"ws-{self.name}")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    def reconnect(self) -> None:
        """Drop the socket now (tests and the 24-hour rollover use this)."""
        if self._task is not None:
            self._task.cancel()
            self.start()

    async def _run(self) -> None:
        attempt = 0
        url = self.spec.ws_url.rstrip("/") + "/ws"
        while True:
            try:
                async with connect(
                    url,
                    max_size=2**24,
                    open_timeout=10,
                    ping_interval=20,
                    ping_timeout=60,
                    close_timeout=2,
                    compression=None,
                ) as ws:
                    attempt = 0
                    self.connects += 1
                    if self._on_connected is not None:
                        self._on_connected()
                    await self._serve(ws)
            except (OSError, TimeoutError, websockets.WebSocketException) as exc:
                log.warning("%s: connection lost (%s)", self.name, type(exc).__name__)
            finally:
                self._acked.clear()
                for route in list(self._routes.values()):
                    route.on_disconnect()
            await asyncio.sleep(self._backoff.compute(attempt))
            attempt += 1

    async def _serve(self, ws: ClientConnection) -> None:
        sender = asyncio.get_running_loop().create_task(self._send_subscriptions(ws))
        self._changed.set()
        try:
            async for raw in ws:
                try:
                    frame = self._parse(raw, now_ms())
                except VenuePayloadError as exc:
                    # A lost depth event shows up as a gap in the update ids of its book.
                    log.warning("%s: unreadable frame skipped: %s", self.name, exc)
                    continue
                if isinstance(frame, DepthUpdate):
                    route = self._routes.get(frame.symbol)
                    if route is not None:
                        route.on_update(frame)
                elif isinstance(frame, ServerShutdown):
                    log.info("%s: venue announced shutdown; reconnecting", self.name)
                    return
                elif isinstance(frame, VenueErrorFrame):
                    log.warning("%s: venue error %s: %s", self.name, frame.code, frame.msg)
        finally:
            sender.cancel()
            await asyncio.gather(sender, return_exceptions=True)

    async def _send_subscriptions(self, ws: ClientConnection) -> None:
        """Turn the difference between wanted and acknowledged streams into paced batches."""
        pause = 1.0 / max(1, self.spec.control_messages_per_s - 1)  # leave room for pongs
        while True:
            await self._changed.wait()
            self._changed.clear()
            wanted = {self.spec.stream_name(symbol) for symbol in self._routes}
            for method, streams in (
                ("UNSUBSCRIBE", self._acked - wanted),
                ("SUBSCRIBE", wanted - self._acked),
            ):
                ordered = sorted(streams)
                for start in range(0, len(ordered), SUBSCRIBE_BATCH):
                    batch = ordered[start : start + SUBSCRIBE_BATCH]
                    await ws.send(
                        orjson.dumps({"method": method, "params": batch, "id": self._next_id}).decode()
                    )
                    self._next_id += 1
                    if method == "SUBSCRIBE":
                        self._acked.update(batch)
                    else:
                        self._acked.difference_update(batch)
                    await asyncio.sleep(pause)
