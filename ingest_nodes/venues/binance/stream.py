"""Binance's combined-stream protocol (spot and USD-M/COIN-M futures) behind the venue boundary.

Streams are added with ``SUBSCRIBE`` after connecting, in batches, under the venue's
incoming-message limit (5 a second on spot, 10 on futures); every frame comes wrapped as
``{"stream": ..., "data": ...}``, ``serverShutdown`` included. Acks and errors name the request id.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import orjson

from ingest_nodes.core.events import DepthUpdate
from ingest_nodes.venues.binance import limits
from ingest_nodes.venues.binance.parse import parse_futures_frame, parse_spot_frame
from ingest_nodes.venues.binance.schemas import ServerShutdown, SubscribeAck, VenueErrorFrame
from ingest_nodes.venues.stream import Acked, Rejected, ShutdownNotice, StreamEvent

STREAM_PATH: Final = "/stream"
_SHUTDOWN: Final = (ShutdownNotice(),)


class BinanceStream:
    """One Binance spot or futures market's stream protocol (``ws_url``: its WebSocket base)."""

    sequenced = True
    handshake = False
    keepalive = None  # the venue pings; the client library answers
    requests_per_hour = None
    topics_per_request = None

    def __init__(self, ws_url: str, *, futures: bool) -> None:
        self.url = ws_url.rstrip("/") + STREAM_PATH
        self.control_messages_per_s = (
            limits.FUTURES_CONTROL_MESSAGES_PER_S if futures else limits.SPOT_CONTROL_MESSAGES_PER_S
        )
        self._parse = parse_futures_frame if futures else parse_spot_frame

    def topic(self, symbol: str, depth: int) -> str:
        """The diff-depth stream of a market (lower case, 100 ms cadence); depth comes from snapshots."""
        return f"{symbol.lower()}@depth@100ms"

    def opening(self) -> list[str]:
        return []

    def requests(self, subscribe: bool, topics: Sequence[str], request_id: int) -> list[str]:
        method = "SUBSCRIBE" if subscribe else "UNSUBSCRIBE"
        return [orjson.dumps({"method": method, "params": list(topics), "id": request_id}).decode()]

    def read(self, raw: str | bytes, ingest_time: int) -> Sequence[StreamEvent]:
        frame = self._parse(raw, ingest_time)
        if type(frame) is DepthUpdate:
            return (frame,)
        if isinstance(frame, SubscribeAck):
            return (Acked(frame.id if isinstance(frame.id, int) else None),)
        if isinstance(frame, VenueErrorFrame):
            return (Rejected(frame.id if isinstance(frame.id, int) else None, frame.code, frame.msg),)
        if isinstance(frame, ServerShutdown):
            return _SHUTDOWN
        return ()
