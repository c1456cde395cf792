"""OKX's public WebSocket (``/ws/v5/public``, channel ``books``) behind the venue boundary.

Books are added with ``{"id":"7","op":"subscribe","args":[{"channel":"books","instId":"BTC-USDT"},
...]}``; the venue answers every channel of a request with an ``event`` frame carrying the
request's ``id`` (``subscribe``, ``unsubscribe``, or ``error`` with a code), and pushes a snapshot
of the book before its updates. A ``notice`` with code 64008 says the connection will soon close
for a service upgrade: its books are handed over to a new connection. The connection sends the
text ``ping`` when nothing was heard for a while (the venue cuts connections silent for 30 s) and
spends at most 480 requests an hour (see ``limits``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import orjson

from ingest_nodes.core.events import DepthUpdate
from ingest_nodes.venues.okx import limits
from ingest_nodes.venues.okx.parse import parse_okx_frame
from ingest_nodes.venues.okx.schemas import OkxEvent
from ingest_nodes.venues.stream import Acked, Rejected, ShutdownNotice, StreamEvent

PUBLIC_PATH: Final = "/ws/v5/public"
SERVICE_UPGRADE: Final = 64008
"""The ``notice`` code of a connection that will soon be closed for a service upgrade."""


class OkxStream:
    """One connection's view of OKX's public stream (``ws_url``: its base, without the path)."""

    sequenced = True
    handshake = False
    control_messages_per_s = limits.CONTROL_MESSAGES_PER_S
    keepalive = (limits.KEEPALIVE_S, "ping")
    requests_per_hour: int | None = limits.REQUESTS_PER_HOUR
    topics_per_request: int | None = None

    def __init__(self, ws_url: str) -> None:
        self.url = ws_url.rstrip("/") + PUBLIC_PATH

    def topic(self, symbol: str, depth: int) -> str:
        """The ``books`` channel of an instrument is named by its instId alone (400 levels a side)."""
        return symbol

    def opening(self) -> list[str]:
        return []

    def requests(self, subscribe: bool, topics: Sequence[str], request_id: int) -> list[str]:
        args = [{"channel": limits.BOOKS_CHANNEL, "instId": topic} for topic in topics]
        op = "subscribe" if subscribe else "unsubscribe"
        return [orjson.dumps({"id": str(request_id), "op": op, "args": args}).decode()]

    def read(self, raw: str | bytes, ingest_time: int) -> Sequence[StreamEvent]:
        events: list[StreamEvent] = []
        for item in parse_okx_frame(raw, ingest_time):
            if type(item) is DepthUpdate:
                events.append(item)
            elif isinstance(item, OkxEvent):
                request_id = int(item.request_id) if item.request_id and item.request_id.isdigit() else None
                if item.event in ("subscribe", "unsubscribe"):
                    events.append(Acked(request_id))
                elif item.event == "error":
                    events.append(Rejected(request_id, item.code, item.msg))
                elif item.event == "notice" and item.code == SERVICE_UPGRADE:
                    events.append(ShutdownNotice())
        return events
